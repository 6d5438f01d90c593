"""The dependency guard: includes from the preprocessor's view, the object's imports, the library's links.

Every fixture is built for the CPU target (c++) and, where nvcc exists, for sm90 (compile only, no GPU).
"""

import platform
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HAS_NVCC

from kernelseek.harness import guard, load_task
from kernelseek.harness.build import TARGETS, BuildError, build_kernel

FIXTURES = Path(__file__).parents[1] / "fixtures"
ARCHS = ["cpu", pytest.param("sm90", marks=pytest.mark.skipif(not HAS_NVCC, reason="needs nvcc"))]
needs_nvcc = pytest.mark.skipif(not HAS_NVCC, reason="needs nvcc")
# nvcc takes seconds to link a library and a fraction of one to preprocess a file: the sm90 cases of tests that
# link, and of include tests whose nvcc path another quick test already takes, are in the full suite only
ARCHS_SLOW_NVCC = ["cpu", pytest.param("sm90", marks=[needs_nvcc, pytest.mark.slow])]


def write(folder: Path, arch: str, text: str, name: str = "k") -> Path:
    path = folder / f"{name}{TARGETS[arch]['suffix']}"
    path.write_text(text)
    return path


# The libraries a kernel may not use are the task's: these fixtures are guarded as flash_attn_fwd's judge
# guards its candidates (for either target; the list does not depend on it).
FORBIDDEN = load_task("flash_attn_fwd").forbidden_libraries


def refused(path: Path, arch: str, **kwargs) -> str:
    kwargs.setdefault("forbidden_libraries", FORBIDDEN)
    with pytest.raises(BuildError) as error:
        build_kernel(path, arch, **kwargs)
    return str(error.value)


# --- what the host code may call -------------------------------------------------------------------

@pytest.mark.parametrize("arch", ARCHS)
def test_a_launcher_calling_the_python_c_api_is_refused(tmp_path, arch):
    path = write(tmp_path, arch, 'extern "C" int PyRun_SimpleString(const char*);\n'
                 'extern "C" int ks_entry() { return PyRun_SimpleString("import os"); }\n')
    message = refused(path, arch)
    assert message.startswith("guard: ") and f"{path}: the host code uses PyRun_SimpleString" in message
    assert "Python interpreter" in message


@pytest.mark.parametrize("arch", ARCHS_SLOW_NVCC)
def test_a_runtime_dlopen_with_an_assembled_name_is_refused(tmp_path, arch):
    path = write(tmp_path, arch, """
extern "C" void* dlopen(const char*, int);
extern "C" void* dlsym(void*, const char*);
extern "C" int ks_entry() {
    char name[16];  // "libcublas.so", never written as one string
    const char parts[] = {'l', 'i', 'b', 'c', 'u', 'b', 'l', 'a', 's', '.', 's', 'o', 0};
    for (int i = 0; i < 13; ++i) name[i] = parts[i];
    void* lib = dlopen(name, 2);
    return lib && dlsym(lib, "cublasCreate_v2") ? 0 : 1;
}
""")
    message = refused(path, arch)
    assert "uses dlopen" in message and "uses dlsym" in message and "loading libraries" in message


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("how", ["fopen", "open"])
def test_a_proc_self_mem_writer_is_refused(tmp_path, arch, how):
    body = {"fopen": '#include <cstdio>\nextern "C" int ks_entry() { std::FILE* f = std::fopen("/proc/self/mem", '
                     '"r+"); return f ? 0 : 1; }\n',
            "open": 'extern "C" int open(const char*, int, ...);\nextern "C" long write(int, const void*, '
                    'unsigned long);\nextern "C" int ks_entry() { int fd = open("/proc/self/mem", 2); '
                    'return (int)write(fd, "x", 1); }\n'}[how]
    message = refused(write(tmp_path, arch, body), arch)
    assert f"uses {how}" in message and "opening files" in message


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64 inline assembly")
@pytest.mark.parametrize("arch", ARCHS)
def test_a_raw_syscall_in_inline_assembly_is_refused(tmp_path, arch):
    path = write(tmp_path, arch, 'extern "C" long ks_entry() {\n  long r;\n'
                 '  asm volatile("syscall" : "=a"(r) : "a"(39L) : "rcx", "r11", "memory");\n  return r;\n}\n')
    message = refused(path, arch)
    assert "raw system call (syscall in ks_entry)" in message


