"""flash_attn_fwd: FlashAttention's forward pass in bf16, as a single-file CUDA kernel.

The entry point is declared in entry.h beside this file. The reference is float32 attention computed
in chunks; the tolerance is FlashAttention's own rule: the candidate's error against the float32
reference may be at most twice the baseline's error on the same inputs, plus a small absolute term.
"""

from __future__ import annotations

import ctypes
import math
from pathlib import Path

import torch

from kernelseek.harness.task import Scenario, Task

from . import baselines as baseline_adapters
from . import scenarios as suites

LL3 = ctypes.c_longlong * 3


class FlashAttnFwd(Task):
    name = "flash_attn_fwd"
    description = (Path(__file__).parent / "README.md").read_text() if (Path(__file__).parent / "README.md").exists() else ""
    entry_point = "ks_flash_attn_fwd"
    header = "entry.h"
    seed = "kernels/seeds/flash_attn_fwd.cu"
    archs = ("sm90", "sm100")
    headline_baseline = {"sm90": "fa3", "sm100": "fa4"}
    # libraries that would do a kernel's work for it, or hide it: refused by the guard, even from the toolkit
    forbidden_libraries = {"CUTLASS": r"cutlass.*", "CuTe": "cute", "cuBLAS": r"cublas.*", "cuDNN": r"cudnn.*",
                           "Thrust": "thrust"}
    compute_dtype = "bf16"  # its inputs and outputs are bf16; the compute floor is the bf16 tensor-core peak

    def scenarios(self, arch: str) -> list[Scenario]:
        return {"sm90": suites.sm90, "sm100": suites.sm100, "tiny": suites.tiny}[arch]()

    def sanitizer_scenarios(self, arch: str) -> list[Scenario]:
        """Tiny and small shapes of every feature and launch path: see scenarios.sanitize."""
        return suites.sanitize(arch)

    def holdout(self, arch: str, n: int, seed: int) -> list[Scenario]:
        """Random lengths, head dims, GQA ratios, masks, softcaps and layouts: see scenarios.py."""
        return suites.holdout(arch, n, seed)

    # --- inputs and outputs ----------------------------------------------------------------------
    def make_inputs(self, scenario, seed, device):
        p = scenario.params
        g = torch.Generator(device="cpu").manual_seed(seed)
        g_dev = torch.Generator(device=device).manual_seed(seed)  # drawn where they are used: fast on a GPU
        d, hq, hkv = p["head_dim"], p["heads_q"], p["heads_kv"]
        mag = p["magnitude"]

        def rand(*shape):
            scale = mag * float(torch.empty(1).uniform_(0.5, 1.5, generator=g))
            return (torch.randn(*shape, generator=g_dev, device=device) * scale).to(torch.bfloat16)

        inputs = {"scale": 1.0 / math.sqrt(d), "softcap": p["softcap"], "causal": p["causal"]}
        if p["layout"] == "varlen":
            lq, lk = p["seqlens_q"], p["seqlens_k"]
            inputs.update(q=rand(sum(lq), hq, d), k=rand(sum(lk), hkv, d), v=rand(sum(lk), hkv, d),
                          cu_q=torch.tensor([0, *torch.tensor(lq).cumsum(0).tolist()], dtype=torch.int32, device=device),
                          cu_k=torch.tensor([0, *torch.tensor(lk).cumsum(0).tolist()], dtype=torch.int32, device=device))
        elif p["layout"] == "packed_qkv":
            assert p["seqlen_q"] == p["seqlen_k"] and hq == hkv
            qkv = rand(p["batch"], p["seqlen_q"], 3, hq, d)
            inputs.update(q=qkv[:, :, 0], k=qkv[:, :, 1], v=qkv[:, :, 2], qkv=qkv)
        else:
            inputs.update(q=rand(p["batch"], p["seqlen_q"], hq, d), k=rand(p["batch"], p["seqlen_k"], hkv, d),
                          v=rand(p["batch"], p["seqlen_k"], hkv, d))
        return inputs

    def new_outputs(self, scenario, inputs, device):
        p, q = scenario.params, inputs["q"]
        out = torch.full(q.shape, float("nan"), dtype=torch.bfloat16, device=device)
        if p["layout"] == "varlen":
            lse = torch.full((p["heads_q"], q.shape[0]), float("nan"), dtype=torch.float32, device=device)
        else:
            lse = torch.full((p["batch"], p["heads_q"], p["seqlen_q"]), float("nan"), dtype=torch.float32, device=device)
        return {"out": out, "lse": lse}

    def bind(self, lib):
        fn = getattr(lib, self.entry_point)
        fn.restype = ctypes.c_int
        fn.argtypes = ([ctypes.c_void_p] * 7 + [ctypes.c_int] * 6 + [ctypes.POINTER(ctypes.c_longlong)] * 4
                       + [ctypes.c_float, ctypes.c_float, ctypes.c_int, ctypes.c_void_p])

        def strides(t: torch.Tensor) -> LL3:
            if t.dim() == 3:  # varlen: [total, heads, dim]; the batch stride is ignored
                return LL3(0, t.stride(0), t.stride(1))
            return LL3(t.stride(0), t.stride(1), t.stride(2))

        def call(scenario, inputs, outputs, stream):
            p = scenario.params
            q, k, v, out, lse = inputs["q"], inputs["k"], inputs["v"], outputs["out"], outputs["lse"]
            varlen = p["layout"] == "varlen"
            return fn(q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), lse.data_ptr(),
                      inputs["cu_q"].data_ptr() if varlen else None, inputs["cu_k"].data_ptr() if varlen else None,
                      p["batch"], p["seqlen_q"], p["seqlen_k"], p["heads_q"], p["heads_kv"], p["head_dim"],
                      strides(q), strides(k), strides(v), strides(out),
                      inputs["scale"], p["softcap"], int(p["causal"]), stream or None)

        return call

    # --- the reference and the tolerance ---------------------------------------------------------
    def sequences(self, scenario, inputs):
        """Yield (q, k, v, out_index, lse_index) per sequence: [s, h, d] views and where results go."""
        p = scenario.params
        q, k, v = inputs["q"], inputs["k"], inputs["v"]
        if p["layout"] == "varlen":
            cq, ck = inputs["cu_q"].tolist(), inputs["cu_k"].tolist()
            for b in range(p["batch"]):
                yield q[cq[b]:cq[b + 1]], k[ck[b]:ck[b + 1]], v[ck[b]:ck[b + 1]], (slice(cq[b], cq[b + 1]),), \
                    (slice(None), slice(cq[b], cq[b + 1]))
        else:
            for b in range(p["batch"]):
                yield q[b], k[b], v[b], (b,), (b,)

    def reference(self, scenario, inputs, *, low_precision: bool = False):
        p = scenario.params
        q = inputs["q"]
        out = torch.zeros(q.shape, dtype=torch.float32, device=q.device)
        lse_shape = (p["heads_q"], q.shape[0]) if p["layout"] == "varlen" else (p["batch"], p["heads_q"], p["seqlen_q"])
        lse = torch.full(lse_shape, float("-inf"), dtype=torch.float32, device=q.device)
        for qs, ks, vs, oi, li in self.sequences(scenario, inputs):
            o, l_ = attention(qs, ks, vs, inputs["scale"], p["softcap"], p["causal"], low_precision)
            out[oi] = o
            lse[li] = l_
        if low_precision:
            out = out.to(torch.bfloat16).float()
        return {"out": out, "lse": lse}

    def errors(self, scenario, outputs, reference):
        out = outputs["out"].float()
        ref_out, ref_lse, lse = reference["out"], reference["lse"], outputs["lse"].float()
        diff = (out - ref_out).abs().nan_to_num(nan=float("inf"))
        empty = torch.isneginf(ref_lse)
        lse_diff = (lse - ref_lse).abs().nan_to_num(nan=float("inf"))
        lse_diff = torch.where(empty, torch.where(torch.isneginf(lse), 0.0, float("inf")), lse_diff)
        finite_lse = ref_lse[~empty]
        return {"out_max": float(diff.max()) if diff.numel() else 0.0,
                "out_mean": float(diff.mean()) if diff.numel() else 0.0,
                "lse_max": float(lse_diff.max()) if lse_diff.numel() else 0.0,
                "out_ref_absmax": float(ref_out.abs().max()) if ref_out.numel() else 0.0,
                "lse_ref_absmax": float(finite_lse.abs().max()) if finite_lse.numel() else 0.0}

    def fallback_errors(self, scenario, inputs, reference):
        return self.errors(scenario, self.reference(scenario, inputs, low_precision=True), reference)

    def within_tolerance(self, errors, allowed):
        out_atol = 2.0**-10 * max(errors["out_ref_absmax"], 1e-3)
        lse_atol = 1e-4 * max(errors["lse_ref_absmax"], 1.0)
        rules = (("out_max", 2 * allowed["out_max"] + out_atol), ("out_mean", 2 * allowed["out_mean"] + out_atol / 16),
                 ("lse_max", 2 * allowed["lse_max"] + lse_atol))
        for key, bound in rules:
            if not errors[key] <= bound:
                return f"{key} error {errors[key]:.3g} exceeds the bound {bound:.3g}"
        return None

    def baselines(self, arch):
        return baseline_adapters.for_arch(arch)

    def flops(self, scenario):
        """FlashAttention's count: 4 * seqlen_q * seqlen_k * head_dim per head, the visible part if causal."""
        p = scenario.params
        pairs = zip(p["seqlens_q"], p["seqlens_k"], strict=True) if p["layout"] == "varlen" else \
            [(p["seqlen_q"], p["seqlen_k"])] * p["batch"]
        total = 0
        for sq, sk in pairs:
            total += sum(max(0, min(sk, i + sk - sq + 1)) for i in range(sq)) if p["causal"] else sq * sk
        return 4.0 * total * p["head_dim"] * p["heads_q"]


