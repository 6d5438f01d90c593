"""The scenario suites of flash_attn_fwd, modelled on FlashAttention-3/4's own forward tests.

Every scenario is bf16 and supported by the arch's headline baseline (FA3 on sm90, FA4 on sm100).
Params: batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, causal, softcap, layout
("contiguous" | "packed_qkv" | "varlen"), magnitude (input scale) and, for varlen, seqlens_q/seqlens_k.
"""

from __future__ import annotations

import random

from kernelseek.harness.task import Scenario

TOKENS, HIDDEN = 16384, 2048  # the paper grid: batch * seqlen = 16k tokens, heads * head_dim = 2048
GRID_SEQLENS = (512, 1024, 2048, 4096, 8192, 16384)
RAGGED = ((1, 1), (113, 203), (128, 217), (239, 1), (799, 3), (1023, 1024), (1024, 1023), (4224, 4224),
          (108, 256), (3, 799))
# Which scenarios the quick judgement runs: one or two per feature.
QUICK = {"grid_d128_s2048_causal", "grid_d128_s8192", "grid_d64_s4096", "grid_d256_s1024_causal",
         "hdim_d96_s2048_causal", "ragged_d128_113x203_causal", "gqa_d128_h16kv2_s2048_causal",
         "softcap_d128_s2048", "varlen_d128_mixed_causal", "decode_d128_q1_k8192", "strided_d128_s2048_causal",
         "large_d64_s1024_causal"}


def _s(name: str, group: str, **params) -> Scenario:
    base = {"batch": 1, "heads_q": 16, "heads_kv": 16, "causal": False, "softcap": 0.0, "layout": "contiguous",
            "magnitude": 1.0}
    base.update(params)
    return Scenario(name, group, base, quick=name in QUICK)


def _tag(causal: bool) -> str:
    return "_causal" if causal else ""


def sm90() -> list[Scenario]:
    out: list[Scenario] = []
    for d in (64, 128, 256):
        for s in GRID_SEQLENS:
            for c in (False, True):
                out.append(_s(f"grid_d{d}_s{s}{_tag(c)}", "grid", batch=TOKENS // s, seqlen_q=s, seqlen_k=s,
                              heads_q=HIDDEN // d, heads_kv=HIDDEN // d, head_dim=d, causal=c))
    for d in (96, 192):
        for s in (1024, 2048, 4096):
            for c in (False, True):
                out.append(_s(f"hdim_d{d}_s{s}{_tag(c)}", "hdim", batch=TOKENS // s, seqlen_q=s, seqlen_k=s,
                              heads_q=HIDDEN // 128, heads_kv=HIDDEN // 128, head_dim=d, causal=c))
    for d in (64, 128, 256):
        for sq, sk in RAGGED:
            for c in (False, True):
                out.append(_s(f"ragged_d{d}_{sq}x{sk}{_tag(c)}", "ragged", batch=2, seqlen_q=sq, seqlen_k=sk,
                              heads_q=6, heads_kv=6, head_dim=d, causal=c))
    for d in (64, 128):
        for hq, hkv in ((16, 1), (16, 2), (16, 4), (32, 8)):
            for c in (False, True):
                out.append(_s(f"gqa_d{d}_h{hq}kv{hkv}_s2048{_tag(c)}", "gqa", batch=4, seqlen_q=2048, seqlen_k=2048,
                              heads_q=hq, heads_kv=hkv, head_dim=d, causal=c))
    for d in (64, 128, 256):
        for cap in (15.0, 50.0):
            for c in (False, True):
                name = f"softcap_d{d}_s2048{_tag(c)}" if cap == 50.0 else f"softcap{int(cap)}_d{d}_s2048{_tag(c)}"
                out.append(_s(name, "softcap", batch=4, seqlen_q=2048, seqlen_k=2048, heads_q=8, heads_kv=8,
                              head_dim=d, causal=c, softcap=cap, magnitude=2.0))
    rng = random.Random(2026)
    for d in (64, 128, 256):
        for kind in ("equal", "mixed"):
            for c in (False, True):
                n = 9
                lens_q = [rng.choice((0, 1, 17, 128, 300, 777, 1024, 2048, 3001)) for _ in range(n)]
                lens_q[3] = 0
                lens_k = list(lens_q) if kind == "equal" else [max(0, q + rng.choice((-50, 0, 64, 500))) for q in lens_q]
                lens_k[5] = 0
                out.append(_s(f"varlen_d{d}_{kind}{_tag(c)}", "varlen", layout="varlen", batch=n,
                              seqlen_q=max(lens_q), seqlen_k=max(lens_k), seqlens_q=lens_q, seqlens_k=lens_k,
                              heads_q=8, heads_kv=2, head_dim=d, causal=c))
    for d in (64, 128):
        for sq in (1, 4, 16, 64):
            for sk in (1024, 8192):
                for c in (False, True):
                    if sq == 1 and c:
                        continue  # identical to the non-causal case
                    out.append(_s(f"decode_d{d}_q{sq}_k{sk}{_tag(c)}", "decode", batch=8, seqlen_q=sq, seqlen_k=sk,
                                  heads_q=32, heads_kv=8, head_dim=d, causal=c))
    for d in (64, 128, 256):
        for c in (False, True):
            out.append(_s(f"strided_d{d}_s2048{_tag(c)}", "strided", layout="packed_qkv", batch=4, seqlen_q=2048,
                          seqlen_k=2048, heads_q=HIDDEN // d // 2, heads_kv=HIDDEN // d // 2, head_dim=d, causal=c))
    for d in (64, 128, 256):
        for c in (False, True):
            out.append(_s(f"large_d{d}_s1024{_tag(c)}", "large", batch=4, seqlen_q=1024, seqlen_k=1024,
                          heads_q=8, heads_kv=8, head_dim=d, causal=c, magnitude=12.0))
    return out


def sm100() -> list[Scenario]:
    """The sm90 shapes that FA4 runs on Blackwell: its forward (flash-attn-4 4.0.0b36) accepts head dims
    up to 128, (192, 128) and (256, 256) there, so the d192 scenarios are left out."""
    return [s for s in sm90() if s.params["head_dim"] != 192]


def tiny() -> list[Scenario]:
    """Small shapes for checking the task itself on the CPU (tests), one per feature."""
    return [
        _s("tiny_causal_ragged", "tiny", batch=2, seqlen_q=5, seqlen_k=9, heads_q=4, heads_kv=2, head_dim=64, causal=True),
        _s("tiny_empty_rows", "tiny", batch=1, seqlen_q=7, seqlen_k=3, heads_q=2, heads_kv=2, head_dim=64, causal=True),
        _s("tiny_softcap", "tiny", batch=1, seqlen_q=8, seqlen_k=8, heads_q=2, heads_kv=1, head_dim=96, softcap=5.0,
           magnitude=3.0),
        _s("tiny_varlen", "tiny", layout="varlen", batch=3, seqlen_q=6, seqlen_k=7, seqlens_q=[6, 0, 2],
           seqlens_k=[7, 3, 0], heads_q=2, heads_kv=2, head_dim=64, causal=True),
        _s("tiny_packed", "tiny", layout="packed_qkv", batch=2, seqlen_q=6, seqlen_k=6, heads_q=2, heads_kv=2,
           head_dim=128),
    ]