@pytest.mark.parametrize("arch", ARCHS)
def test_getenv_is_refused(tmp_path, arch):
    path = write(tmp_path, arch, '#include <cstdlib>\nextern "C" int ks_entry() { return std::getenv("HOME") != 0; }\n')
    assert "uses getenv (the environment is off limits" in refused(path, arch)


@pytest.mark.parametrize("arch", ARCHS)
def test_ordinary_runtime_use_passes(tmp_path, arch):
    path = write(tmp_path, arch, """
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>
#include <stdexcept>
static std::vector<float> scratch;
extern "C" int ks_entry(float* y, int n) {
    if (n < 0) throw std::runtime_error("negative size");
    scratch.resize(n);
    std::memset(scratch.data(), 0, n * sizeof(float));
    for (int i = 0; i < n; ++i) y[i] = std::sqrt((float)i) + std::exp(scratch[i]);
    if (n == 7) std::fprintf(stderr, "seven: %d\\n", n);
    return 0;
}
""")
    built = build_kernel(path, arch, entry_point="ks_entry")
    assert Path(built.library).is_file()


def test_the_allowlist_in_symbols():
    for name in ("cudaMalloc", "cuTensorMapEncodeTiled", "__cudaRegisterFunction", "__cudaPushCallConfiguration",
                 "_Znwm", "_ZdlPvm", "_ZSt20__throw_length_errorPKc", "__memcpy_chk", "sqrtf", "expf",
                 "_ZGVdN8v_expf", "__gxx_personality_v0", "stderr"):
        assert guard.allowed_import(name), name
    for name in ("dlopen", "dlsym", "PyRun_SimpleString", "_Py_Dealloc", "fopen", "open", "mmap", "mprotect",
                 "syscall", "system", "fork", "execve", "posix_spawn", "getenv", "__open_2", "__read_chk",
                 "cublasCreate_v2", "cudnnCreate", "pthread_create", "cuModuleLoad", "cuLibraryLoadFromFile",
                 "cudaLibraryLoadFromFile", "cuLinkAddFile_v2"):
        assert not guard.allowed_import(name), name
    assert guard.allowed_import("cuModuleLoadData")  # the kernel's own code, from memory


# --- includes, from the preprocessor's view ------------------------------------------------------------

def fake_library(tmp_path: Path, monkeypatch, relative: str) -> Path:
    """An installed-looking header tree, on the compiler's search path through CPATH."""
    root = tmp_path / "include"
    header = root / relative
    header.parent.mkdir(parents=True)
    header.write_text("#pragma once\nstatic const int fake_library_version = 1;\n")
    monkeypatch.setenv("CPATH", str(root))
    return header


@pytest.mark.parametrize("arch", ARCHS)
def test_a_macro_include_of_a_forbidden_header_is_refused_by_the_guard(tmp_path, monkeypatch, arch):
    header = fake_library(tmp_path, monkeypatch, "cutlass/cutlass.h")
    path = write(tmp_path, arch, '#define HEADER <cutlass/cutlass.h>\n#include HEADER\n'
                 'extern "C" int ks_entry() { return fake_library_version; }\n')
    message = refused(path, arch)
    assert message.startswith("guard: ") and "compilation failed" not in message
    assert f"{path}:2: includes through a macro (HEADER)" in message
    assert f"{path}:2: pulls in {header} (CUTLASS is not allowed)" in message


@pytest.mark.parametrize("arch", ARCHS_SLOW_NVCC)
def test_an_installed_forbidden_header_is_refused_with_the_line_that_pulled_it_in(tmp_path, monkeypatch, arch):
    header = fake_library(tmp_path, monkeypatch, "cute/tensor.hpp")
    path = write(tmp_path, arch, '#include <cmath>\n\n#include <cute/tensor.hpp>\nextern "C" int ks_entry() '
                 '{ return fake_library_version; }\n')
    assert refused(path, arch) == f"guard: {path}:3: pulls in {header} (CuTe is not allowed)"


@pytest.mark.parametrize("arch", ARCHS_SLOW_NVCC)
def test_a_header_from_outside_the_toolkit_and_the_system_is_refused(tmp_path, monkeypatch, arch):
    header = fake_library(tmp_path, monkeypatch, "helpers/fast_exp.h")
    path = write(tmp_path, arch, '#include <helpers/fast_exp.h>\nextern "C" int ks_entry() { return 0; }\n')
    message = refused(path, arch)
    assert f"{path}:1: pulls in {header} (only the CUDA toolkit's and the system's C/C++ headers" in message


