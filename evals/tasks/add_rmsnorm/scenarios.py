"""The scenario suites of add_rmsnorm: hidden sizes of real models, decode and prefill row counts.

Params: rows, hidden, residual ("separate": residual in, residual_out out; "none": plain RMSNorm;
"inplace": residual_out is the residual's own buffer), strides (row strides of x, residual, out,
residual_out in elements: hidden, or more for rows that are slices of wider tensors), magnitude (the
inputs' scale: real residual streams reach thousands) and eps.
"""

from __future__ import annotations

import math
import random

from kernelseek.harness.task import Scenario, holdout_name

# hidden sizes of real models: Llama 3 8B/70B/405B (4096, 8192, 16384), Qwen2.5 (1536, 2048, 3584, 5120),
# Mistral Large (12288), DeepSeek-V3 (7168), Llama 2 13B (5120; its FFN width 13824), BERT-large (1024)
GRID_HIDDEN = (1024, 2048, 4096, 5120, 7168, 8192, 13824, 16384)
DECODE_HIDDEN = (1024, 4096, 7168, 16384)
DECODE_ROWS = (1, 16, 128)
PREFILL_ROWS = (4096, 16384, 65536)
# what the hold-out draws from: the suite's hidden sizes and those of other real models
HOLDOUT_HIDDEN = (768, 896, 1152, 1536, 2048, 2304, 2560, 2880, 3072, 3584, 3840, 4096, 5120, 5376, 6144, 7168,
                  8192, 12288, 13824, 16384)
MAX_ELEMS = 65536 * 16384  # no scenario is larger than the suite's largest (2 GiB a tensor)
QUICK = {"decode_h4096_r16", "decode_h16384_r1", "prefill_h4096_r16384", "prefill_h8192_r4096",
         "prefill_h1024_r65536", "odd_h1000_r4096", "unaligned_h1001_r333", "strided_h4096_r8192",
         "noresidual_h8192_r4096", "inplace_h4096_r8192", "large_h8192_r4096_m3000", "eps_h4096_r2048_tiny"}


def _s(name: str, group: str, rows: int, hidden: int, *, residual: str = "separate", pad: tuple = (0, 0, 0, 0),
       magnitude: float = 1.0, eps: float = 1e-6) -> Scenario:
    strides = [hidden + p for p in pad]
    if residual == "inplace":
        strides[3] = strides[1]
    return Scenario(name, group, {"rows": rows, "hidden": hidden, "residual": residual, "strides": strides,
                                  "magnitude": magnitude, "eps": eps}, quick=name in QUICK)


def sm90() -> list[Scenario]:
    out: list[Scenario] = []
    for h in DECODE_HIDDEN:
        for r in DECODE_ROWS:
            out.append(_s(f"decode_h{h}_r{r}", "decode", r, h))
    for h in GRID_HIDDEN:
        for r in PREFILL_ROWS:
            out.append(_s(f"prefill_h{h}_r{r}", "prefill", r, h))
    for r in (1, 4096, 65536):
        out.append(_s(f"odd_h1000_r{r}", "odd", r, 1000))
    # rows that do not start 16 bytes apart: an odd hidden, and a stride 3 elements past the row
    out.append(_s("unaligned_h1001_r333", "unaligned", 333, 1001))
    out.append(_s("unaligned_h4096_r1000_stride4099", "unaligned", 1000, 4096, pad=(3, 3, 3, 3)))
    # rows that are slices of wider tensors: x a third of a fused projection's output, padded rows
    out.append(_s("strided_h4096_r16", "strided", 16, 4096, pad=(8192, 0, 0, 0)))
    out.append(_s("strided_h4096_r8192", "strided", 8192, 4096, pad=(8192, 64, 128, 64)))
    out.append(_s("strided_h5120_r4096", "strided", 4096, 5120, pad=(64, 64, 64, 64)))
    for h, r in ((4096, 1), (4096, 4096), (8192, 4096), (8192, 16384)):
        out.append(_s(f"noresidual_h{h}_r{r}", "noresidual", r, h, residual="none"))
    for h, r in ((4096, 64), (4096, 8192), (7168, 4096)):
        out.append(_s(f"inplace_h{h}_r{r}", "inplace", r, h, residual="inplace"))
    for h, r, m in ((8192, 4096, 3000.0), (4096, 16384, 1e4), (16384, 1, 1e4)):
        out.append(_s(f"large_h{h}_r{r}_m{m:g}", "large", r, h, magnitude=m))
    # eps that matters (inputs far below it, eps 1e-5), eps that does not (1e-12), and a large one
    out.append(_s("eps_h4096_r2048_tiny", "eps", 2048, 4096, magnitude=1e-3, eps=1e-5))
    out.append(_s("eps_h4096_r2048_1e-12", "eps", 2048, 4096, eps=1e-12))
    out.append(_s("eps_h2048_r4096_0.1", "eps", 4096, 2048, magnitude=0.3, eps=0.1))
    return out


