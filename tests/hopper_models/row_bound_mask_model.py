"""v65's mask against v64's, element by element: the row-bound test (two compares of a compile-time column
offset) must hide exactly the keys the per-key test (start, end, diagonal) hides.

    python tests/hopper_models/row_bound_mask_model.py

Both are transcribed from `apply_mask` in flash_attn_fwd.cu: thread quad qd holds, for row r = j >> 1,
key key0 + 8i + (j & 1) with key0 = nb BN - ksh + 2 qd (ksh: a varlen block's shift back from its nominal
start nb BN). Every block position, shift, quad and causal flag, with lengths and rows at the block's edges and
diagonals on both sides, is checked, for each key block width the kernel uses; three mutants of the row-bound test (the
diagonal's +1 dropped, the start bound dropped, the end bound taken from the diagonal alone) must each
be caught. An unshifted block (ksh 0) must need no start bound (lo <= 0): the d64 tall-wide tile tests it
only under a shift. Exits 1 on any difference.
"""

from __future__ import annotations

import itertools
import sys


def per_key_visible(key: int, key_lo: int, sk: int, row: int, diag: int, causal: bool) -> bool:
    return key >= key_lo and key < sk and (not causal or key <= row + diag)


def row_bound_visible(c: int, lo: int, hi: int) -> bool:
    return not (c < lo or c >= hi)


def bounds(key_lo: int, key0: int, sk: int, row: int, diag: int, causal: bool, mutant: str | None) -> tuple[int, int]:
    lo = key_lo - key0
    end = min(sk, row + diag + 1) if causal else sk
    if mutant == "no_plus_one" and causal:
        end = min(sk, row + diag)
    elif mutant == "no_start":
        lo = -(1 << 30)
    elif mutant == "diagonal_only" and causal:
        end = row + diag + 1
    return lo, end - key0


def differences(bn: int, mutant: str | None = None) -> int:
    wrong = 0
    for nb, ksh, qd, causal in itertools.product(range(3), (0, 1, 7, bn - 1), range(4), (False, True)):
        key_lo = nb * bn
        key0 = nb * bn - ksh + 2 * qd
        # lengths and rows around the block's edges (and the diagonal's), not every value between
        edges = sorted({key_lo + d for d in (-1, 0, 1, 2, bn - 2, bn - 1, bn, bn + 1)} | {0, 1})
        for sk, row, diag in itertools.product(edges, [e - 3 for e in edges] + edges, (-bn, -3, 0, 5)):
            lo, hi = bounds(key_lo, key0, sk, row, diag, causal, mutant)
            if ksh == 0 and mutant is None and lo > 0:  # the d64 tall-wide tile tests the start only when shifted
                wrong += 1
            for i, j in itertools.product(range(bn // 8), range(2)):  # one row: both rows test alike
                c = 8 * i + j
                if per_key_visible(key0 + c, key_lo, sk, row, diag, causal) != row_bound_visible(c, lo, hi):
                    wrong += 1
    return wrong


def main() -> int:
    widths = (64, 80, 112, 128, 176, 192)
    bad = {bn: differences(bn) for bn in widths}
    missed = [m for m in ("no_plus_one", "no_start", "diagonal_only") if differences(64, m) == 0]
    print(f"row-bound mask against the per-key mask, key blocks {widths}: "
          f"{sum(bad.values())} differences; mutants missed: {missed or 'none'}")
    return 1 if any(bad.values()) or missed else 0


if __name__ == "__main__":
    sys.exit(main())