@needs_nvcc
def test_thrust_is_refused_although_the_toolkit_ships_it(tmp_path):
    path = write(tmp_path, "sm90", '#include <cuda_runtime.h>\n#include <thrust/version.h>\n'
                 'extern "C" int ks_entry() { return THRUST_VERSION; }\n')
    message = refused(path, "sm90")
    assert f"{path}:2: pulls in " in message and "thrust/version.h (Thrust is not allowed)" in message


@pytest.mark.parametrize("arch", ARCHS)
def test_a_forbidden_header_that_is_not_installed_is_refused_by_name(tmp_path, arch):
    path = write(tmp_path, arch, '#include <cmath>\n\n\n#include <cutlass/cutlass.h>\nextern "C" int ks_entry();\n')
    assert refused(path, arch) == f"guard: {path}:4: includes cutlass/cutlass.h (CUTLASS is not allowed)"
    if arch == "sm90":  # the fixture the GPU judge test uses
        fixture = FIXTURES / "includes_cutlass.cu"
        assert refused(fixture, arch) == f"guard: {fixture}:4: includes cutlass/cutlass.h (CUTLASS is not allowed)"


@pytest.mark.parametrize("arch", ARCHS_SLOW_NVCC)
def test_an_absolute_or_local_include_is_refused(tmp_path, arch):
    (tmp_path / "helper.h").write_text("static const int helper = 1;\n")
    path = write(tmp_path, arch, '#include </usr/include/stdint.h>\n#include "helper.h"\n'
                 'extern "C" int ks_entry() { return helper; }\n')
    message = refused(path, arch)
    assert f"{path}:1: includes the absolute path </usr/include/stdint.h>" in message
    assert f"{path}:2: includes the local file \"helper.h\"; a kernel is one self-contained file" in message


@pytest.mark.parametrize("arch", ARCHS)
def test_comments_that_name_cutlass_pass(tmp_path, arch):
    path = write(tmp_path, arch, '// CUTLASS would do this with #include <cutlass/gemm/device/gemm.h>\n'
                 '/* #include "local.h" and cute::Tensor are only words here */\n'
                 'static const char* why = "no libcublas.so is loaded";\n'
                 'static const char* note = "see // cutlass and /* cublas";\n'
                 'extern "C" int ks_entry() { return note[0] + why[0]; }\n')
    assert Path(build_kernel(path, arch, forbidden_libraries=FORBIDDEN).library).is_file()


@pytest.mark.slow
@needs_nvcc
def test_the_toolkit_headers_a_kernel_uses_pass(tmp_path):
    path = write(tmp_path, "sm90", "#include <cuda_runtime.h>\n#include <cuda_bf16.h>\n#include <cudaTypedefs.h>\n"
                 "#include <cooperative_groups.h>\n#include <cuda/pipeline>\n#include <mma.h>\n"
                 'extern "C" int ks_entry() { return 0; }\n')
    build_kernel(path, "sm90", entry_point="ks_entry")


def test_opened_headers_maps_each_header_to_the_candidates_line():
    preprocessed = "\n".join([
        '# 0 "/t/k.cu"', '# 0 "<built-in>"', '# 0 "<command-line>"', '# 1 "/usr/include/stdc-predef.h" 1 3 4',
        '# 0 "<command-line>" 2', '# 1 "/t/k.cu"', "int a;", '# 1 "/x/a.h" 1', '# 1 "/x/b\\"q.h" 1',
        '# 2 "/x/a.h" 2', '# 3 "/t/k.cu" 2', "int b;", '# 1 "/x/c.h" 1', '# 5 "/t/k.cu" 2'])
    assert guard.opened_headers(preprocessed, "/t/k.cu") == {
        "/usr/include/stdc-predef.h": None, "/x/a.h": 2, '/x/b"q.h': 2, "/x/c.h": 4}


# --- the entry point, size, bytes -----------------------------------------------------------------------

@pytest.mark.parametrize("arch", ARCHS)
def test_a_missing_entry_point_is_named_after_the_build(tmp_path, arch):
    path = write(tmp_path, arch, 'int ks_rmsnorm() { return 0; }\nextern "C" int ks_other() { return 1; }\n')
    message = refused(path, arch, entry_point="ks_rmsnorm")
    assert message == (f"{path}: the library does not export ks_rmsnorm (the task's entry point); "
                       'define it as extern "C".')
    build_kernel(path, arch, entry_point="ks_other")
    assert refused(path, arch, entry_point="ks_rmsnorm") == message  # on a cache hit too