def sm100() -> list[Scenario]:
    """The same suite: torch.compile, the headline baseline, runs every scenario on Blackwell too."""
    return sm90()


def tiny() -> list[Scenario]:
    """Small shapes for checking the task itself on the CPU (tests), one per feature."""
    return [_s("tiny_separate", "tiny", 5, 64), _s("tiny_odd", "tiny", 3, 37, pad=(5, 1, 3, 2)),
            _s("tiny_none", "tiny", 4, 48, residual="none", pad=(16, 0, 0, 0)),
            _s("tiny_inplace", "tiny", 6, 40, residual="inplace", pad=(0, 8, 0, 0)),
            _s("tiny_large", "tiny", 2, 96, magnitude=1e4), _s("tiny_eps", "tiny", 2, 64, magnitude=1e-3, eps=1e-5),
            _s("tiny_empty", "tiny", 0, 64)]


def sanitize(arch: str) -> list[Scenario]:
    """Small scenarios of every feature for compute-sanitizer: the tiny ones, decode (a row per CTA), odd and
    unaligned rows (the kernel's scalar path), strided, no residual, in place, and a prefill shape (a row per
    warp)."""
    suite = {s.name: s for s in (sm90() if arch == "sm90" else sm100())}
    names = ("decode_h4096_r16", "decode_h16384_r1", "odd_h1000_r4096", "unaligned_h1001_r333",
             "unaligned_h4096_r1000_stride4099", "strided_h4096_r16", "noresidual_h4096_r1", "inplace_h4096_r64")
    return tiny() + [suite[name] for name in names] + [_s("san_prefill_h1024_r4096", "prefill", 4096, 1024)]


def holdout(arch: str, n: int, seed: int) -> list[Scenario]:
    """`n` scenarios drawn from the suite's distribution: a real model's hidden size, rows log-uniform over
    1..65536 (no larger than the suite's largest), the residual separate (most), absent or in place,
    strided rows now and then, magnitudes log-uniform over 0.01..10000 and eps 1e-5 or 1e-6. Scenario i
    depends only on (arch, seed, i)."""
    out = []
    for i in range(n):
        rng = random.Random(f"add_rmsnorm/{arch}/{seed}/{i}")
        hidden = rng.choice(HOLDOUT_HIDDEN)
        rows = round(math.exp(rng.uniform(0.0, math.log(65536))))
        while rows * hidden > MAX_ELEMS:
            rows //= 2
        residual = rng.choices(("separate", "none", "inplace"), weights=(6, 2, 2))[0]
        pad = tuple(rng.choice((0, 0, 0, 8, 64, hidden)) for _ in range(4)) if rng.random() < 0.25 else (0, 0, 0, 0)
        magnitude = math.exp(rng.uniform(math.log(0.01), math.log(1e4)))
        eps = rng.choice((1e-5, 1e-6))
        group = "holdout_decode" if rows < 512 else "holdout_prefill"
        if residual != "separate":
            group = f"holdout_{residual}"
        elif any(pad):
            group = "holdout_strided"
        out.append(_s(holdout_name(seed, i, n, f"h{hidden}_r{rows}_{residual}"), group, rows, hidden,
                      residual=residual, pad=pad, magnitude=round(magnitude, 4), eps=eps))
    return out
