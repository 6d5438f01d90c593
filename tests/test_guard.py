from pathlib import Path

from kernelseek.harness import guard
from kernelseek.harness.build import BuildError, build_kernel

FIXTURES = Path(__file__).parent / "fixtures"


def test_guard_rejects_cutlass_with_the_line_and_ignores_comments():
    violations = guard.check_source(FIXTURES / "includes_cutlass.cu")
    assert len(violations) == 1
    assert violations[0].where.endswith("includes_cutlass.cu:4")
    assert "cutlass" in str(violations[0])


def test_guard_rejects_local_headers_and_named_libraries(tmp_path):
    source = tmp_path / "k.cu"
    source.write_text('#include "helper.h"\n#include <cuda_bf16.h>\nvoid* h = dlopen("libcublas.so", 0);\n'
                      '#include <cudnn.h>\n#include <thrust/sort.h>\n#include <cuda/barrier>\n')
    reasons = [v.why for v in guard.check_source(source)]
    assert len(reasons) == 4, reasons
    assert any("local header" in r for r in reasons)
    assert any("library other than" in r for r in reasons)


def test_guard_allows_toolkit_headers(tmp_path):
    source = tmp_path / "k.cu"
    source.write_text("#include <cuda_runtime.h>\n#include <cuda_bf16.h>\n#include <cudaTypedefs.h>\n"
                      "#include <cooperative_groups.h>\n#include <cuda/pipeline>\n#include <mma.h>\n")
    assert guard.check_source(source) == []


def test_build_refuses_a_guarded_file_before_compiling():
    try:
        build_kernel(FIXTURES / "includes_cutlass.cu", "sm90")
    except BuildError as error:
        assert "guard" in str(error) and "includes_cutlass.cu:4" in str(error)
    else:
        raise AssertionError("the guard let CUTLASS through")


def test_library_guard_rejects_a_linked_library(tmp_path):
    import subprocess

    source = tmp_path / "k.cpp"
    source.write_text('#include <zlib.h>\nextern "C" int f() { return (int)zlibVersion()[0]; }\n')
    lib = tmp_path / "k.so"
    built = subprocess.run(["c++", "-shared", "-fPIC", "-o", str(lib), str(source), "-lz"], capture_output=True)
    if built.returncode != 0:
        import pytest

        pytest.skip("zlib headers are not installed here")
    assert [v.text for v in guard.check_library(lib)] == ["libz.so.1"]
