"""v69's exponential on the FMA pipe (`ex2_fma` in the patch), transcribed op for op in float32, against
exp2 and against what the attention's output can tell apart.

    python kernels/hopper/versions/v69_ex2_fma_model.py [PATCH]

The coefficients are read from the patch (default: v69_v67_one_ex2_in_eight_on_the_fma_pipe.patch beside
this file), so the model checks what the kernel compiles. Checks:
- relative error against exp2 at most 1.1e-4 over [-126, 0] (bf16's half step, P's next rounding, is 2^-9);
- exactly 1 at 0 (a block's largest p stays 1 before its rounding), exactly 0 at -inf and at or below
  -127 (masked keys), never negative or NaN down to -1e30, and below 2^-126 between -127 and -126;
- the output of attention rows with one exponential in eight taken this way (the kernel's choice of
  elements), against a float64 reference: error within 5 % of the same rows with every exponential exact;
- four mutants are each caught: no clamp, 2^23 for the rounding constant, a coefficient off in its 4th digit,
  2^0 not pinned to 1.
Exits 1 on a failed check or a missed mutant.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import torch

F32 = np.float32
ROUND = F32(12582912.0)  # 1.5 * 2^23
POLY = re.compile(r"fmaf\(fmaf\(fmaf\(([0-9.e+-]+)f, f, ([0-9.e+-]+)f\), f, ([0-9.e+-]+)f\), f, ([0-9.e+-]+)f\)")


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """float32 fma: the product is exact in float64 and the sum rounds once (twice, rarely, to float32)."""
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(F32)


def ex2_fma(x: np.ndarray, coeffs: tuple[float, float, float, float], *, clamp: float | None = -127.0,
            rounding: float = ROUND) -> np.ndarray:
    c3, c2, c1, c0 = (F32(c) for c in coeffs)
    x = x.astype(F32)
    if clamp is not None:
        x = np.maximum(x, F32(clamp))
    with np.errstate(invalid="ignore", over="ignore"):
        j = (x + F32(rounding)).astype(F32)
        f = (x - (j - F32(rounding)).astype(F32)).astype(F32)
        poly = fma(fma(fma(np.full_like(f, c3), f, np.full_like(f, c2)), f, np.full_like(f, c1)), f,
                   np.full_like(f, c0))
        bits = (j.view(np.int32).astype(np.int64) * (1 << 23) + poly.view(np.int32)).astype(np.int64)
    return (bits & 0xFFFFFFFF).astype(np.uint32).view(F32)


def bf16(a: np.ndarray) -> np.ndarray:
    """Round float32 to bfloat16 (nearest even) and back."""
    return torch.from_numpy(np.ascontiguousarray(a, dtype=F32)).to(torch.bfloat16).float().numpy()


def function_problems(fn) -> list[str]:  # noqa: ANN001 - fn(x) -> 2^x approximated
    problems = []
    x = np.linspace(-126, 0, 2_000_001, dtype=F32)
    with np.errstate(invalid="ignore"):
        err = np.nan_to_num(np.abs(fn(x).astype(np.float64) / np.exp2(x.astype(np.float64)) - 1), nan=np.inf).max()
    if err > 1.1e-4:
        problems.append(f"relative error {err:.2e} over [-126, 0]")
    edges = fn(np.array([0.0, -np.inf, -127.0, -300.0], dtype=F32))
    if edges[0] != 1.0:
        problems.append(f"2^0 gives {edges[0]!r}")
    if np.any(edges[1:] != 0.0):
        problems.append(f"-inf, -127, -300 give {edges[1:]!r}")
    deep = fn(np.concatenate([np.linspace(-1e30, -1000, 1001, dtype=F32), np.linspace(-1000, 0, 400_001, dtype=F32)]))
    if not np.all(np.isfinite(deep)) or np.any(deep < 0):
        problems.append("negative or NaN results below 0")
    tail = fn(np.linspace(-127, -126, 10_001, dtype=F32)[1:-1])
    if np.any(tail >= F32(2.0 ** -126)):
        problems.append("results of 2^-126 or more below -126")
    return problems


def attention_error(sq: int, sk: int, d: int, every: int, causal: bool, magnitude: float, fn, rng) -> float:  # noqa: ANN001
    """Max |O - reference| of rows whose element e of each 8-key group's thread pairs (the kernel's index
    2i + 1 of a thread's row, i the 8-key group) goes through fn when (2i + 1) % every == every - 1."""
    q = bf16(rng.standard_normal((sq, d)).astype(F32) * F32(magnitude))
    k = bf16(rng.standard_normal((sk, d)).astype(F32) * F32(magnitude))
    v = bf16(rng.standard_normal((sk, d)).astype(F32))
    s = (q.astype(np.float64) @ k.T.astype(np.float64) / np.sqrt(d)).astype(F32)
    if causal:
        s = np.where(np.arange(sk)[None, :] <= np.arange(sq)[:, None] + (sk - sq), s, F32(-np.inf))
    ref = np.exp(s.astype(np.float64) - s.max(1, keepdims=True))
    ref = ref @ v.astype(np.float64) / ref.sum(1, keepdims=True)
    x = ((s - s.max(1, keepdims=True)) * F32(1.4426950408889634)).astype(F32)
    p = np.exp2(x).astype(F32)
    if every:
        key = np.arange(sk)
        index = 2 * (key // 8) + 1  # the thread's pair element 2i + 1: the second key of its pair in group i
        chosen = (key % 2 == 1) & (index % every == every - 1)
        p[:, chosen] = fn(x[:, chosen])
    rows = p.sum(1, keepdims=True, dtype=F32)
    out = bf16(p).astype(np.float64) @ v.astype(np.float64) / rows
    return float(np.abs(out - ref).max())


def attention_problems(fn, every: int) -> list[str]:  # noqa: ANN001
    problems = []
    for sq, sk, d, causal, magnitude in [(128, 2048, 64, False, 1.0), (128, 2048, 64, True, 1.0),
                                         (96, 1000, 96, True, 3.0), (64, 4096, 64, False, 0.3)]:
        exact = attention_error(sq, sk, d, 0, causal, magnitude, fn, np.random.default_rng(sk + d))
        mixed = attention_error(sq, sk, d, every, causal, magnitude, fn, np.random.default_rng(sk + d))
        if not np.isfinite(mixed) or mixed > 1.05 * exact + 1e-6:
            problems.append(f"attention sq{sq} sk{sk} d{d}{' causal' if causal else ''}: error {mixed:.3e} "
                            f"against {exact:.3e} with exact exponentials")
    return problems


def main(argv: list[str]) -> int:
    patch = Path(argv[0]) if argv else Path(__file__).with_name("v69_v67_one_ex2_in_eight_on_the_fma_pipe.patch")
    found = POLY.search(patch.read_text())
    if not found:
        print(f"{patch}: no ex2_fma polynomial found", file=sys.stderr)
        return 1
    coeffs = tuple(float(c) for c in found.groups())
    every = int(re.search(r"FMA_EX2_EVERY = .*\? (\d+) : 0;", patch.read_text()).group(1))
    print(f"coefficients (c3, c2, c1, c0) = {coeffs}; one exponential in {every}")
    problems = function_problems(lambda x: ex2_fma(x, coeffs)) + attention_problems(lambda x: ex2_fma(x, coeffs), every)
    for problem in problems:
        print("FAILED:", problem)
    mutants = {
        "no clamp": lambda x: ex2_fma(x, coeffs, clamp=None),
        "2^23 for 1.5 * 2^23": lambda x: ex2_fma(x, coeffs, rounding=2.0 ** 23),
        "c1 off in its 4th digit": lambda x: ex2_fma(x, (coeffs[0], coeffs[1], coeffs[2] + 1e-3, coeffs[3])),
        "2^0 not pinned to 1": lambda x: ex2_fma(x, (coeffs[0], coeffs[1], coeffs[2], coeffs[3] + 1e-4)),
    }
    missed = [name for name, fn in mutants.items() if not function_problems(fn)]
    print(f"{len(problems)} problems; mutants missed: {', '.join(missed) or 'none'}")
    return 1 if problems or missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