@pytest.mark.parametrize("arch", ARCHS)
def test_a_candidate_over_4_mb_is_refused_before_anything_runs(tmp_path, arch, monkeypatch):
    path = write(tmp_path, arch, 'extern "C" int ks_entry() { return 0; }\n' + "// padding\n" * 500_000)
    monkeypatch.setattr(subprocess, "run", None)  # nothing may be compiled or preprocessed
    assert refused(path, arch) == (f"{path}: the file is over 4 MB; a kernel is one hand-written source file, "
                                   "keep it under that.")


@pytest.mark.parametrize("arch", ARCHS)
def test_a_non_utf8_byte_gives_a_normal_verdict(tmp_path, arch):
    good = tmp_path / f"good{TARGETS[arch]['suffix']}"
    good.write_bytes(b'// caf\xe9 \xff\nextern "C" int ks_entry() { return 0; }\n')
    build_kernel(good, arch, entry_point="ks_entry")
    bad = tmp_path / f"bad{TARGETS[arch]['suffix']}"
    bad.write_bytes(b'extern "C" int ks_entry() { return \xff\xfe; }\n')
    assert "compilation failed" in refused(bad, arch)


# --- the library, the CLI, the shipped kernels ---------------------------------------------------------

def test_library_guard_rejects_a_linked_library(tmp_path):
    source = tmp_path / "k.cpp"
    source.write_text('#include <zlib.h>\nextern "C" int f() { return (int)zlibVersion()[0]; }\n')
    lib = tmp_path / "k.so"
    built = subprocess.run(["c++", "-shared", "-fPIC", "-o", str(lib), str(source), "-lz"], capture_output=True)
    if built.returncode != 0:
        pytest.skip("zlib headers are not installed here")
    assert [v.subject for v in guard.check_library(lib)] == ["libz.so.1"]


def kernelseek(*args):
    return subprocess.run([sys.executable, "-m", "kernelseek", *args], capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_compile_only_checks_the_tasks_arch_and_entry_point(tmp_path):
    result = kernelseek("eval", "kernels/seeds/rmsnorm_cpu.cpp", "--arch", "sm90", "--task", "rmsnorm_cpu",
                        "--compile-only")
    assert result.returncode == 2 and "has no sm90 suite" in result.stderr and "guard passed" not in result.stdout
    path = write(tmp_path, "cpu", 'extern "C" int ks_other() { return 0; }\n')
    result = kernelseek("eval", str(path), "--arch", "cpu", "--task", "rmsnorm_cpu", "--compile-only")
    assert result.returncode == 2 and "does not export ks_rmsnorm" in " ".join(result.stderr.split())
    assert "Traceback" not in result.stdout + result.stderr


SHIPPED = [("kernels/seeds/rmsnorm_cpu.cpp", "cpu", "ks_rmsnorm"),
           *[(str(p.relative_to(FIXTURES.parents[1])), "cpu", "ks_rmsnorm") for p in sorted((FIXTURES / "loop").glob("*.cpp"))],
           pytest.param("kernels/seeds/flash_attn_fwd.cu", "sm90", "ks_flash_attn_fwd", marks=needs_nvcc),
           pytest.param("kernels/seeds/flash_attn_fwd.cu", "sm100", "ks_flash_attn_fwd", marks=needs_nvcc),
           pytest.param("kernels/hopper/flash_attn_fwd/flash_attn_fwd.cu", "sm90", "ks_flash_attn_fwd",
                        marks=[needs_nvcc, pytest.mark.slow]),
           *[pytest.param(k, a, "ks_add_rmsnorm", marks=needs_nvcc)
             for k in ("kernels/seeds/add_rmsnorm.cu", "kernels/hopper/add_rmsnorm/add_rmsnorm.cu") for a in ("sm90", "sm100")]]


@pytest.mark.slow
@pytest.mark.parametrize(("kernel", "arch", "entry_point"), SHIPPED)
def test_the_shipped_kernels_pass_the_full_guard(kernel, arch, entry_point):
    task = load_task({"ks_rmsnorm": "rmsnorm_cpu", "ks_flash_attn_fwd": "flash_attn_fwd",
                      "ks_add_rmsnorm": "add_rmsnorm"}[entry_point])
    built = build_kernel(FIXTURES.parents[1] / kernel, arch, entry_point=entry_point,
                         forbidden_libraries=task.forbidden_libraries)
    assert guard.check_object(Path(built.library).with_name("kernel.o"), kernel) == []
    assert guard.check_library(built.library) == [] and built.spills == 0
