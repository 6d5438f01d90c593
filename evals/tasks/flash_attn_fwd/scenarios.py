"""The scenario suites of flash_attn_fwd, modelled on FlashAttention-3/4's own forward tests.

Every scenario is bf16 and supported by the arch's headline baseline (FA3 on sm90, FA4 on sm100).
Params: batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, causal, softcap, layout
("contiguous" | "packed_qkv" | "varlen"), magnitude (input scale) and, for varlen, seqlens_q/seqlens_k.
"""

from __future__ import annotations

import functools
import math
import random

from kernelseek.harness.task import Scenario

from . import models

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


# --- the sanitizer suite: every feature and launch path, small enough for compute-sanitizer -----------
#
# The tools slow a kernel 10-1000x (racecheck most, on kernels that keep their tiles in shared memory, as
# the seed does), so the suite keeps the work small (about 25 GFLOP in all) and still reaches every path
# of the Hopper kernel: the tiny scenarios (empty rows, varlen with empty sequences and fewer rows than a
# tile, softcap, packed QKV), ragged shapes causal and not, each head dim (96 and 192 padded), GQA packing
# in decode and GQA outside it, single-query decode (split-KV), varlen with empty query and key sequences on
# the main path, strided packed QKV, d64's wide key blocks (with softcap: >= 132 tiles of >= 2048 keys),
# persistent CTAs taking several tiles (136 tiles on 132 SMs), causal heavy/light pairing (132 pairs) and
# the fallback's chunked walk over long keys (a varlen batch of 44 query rows), and varlen decode split
# over keys with GQA packing (empty splits, an empty query sequence, rows that see no key).
SANITIZE_FROM_SUITE = ("ragged_d64_113x203_causal", "ragged_d128_239x1", "ragged_d256_799x3_causal",
                       "decode_d64_q4_k1024_causal")


def sanitize(arch: str) -> list[Scenario]:
    suite = {s.name: s for s in (sm90() if arch == "sm90" else sm100())}
    extra = [
        _s("san_d96_s512_causal", "hdim", batch=1, seqlen_q=512, seqlen_k=512, heads_q=8, heads_kv=8, head_dim=96,
           causal=True),
        _s("san_d192_113x203_causal", "hdim", batch=2, seqlen_q=113, seqlen_k=203, heads_q=6, heads_kv=6,
           head_dim=192, causal=True),
        _s("san_gqa_d128_h16kv2_s512_causal", "gqa", batch=1, seqlen_q=512, seqlen_k=512, heads_q=16, heads_kv=2,
           head_dim=128, causal=True),
        _s("san_decode_d128_q1_k1024", "decode", batch=2, seqlen_q=1, seqlen_k=1024, heads_q=8, heads_kv=2,
           head_dim=128),
        _s("san_varlen_d128_empty_causal", "varlen", layout="varlen", batch=5, seqlen_q=300, seqlen_k=300,
           seqlens_q=[0, 17, 130, 0, 300], seqlens_k=[5, 0, 200, 64, 300], heads_q=8, heads_kv=2, head_dim=128,
           causal=True),
        _s("san_strided_d128_s512_causal", "strided", layout="packed_qkv", batch=2, seqlen_q=512, seqlen_k=512,
           heads_q=8, heads_kv=8, head_dim=128, causal=True),
        _s("san_softcap_wide_d64_h9_s2048", "softcap", batch=1, seqlen_q=2048, seqlen_k=2048, heads_q=9, heads_kv=9,
           head_dim=64, softcap=50.0, magnitude=2.0),
        _s("san_persistent_d64_h34_s512", "persistent", batch=1, seqlen_q=512, seqlen_k=512, heads_q=34, heads_kv=34,
           head_dim=64),
        _s("san_pairs_d128_h33_s1024_causal", "persistent", batch=1, seqlen_q=1024, seqlen_k=1024, heads_q=33,
           heads_kv=33, head_dim=128, causal=True),
        # many short sequences: persistent CTAs take two or more tiles each, of 128 or 192 rows
        _s("san_persistent_d64_h200_s192", "persistent", batch=1, seqlen_q=192, seqlen_k=192, heads_q=200,
           heads_kv=200, head_dim=64),
        # a varlen batch of fewer query rows than one TMA box, with long key sequences: the Hopper
        # kernel's fallback walks several chunks of keys, its warps' rows ending at different keys
        _s("san_fallback_varlen_d128_long_keys", "varlen", layout="varlen", batch=3, seqlen_q=41, seqlen_k=700,
           seqlens_q=[3, 0, 41], seqlens_k=[700, 5, 90], heads_q=4, heads_kv=2, head_dim=128, causal=True),
        # serving's decode: a few query rows a sequence on caches of unequal length; the Hopper kernel packs
        # the 4 query heads of a KV head into a tile and splits the keys by the longest sequence's share, so
        # the shorter sequences leave splits without keys (neutral partials) that the combine reads
        _s("san_varlen_decode_split_gqa_d128_causal", "varlen", layout="varlen", batch=4, seqlen_q=2, seqlen_k=2600,
           seqlens_q=[2, 1, 0, 2], seqlens_k=[2600, 600, 37, 1], heads_q=8, heads_kv=2, head_dim=128, causal=True),
    ]
    if arch != "sm90":  # FA4's head dims on Blackwell: no 192 (see sm100)
        extra = [s for s in extra if s.params["head_dim"] != 192]
    return tiny() + [suite[name] for name in SANITIZE_FROM_SUITE] + extra


