"""The kernel's `Divisor` against integer division: q = (umulhi(n, mul) + n) >> shift, with shift =
ceil(log2 d) and mul = floor(2^32 (2^shift - d) / d) + 1, must equal n // d for every 0 <= n < 2^31 and
every divisor 1 <= d < 2^31 the launch can set (m-blocks, splits, head slots, group, rows, the grid,
a pair group and its half, a band and its tiles).

    python tests/hopper_models/fast_div_model.py

Transcribed from `make_divisor` and `Divisor::div` in flash_attn_fwd.cu, in 32-bit unsigned arithmetic.
Every n below 4096 against every d below 1100; for larger divisors and n up to 2^31 - 1, each n at and
beside the multiples of d (where a wrong rounding shows) and random ones. A mutant (mul without its + 1)
must be caught. Exits 1 on any difference.
"""

from __future__ import annotations

import random
import sys

MASK = (1 << 32) - 1


def make_divisor(d: int, plus_one: int = 1) -> tuple[int, int]:
    shift = 0
    while (1 << shift) < d:
        shift += 1
    mul = ((1 << 32) * ((1 << shift) - d)) // d + plus_one
    assert 0 < mul <= MASK, (d, mul)  # the host stores it as uint32_t
    return mul, shift


def div(n: int, mul: int, shift: int) -> int:
    hi = (n * mul) >> 32  # __umulhi
    total = (hi + n) & MASK  # 32-bit add: n < 2^31 keeps it from wrapping
    return total >> shift


def wrong(d: int, ns, plus_one: int = 1) -> int:
    mul, shift = make_divisor(d, plus_one)
    return sum(div(n, mul, shift) != n // d for n in ns)


def main() -> int:
    top = (1 << 31) - 1
    bad = sum(wrong(d, range(4096)) for d in range(1, 1100))
    rng = random.Random(7)
    divisors = [d for k in range(11, 31) for d in ((1 << k) - 1, 1 << k, (1 << k) + 1)] + \
               [rng.randrange(1100, top) for _ in range(300)] + [top]
    for d in divisors:
        edges = {min(top, max(0, q * d + e)) for q in (1, 2, 3, top // d - 1, top // d) for e in (-1, 0, 1)}
        bad += wrong(d, sorted(edges | {top, top - 1} | {rng.randrange(top) for _ in range(200)}))
    caught = sum(wrong(d, range(4096), plus_one=0) for d in (3, 7, 641, 1000)) > 0
    print(f"Divisor against integer division: {bad} differences; mutant (no + 1) caught: {caught}")
    return 1 if bad or not caught else 0


if __name__ == "__main__":
    sys.exit(main())