def attention(q, k, v, scale, softcap, causal, low_precision=False, max_elems=1 << 28):
    """Attention of one sequence: q [sq, hq, d], k/v [sk, hkv, d] -> out [sq, hq, d], lse [hq, sq].

    float32 throughout, chunked over query rows so that the score matrix stays bounded. With
    `low_precision`, probabilities are rounded to bf16 before they meet v, as a bf16 kernel does.
    """
    sq, hq, d = q.shape
    sk, hkv = k.shape[0], k.shape[1]
    out = torch.zeros(sq, hq, d, dtype=torch.float32, device=q.device)
    lse = torch.full((hq, sq), float("-inf"), dtype=torch.float32, device=q.device)
    if sq == 0 or sk == 0:
        return out, lse
    group = hq // hkv
    kf = k.float().repeat_interleave(group, dim=1).transpose(0, 1)  # [hq, sk, d]
    vf = v.float().repeat_interleave(group, dim=1).transpose(0, 1)
    rows = max(1, min(sq, max_elems // max(1, hq * sk)))
    for r0 in range(0, sq, rows):
        r1 = min(sq, r0 + rows)
        qf = q[r0:r1].float().transpose(0, 1)  # [hq, r, d]
        scores = torch.matmul(qf, kf.transpose(1, 2)) * scale
        if softcap > 0:
            scores = softcap * torch.tanh(scores / softcap)
        if causal:
            i = torch.arange(r0, r1, device=q.device)[:, None]
            j = torch.arange(sk, device=q.device)[None, :]
            scores = scores.masked_fill(j > i + sk - sq, float("-inf"))
        row_lse = torch.logsumexp(scores, dim=-1)  # -inf where a row sees nothing
        probs = torch.exp(scores - row_lse[..., None]).nan_to_num(nan=0.0)
        if low_precision:
            probs = probs.to(torch.bfloat16).float()
        out[r0:r1] = torch.matmul(probs, vf).transpose(0, 1)
        lse[:, r0:r1] = row_lse
    return out, lse


TASK = FlashAttnFwd()
