"""A kernel written for another architecture: `--compile-only` (and any build) answers in one sentence naming
what the target lacks and where the kernel does build, instead of a page of ptxas errors."""

from pathlib import Path

import pytest
from conftest import HAS_NVCC

from kernelseek.harness.build import BuildError, _wrong_target, build_kernel

# the kind of code a Hopper-only kernel holds: warpgroup MMA fences exist on sm_90a and on no later target
HOPPER_ONLY = """
extern "C" __global__ void fence_only() { asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory"); }
extern "C" int entry() { fence_only<<<1, 128>>>(); return 0; }
"""


def test_ptxas_lines_about_a_missing_instruction_become_one_sentence():
    log = "\n".join(
        f"ptxas /tmp/x.ptx, line {n}; error   : Instruction '{name}' not supported on .target 'sm_100a'\n"
        f"ptxas /tmp/x.ptx, line {n}; error   : Instruction '{name}' cannot be compiled for architecture 'sm_100a'"
        for n, name in enumerate(["wgmma.fence", "wgmma.mma_async with floating point types", "wgmma.fence"]))
    message = _wrong_target(log, Path("k.cu"), "sm100")
    assert message is not None and "\n" not in message
    assert "(wgmma.fence, wgmma.mma_async)" in message and "build it for sm90" in message


def test_other_compiler_errors_are_left_as_they_are():
    assert _wrong_target("k.cu(3): error: identifier \"x\" is undefined", Path("k.cu"), "sm100") is None


@pytest.mark.skipif(not HAS_NVCC, reason="needs nvcc")
def test_a_hopper_only_kernel_built_for_sm100_is_refused_in_one_sentence(tmp_path):
    kernel = tmp_path / "hopper_only.cu"
    kernel.write_text(HOPPER_ONLY)
    with pytest.raises(BuildError) as error:
        build_kernel(kernel, "sm100", cache_dir=tmp_path / "cache")
    message = str(error.value)
    assert "\n" not in message and "wgmma.fence" in message and "sm90" in message, message
    assert build_kernel(kernel, "sm90", cache_dir=tmp_path / "cache").library  # it does build where it belongs
