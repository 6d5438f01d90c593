"""CPU check of the split key-block loop: is "block nb needs the element-wise mask" the same as
"nb >= first_masked_block" for every block of every tile?

The loop runs the blocks from first_masked_block on (the first iterations: last block first) with the
mask and the rest without it, so a block that needs the mask but falls below the threshold would be
computed unmasked: wrong output. A block above it that needs none is only slower. Both directions are
checked, on fixed-length and varlen tiles, causal and not, at every key-block width the kernel uses.

Both sides are transcribed from the kernel: `block_needs_mask` with the varlen box shift of `tile_start`,
and `first_masked_block`.

    python tests/hopper_models/mask_threshold_model.py      # prints "ok: ..." or the first disagreement
"""

from __future__ import annotations

import sys

WIDTHS = (64, 80, 112, 128, 176, 192)  # key blocks: d256's varlen twin, d256, d96 tall/d192, d128, wide ones
ROWS = (64, 128, 192)  # query rows of a head in a tile (pack_r), GQA-packed tiles included


def tile_start(seq_start: int, seq_len: int, nominal_off: int, box: int, varlen: bool) -> tuple[int, int]:
    """The box's first row and its shift back (kernel: tile_start)."""
    if not varlen:
        return nominal_off, 0
    nominal = seq_start + nominal_off
    start = min(nominal, max(seq_start + seq_len - box, 0))
    return start, nominal - start


def block_needs_mask(bn: int, causal: bool, varlen: bool, sk: int, k_start: int, first_row: int,
                     diag: int, nb: int) -> bool:
    if nb * bn + bn > sk:
        return True
    if causal and nb * bn + bn - 1 > first_row + diag:
        return True
    if varlen:
        _, ksh = tile_start(k_start, sk, nb * bn, bn, varlen)
        if ksh != 0:
            return True
    return False


def first_masked_block(bn: int, causal: bool, sk: int, first_row: int, diag: int) -> int:
    nb = sk // bn
    if causal:
        visible = first_row + diag + 1
        nb = min(nb, 0 if visible <= 0 else visible // bn)
    return nb


def main() -> int:
    tiles = blocks = 0
    for bn in WIDTHS:
        for r in ROWS:
            for causal in (False, True):
                # varlen: the first sequence of a batch (its box clamps at row 0) and a later one
                for varlen, q_start, k_start in ((False, 0, 0), (True, 0, 0), (True, 37, 1000)):
                    for sq in range(1, 420, 7):
                        for sk in range(1, 520, 11):
                            for m0 in range(0, sq, r):
                                _, qshift = tile_start(q_start, sq, m0, r, varlen)
                                first_row, diag = m0 - qshift, sk - sq
                                nbk = (sk + bn - 1) // bn
                                if causal:
                                    lim = min(m0 + r, sq) + sk - sq
                                    nbk = min(nbk, 0 if lim <= 0 else (lim + bn - 1) // bn)
                                threshold = first_masked_block(bn, causal, sk, first_row, diag)
                                tiles += 1
                                for nb in range(nbk):
                                    blocks += 1
                                    need = block_needs_mask(bn, causal, varlen, sk, k_start, first_row, diag, nb)
                                    if need != (nb >= threshold):
                                        side = "computed unmasked" if need else "masked needlessly"
                                        print(f"disagree: BN {bn} rows {r} causal {causal} varlen {varlen} sq {sq} "
                                              f"sk {sk} m0 {m0} block {nb}: needs the mask {need}, threshold "
                                              f"{threshold} ({side})", file=sys.stderr)
                                        return 1
    print(f"ok: the threshold agrees with the per-block test on all {blocks} blocks of {tiles} tiles")
    return 0


if __name__ == "__main__":
    sys.exit(main())
