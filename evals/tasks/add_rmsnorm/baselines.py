"""Baselines of add_rmsnorm: the PyTorch reference compiled with torch.compile (the headline on both
architectures: the strongest implementation anyone has without writing a kernel) and the same
reference run eagerly, beside it.

The reference is what a model's code computes: h = x + residual rounded to bf16 (the stored residual),
then the RMS of h in float32, out = h * rsqrt(mean(h^2) + eps) * weight rounded to bf16. In place, both
first copy the residual into a new buffer, as the candidate's call does.
"""

from __future__ import annotations

import torch

from kernelseek.harness.task import Baseline, Scenario


def _add_rmsnorm(x, residual, weight, eps: float):
    h = (x.float() + residual.float()).to(torch.bfloat16)
    hf = h.float()
    out = hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()
    return out.to(torch.bfloat16), h


def _rmsnorm(x, weight, eps: float):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)


def _runner(add_rmsnorm, rmsnorm):
    def run(scenario: Scenario, inputs: dict) -> dict:
        kind = scenario.params["residual"]
        with torch.no_grad():
            if kind == "none":
                return {"out": rmsnorm(inputs["x"], inputs["weight"], inputs["eps"])}
            residual = inputs["residual"].clone() if kind == "inplace" else inputs["residual"]
            out, h = add_rmsnorm(inputs["x"], residual, inputs["weight"], inputs["eps"])
        return {"out": out, "residual_out": h}

    return run


reference_bf16 = _runner(_add_rmsnorm, _rmsnorm)


def torch_compile() -> Baseline:
    if not torch.cuda.is_available():
        return Baseline("torch_compile", lambda s, i: {}, unavailable="torch.compile's GPU code needs a CUDA GPU here")
    import torch._dynamo as dynamo

    # one specialised compilation per shape (dynamic=False), as a model with fixed shapes gets; the
    # default limit of 8 would fall back to eager after the eighth scenario
    for knob in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit", "accumulated_cache_size_limit"):
        if hasattr(dynamo.config, knob):
            setattr(dynamo.config, knob, 4096)
    run = _runner(torch.compile(_add_rmsnorm, dynamic=False), torch.compile(_rmsnorm, dynamic=False))
    return Baseline("torch_compile", run, info={"torch": torch.__version__, "mode": "default, dynamic=False",
                                                 "triton": _version("triton")})


def eager() -> Baseline:
    if not torch.cuda.is_available():
        return Baseline("eager", lambda s, i: {}, unavailable="the eager PyTorch baseline is timed on a CUDA GPU")
    return Baseline("eager", reference_bf16, info={"torch": torch.__version__})


def _version(module: str) -> str | None:
    try:
        return __import__(module).__version__
    except Exception:  # noqa: BLE001 - only reported
        return None


def for_arch(arch: str) -> list[Baseline]:
    if arch in ("sm90", "sm100"):
        return [torch_compile(), eager()]
    return []