# --- the hold-out: scenarios drawn from the distribution the suite samples ---------------------------
#
# The suite is a yardstick, not the target: every full judgement also draws a hold-out sample. Lengths
# are log-uniform over 1..16k (real models do not come in powers of two), seqlen_q != seqlen_k often
# (usually seqlen_q <= seqlen_k, sometimes more, as the ragged group has), every head dim of the arch's
# suite, GQA/MQA ratios, causal or not, softcap sometimes (at magnitude 2.0, as the suite does), varlen
# batches with empty sequences, packed-QKV strided layouts and now and then large input values. Batch and
# heads follow the grid (batch * seqlen ~ 16k tokens, heads * head_dim ~ 2048), and no scenario is larger
# (memory per tensor, attention work) than the suite's largest.

MAX_SEQLEN = 16384
KINDS = ("dense", "ragged", "decode", "varlen", "packed")
KIND_WEIGHTS = (3, 3, 1, 2, 1)


def visible_pairs(seqlen_q: int, seqlen_k: int, causal: bool) -> int:
    """(query, key) pairs a sequence computes; causal masks are aligned bottom-right."""
    if not causal:
        return seqlen_q * seqlen_k
    if seqlen_q > seqlen_k:  # the first seqlen_q - seqlen_k rows see no key at all
        return seqlen_k * (seqlen_k + 1) // 2
    return seqlen_q * (seqlen_k - seqlen_q + 1) + seqlen_q * (seqlen_q - 1) // 2


def _pairs_of(p: dict) -> list[tuple[int, int]]:
    if p["layout"] == "varlen":
        return list(zip(p["seqlens_q"], p["seqlens_k"], strict=True))
    return [(p["seqlen_q"], p["seqlen_k"])] * p["batch"]


def size_of(p: dict) -> dict[str, int]:
    """What a scenario costs: elements of q and of k (v is k's size, out is q's) and attention work
    (visible pairs * heads_q * head_dim, which the time follows)."""
    pairs = _pairs_of(p)
    tokens_q, tokens_k = sum(q for q, _ in pairs), sum(k for _, k in pairs)
    d = p["head_dim"]
    return {"q_elems": tokens_q * p["heads_q"] * d, "k_elems": tokens_k * p["heads_kv"] * d,
            "work": sum(visible_pairs(q, k, p["causal"]) for q, k in pairs) * p["heads_q"] * d}


def suite_for(arch: str) -> list[Scenario]:
    return {"sm90": sm90, "sm100": sm100}[arch]()


def limits(arch: str) -> dict[str, int]:
    """The suite's largest scenario in each measure of `size_of`: no hold-out scenario exceeds them."""
    sizes = [size_of(s.params) for s in suite_for(arch)]
    return {key: max(size[key] for size in sizes) for key in sizes[0]}


