"""Baseline adapters: FA3 (Hopper's headline), FA4 (Blackwell's), and cuDNN and FA2 through torch SDPA.

Each adapter is a `Baseline` whose `unavailable` says in one sentence why it cannot run here. A
baseline returns {"out", "lse"} in the task's layout; the SDPA ones return only "out" and run only
the scenarios SDPA expresses (no softcap, no varlen, causal only when seqlen_q == seqlen_k, since
SDPA aligns its causal mask top-left).
"""

from __future__ import annotations

import importlib

import torch

from kernelseek.harness.task import Baseline, Scenario


def _import_first(*names: str):
    errors = []
    for name in names:
        try:
            return importlib.import_module(name), None
        except Exception as error:  # noqa: BLE001 - an extension that fails to load is "unavailable" too
            errors.append(f"{name}: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}")
    return None, "; ".join(errors)


def fa3() -> Baseline:
    module, why = _import_first("flash_attn_interface", "fa3_fwd_interface")
    if module is None:
        return Baseline("fa3", lambda s, i: {}, unavailable=f"FlashAttention-3 is not installed ({why})")

    def run(scenario: Scenario, inputs: dict) -> dict:
        p = scenario.params
        common = dict(softmax_scale=inputs["scale"], causal=p["causal"], softcap=p["softcap"],
                      num_splits=0, return_attn_probs=True)  # num_splits=0: FA3 picks its own split (strongest)
        with torch.no_grad():
            if p["layout"] == "varlen":
                out, lse = module.flash_attn_varlen_func(inputs["q"], inputs["k"], inputs["v"], inputs["cu_q"],
                                                         inputs["cu_k"], p["seqlen_q"], p["seqlen_k"], **common)[:2]
            else:
                out, lse = module.flash_attn_func(inputs["q"], inputs["k"], inputs["v"], **common)[:2]
        return {"out": out, "lse": lse}  # [batch, heads, seqlen_q], or [heads, total_q]

    version = getattr(module, "__version__", None)
    return Baseline("fa3", run, info={"module": module.__name__, "version": version})


def fa4() -> Baseline:
    module, why = _import_first("flash_attn.cute")
    if module is None:
        return Baseline("fa4", lambda s, i: {}, unavailable=f"FlashAttention-4 is not installed ({why})")

    def run(scenario: Scenario, inputs: dict) -> dict:
        p = scenario.params
        common = dict(softmax_scale=inputs["scale"], causal=p["causal"], softcap=p["softcap"], return_lse=True)
        with torch.no_grad():
            if p["layout"] == "varlen":
                out, lse = module.flash_attn_varlen_func(inputs["q"], inputs["k"], inputs["v"],
                                                         cu_seqlens_q=inputs["cu_q"], cu_seqlens_k=inputs["cu_k"],
                                                         max_seqlen_q=p["seqlen_q"], max_seqlen_k=p["seqlen_k"],
                                                         **common)[:2]
            else:
                out, lse = module.flash_attn_func(inputs["q"], inputs["k"], inputs["v"], **common)[:2]
        return {"out": out, "lse": lse}

    return Baseline("fa4", run, info={"module": "flash_attn.cute", "version": getattr(module, "__version__", None)})


def sdpa_supports(scenario: Scenario) -> bool:
    p = scenario.params
    return (p["layout"] != "varlen" and p["softcap"] == 0 and p["heads_q"] == p["heads_kv"]
            and (not p["causal"] or p["seqlen_q"] == p["seqlen_k"]))


def sdpa(name: str, backend_name: str) -> Baseline:
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError as error:
        return Baseline(name, lambda s, i: {}, unavailable=f"torch SDPA backends are not available ({error})")
    backend = getattr(SDPBackend, backend_name)
    if not torch.cuda.is_available():
        return Baseline(name, lambda s, i: {}, unavailable=f"{name} through torch SDPA needs a CUDA GPU")

    def run(scenario: Scenario, inputs: dict) -> dict:
        q, k, v = (inputs[n].transpose(1, 2) for n in ("q", "k", "v"))
        with torch.no_grad(), sdpa_kernel([backend]):
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=scenario.params["causal"],
                                                                   scale=inputs["scale"])
        return {"out": out.transpose(1, 2)}

    return Baseline(name, run, supports=sdpa_supports,
                    info={"torch": torch.__version__, "backend": backend_name,
                          "supports": "no softcap, no varlen, equal heads, causal only when square"})


def for_arch(arch: str) -> list[Baseline]:
    if arch == "sm90":
        return [fa3(), sdpa("cudnn", "CUDNN_ATTENTION"), sdpa("fa2", "FLASH_ATTENTION")]
    if arch == "sm100":
        return [fa4(), sdpa("cudnn", "CUDNN_ATTENTION")]
    return []
