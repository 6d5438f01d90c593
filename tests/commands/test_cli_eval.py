import subprocess
import sys

import pytest
from conftest import HAS_GPU, HAS_NVCC


def kernelseek(*args):
    return subprocess.run([sys.executable, "-m", "kernelseek", *args], capture_output=True, text=True, timeout=600)


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU message")
def test_eval_without_a_gpu_says_so_in_one_sentence():
    result = kernelseek("eval", "kernels/seeds/flash_attn_fwd.cu", "--arch", "sm90")
    assert result.returncode == 2
    assert "no usable CUDA GPU" in result.stderr and "--compile-only" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.slow
def test_bad_input_gets_one_sentence():
    result = kernelseek("eval", "no/such/kernel.cu")
    assert result.returncode == 2 and "no such kernel file" in result.stderr
    result = kernelseek("eval", "kernels/seeds/rmsnorm_cpu.cpp", "--arch", "sm42")
    assert result.returncode == 2 and "not a target" in result.stderr
    result = kernelseek("eval", "kernels/seeds/rmsnorm_cpu.cpp", "--arch", "sm90", "--task", "rmsnorm_cpu")
    assert result.returncode == 2 and "has no sm90 suite" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.slow
def test_eval_cpu_task_end_to_end(tmp_path):
    out = tmp_path / "r.json"
    # no --arch: a command defaults to its task's first arch (cpu here), as the README's examples assume
    result = kernelseek("eval", "kernels/seeds/rmsnorm_cpu.cpp", "--quick", "--out", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "CORRECT" in result.stdout and out.is_file()
    result = kernelseek("scenarios", "rmsnorm_cpu")
    assert result.returncode == 0 and "rows64_cols1024" in result.stdout, result.stderr


@pytest.mark.skipif(not HAS_NVCC, reason="needs nvcc")
@pytest.mark.parametrize("kernel", ["kernels/seeds/flash_attn_fwd.cu", "kernels/hopper/flash_attn_fwd/flash_attn_fwd.cu",
                                    "kernels/seeds/add_rmsnorm.cu", "kernels/hopper/add_rmsnorm/add_rmsnorm.cu"])
@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm90", "sm100"])
def test_compile_only_builds_and_reports_resources(kernel, arch):
    if kernel == "kernels/hopper/flash_attn_fwd/flash_attn_fwd.cu" and arch != "sm90":
        pytest.skip("the Hopper flash kernel targets sm_90a only (wgmma, TMA)")
    result = kernelseek("eval", kernel, "--arch", arch, "--compile-only")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "guard passed" in result.stdout and "spills: 0 bytes" in result.stdout
    assert "potential performance loss" not in result.stdout, result.stdout  # e.g. ptxas serialising wgmma