@functools.cache  # the hold-out sampler asks once per scenario drawn
def head_dims(arch: str) -> tuple[int, ...]:
    return tuple(sorted({s.params["head_dim"] for s in suite_for(arch)}))


def baseline_supports(arch: str, p: dict) -> str | None:
    """None when the arch's headline baseline runs these params, else why not.

    FA3 (sm90, hopper/flash_api.cpp mha_fwd): bf16, head dim at most 256 and a multiple of 8, heads_kv
    dividing heads_q, any lengths, softcap, causal and varlen with any of them. FA4 (sm100, flash-attn-4
    4.0.0b36): the same, but head dims up to 128 or exactly 256 (192 only with a V head dim of 128,
    which this task does not have), so no d192 there."""
    d, hq, hkv = p["head_dim"], p["heads_q"], p["heads_kv"]
    if d % 8 or d > 256:
        return f"head dim {d} is not a multiple of 8 up to 256"
    if arch == "sm100" and 128 < d < 256:
        return f"FA4 on Blackwell runs head dims up to 128 and 256, not {d}"
    if hkv < 1 or hq % hkv:
        return f"heads_kv {hkv} does not divide heads_q {hq}"
    return None


def problem(arch: str, p: dict, bounds: dict[str, int] | None = None) -> str | None:
    """None when `p` is a valid scenario of this task on `arch` within the suite's bounds, else why not."""
    why = baseline_supports(arch, p)
    if why:
        return why
    if p["head_dim"] not in head_dims(arch):
        return f"head dim {p['head_dim']} is not one of the {arch} suite's"
    if p["layout"] not in ("contiguous", "packed_qkv", "varlen"):
        return f"layout {p['layout']} is unknown"
    if p["layout"] == "packed_qkv" and (p["seqlen_q"] != p["seqlen_k"] or p["heads_q"] != p["heads_kv"]):
        return "a packed QKV layout needs seqlen_q == seqlen_k and heads_q == heads_kv"
    if p["layout"] == "varlen":
        lq, lk = p.get("seqlens_q") or [], p.get("seqlens_k") or []
        if not (len(lq) == len(lk) == p["batch"]) or min(lq + lk) < 0:
            return "varlen lengths must be one per sequence, none negative"
        if p["seqlen_q"] != max(lq) or p["seqlen_k"] != max(lk):
            return "seqlen_q/seqlen_k must be the longest sequence of a varlen batch"
    if not (1 <= p["seqlen_q"] <= MAX_SEQLEN and 1 <= p["seqlen_k"] <= MAX_SEQLEN and p["batch"] >= 1):
        return "lengths must be 1..16384 and the batch at least 1"
    if p["softcap"] < 0 or p["magnitude"] <= 0:
        return "softcap must be 0 or more and magnitude positive"
    bounds = bounds or limits(arch)
    for key, value in size_of(p).items():
        if value > bounds[key]:
            return f"{key} {value} is above the suite's largest ({bounds[key]})"
    return None


def _length(rng: random.Random, lo: int, hi: int) -> int:
    """Log-uniform over lo..hi."""
    return max(lo, min(hi, round(math.exp(rng.uniform(math.log(lo), math.log(hi + 1)) - 0.5))))


