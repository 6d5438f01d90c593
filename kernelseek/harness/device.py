"""The device probe: whether this machine has the GPU a target's kernels run on. The judge, the sanitizer
gate and the checks before a run (kernelseek/preflight.py) ask it; it imports torch only when asked."""

from __future__ import annotations

GPU_CAPABILITY = {"sm90": (9,), "sm100": (10,)}  # a target's compute capability majors


def gpu_problem(arch: str) -> str | None:
    """Why this machine cannot run `arch` kernels, or None (a target that is not a GPU's always can)."""
    if arch not in GPU_CAPABILITY:
        return None
    import torch

    if not torch.cuda.is_available():
        return (f"this machine has no usable CUDA GPU, so {arch} kernels cannot be run here; "
                "use --compile-only to build and check the kernel without one")
    major = torch.cuda.get_device_capability(0)[0]
    if major not in GPU_CAPABILITY[arch]:
        name = torch.cuda.get_device_name(0)
        return f"the GPU here ({name}, compute capability {major}.x) is not an {arch} GPU; judge it on one that is"
    return None