def _sample(arch: str, rng: random.Random, bounds: dict[str, int]) -> tuple[str, dict]:
    d = rng.choice(head_dims(arch))
    kind = rng.choices(KINDS, KIND_WEIGHTS)[0]
    causal = rng.random() < 0.5
    softcap = float(rng.randint(5, 50)) if rng.random() < 0.2 else 0.0
    magnitude = 2.0 if softcap else (12.0 if rng.random() < 0.1 else 1.0)
    heads = max(2, (HIDDEN // d) // 2 * 2)  # the grid's heads * head_dim = 2048, kept even
    if kind == "packed":
        hq = hkv = max(1, heads // 2)  # as the suite's strided group: q, k and v share one row
    else:
        hq = heads
        ratios = [r for r in range(2, hq + 1) if hq % r == 0]
        hkv = hq // rng.choice(ratios) if rng.random() < 0.4 else hq  # GQA, MQA when the ratio is hq
    p: dict = {"batch": 1, "heads_q": hq, "heads_kv": hkv, "head_dim": d, "causal": causal, "softcap": softcap,
               "layout": "contiguous", "magnitude": magnitude}
    if kind == "varlen":
        n = rng.randint(2, 16)
        lq = [0 if rng.random() < 0.15 else _length(rng, 1, 4096) for _ in range(n)]
        lk = [q if q and rng.random() < 0.5 else _length(rng, 1, 4096) for q in lq]
        lk = [0 if rng.random() < 0.1 else k for k in lk]
        empty = rng.randrange(n)  # at least one empty sequence: no queries, or queries that see no key
        (lq if rng.random() < 0.5 else lk)[empty] = 0
        for lens in (lq, lk):
            if max(lens) == 0:
                lens[(empty + 1) % n] = _length(rng, 1, 4096)
            while sum(lens) > TOKENS:
                i = lens.index(max(lens))
                lens[i] //= 2
        p.update(layout="varlen", batch=n, seqlens_q=lq, seqlens_k=lk, seqlen_q=max(lq), seqlen_k=max(lk))
    else:
        if kind in ("dense", "packed"):
            sq = sk = _length(rng, 32, MAX_SEQLEN)
        elif kind == "decode":
            sq, sk = _length(rng, 1, 128), _length(rng, 512, MAX_SEQLEN)
        else:  # ragged: usually fewer queries than keys, sometimes more
            a, b = sorted((_length(rng, 1, MAX_SEQLEN), _length(rng, 32, MAX_SEQLEN)))
            sq, sk = (a, b) if rng.random() < 0.75 else (b, a)
        p.update(layout="packed_qkv" if kind == "packed" else "contiguous", seqlen_q=sq, seqlen_k=sk,
                 batch=max(1, min(256, TOKENS // max(sq, sk))))
        while p["batch"] > 1 and any(v > bounds[k] for k, v in size_of(p).items()):
            p["batch"] -= 1
    group = ("varlen" if kind == "varlen" else "strided" if kind == "packed" else "softcap" if softcap
             else "decode" if kind == "decode" else "gqa" if hkv != hq
             else "ragged" if p["seqlen_q"] != p["seqlen_k"] else "dense")
    return group, p


def _detail(p: dict) -> str:
    heads = f"_h{p['heads_q']}kv{p['heads_kv']}" if p["heads_q"] != p["heads_kv"] else ""
    layout = {"varlen": f"_varlen{p['batch']}", "packed_qkv": "_packed"}.get(p["layout"], "")
    cap = f"_cap{p['softcap']:g}" if p["softcap"] else ""
    mag = f"_mag{p['magnitude']:g}" if p["magnitude"] not in (1.0, 2.0) else ""
    return f"d{p['head_dim']}{heads}_q{p['seqlen_q']}_k{p['seqlen_k']}{layout}{cap}{mag}{_tag(p['causal'])}"


def holdout(arch: str, n: int, seed: int) -> list[Scenario]:
    """`n` scenarios: the even-numbered from the distribution above, the odd-numbered from real models'
    attention (models.py; their groups are `holdout_model_<way>`, reported apart). Scenario i depends only
    on (arch, seed, i), so a larger sample of the same seed extends a smaller one."""
    from kernelseek.harness.task import holdout_name

    bounds = limits(arch)
    out = []
    for i in range(n):
        rng = random.Random(f"flash_attn_fwd/{arch}/{seed}/{i}")
        if i % 2:
            group, p = _model_draw(arch, rng, bounds)
        else:
            group, p = _sample(arch, rng, bounds)
        why = problem(arch, p, bounds)
        assert why is None, f"the hold-out sampler drew an invalid scenario ({why}): {p}"
        out.append(Scenario(holdout_name(seed, i, n, _detail(p)), "holdout_" + group, p))
    return out


def _model_draw(arch: str, rng: random.Random, bounds: dict[str, int]) -> tuple[str, dict]:
    """A real model's attention (models.py) that the arch's baseline runs, fitted to the suite's bounds."""
    while True:
        way, p = models.draw(rng)
        if baseline_supports(arch, p) is None and p["head_dim"] in head_dims(arch):
            break
    fits = lambda q: all(v <= bounds[k] for k, v in size_of(q).items())  # noqa: E731
    return "model_" + way, models.shrink(p, fits)
