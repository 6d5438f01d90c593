"""CPU check of the P tile (d64's 192-key blocks): does every probability land where the SS P V product
reads it? And of the O staging tile, written by the same stmatrix pattern (`O_STMATRIX`): does every
output land where TMA's 128-byte-swizzled store reads it (the same layout, D columns instead of BN keys)?

Three models, each from its PTX definition, not from the kernel's code:
  * the wgmma accumulator fragment (m64nNk16, f32): thread t of warp w holds, in element 4i + 2r + c,
    row 16 w + t / 4 + 8 r, column 8 i + 2 (t % 4) + c;
  * stmatrix.sync.aligned.m8n8.x4.b16: register k of lane t holds row t / 4, columns 2 (t % 4), +1 of
    8x8 block k; row q of block k is written to the address lane 8 k + q gives, 16 contiguous bytes;
  * the A operand of wgmma from shared memory, K-major, 128-byte swizzle (as TMA's SWIZZLE_128B writes Q):
    element (m, k) of a 64-row tile at atom k / 64 (8 KB each), byte m * 128 + (((k % 64) / 8) ^ (m % 8)) * 16
    + (k % 8) * 2.
The kernel's side is `ProbsOperand<C, true>` and `stage_o`: the lane address and the registers they
pack.

    python tests/hopper_models/p_tile_layout_model.py      # prints "ok: ..." or the first mismatch
"""

from __future__ import annotations

import sys

ROWS, ATOM_BYTES = 64, 64 * 128
WIDTHS = (("P tile", 192), ("O tile, d64", 64), ("O tile, d96", 96), ("O tile, d128", 128),
          ("O tile, d192", 192), ("O tile, d256", 256))  # P: BN keys (d64's tall-wide tile); O: D columns


def expected_address(m: int, k: int) -> int:
    return (k // 64) * ATOM_BYTES + m * 128 + (((k % 64) // 8) ^ (m % 8)) * 16 + (k % 8) * 2


def lane_address(warp: int, lane: int) -> int:  # ProbsOperand's constructor and stage_o (tile at 0)
    row = 16 * warp + 8 * ((lane // 8) % 2) + lane % 8
    return row * 128 + (((lane // 16) ^ (lane % 8)) << 4)


def check(name: str, width: int) -> int:
    written: dict[int, tuple[int, int]] = {}  # byte address -> (row, column) of the bf16 value stored there
    for warp in range(4):
        # what each lane holds: s[e] = P[row][col] by the accumulator fragment
        held = {lane: {4 * i + 2 * r + c: (16 * warp + lane // 4 + 8 * r, 8 * i + 2 * (lane % 4) + c)
                       for i in range(width // 8) for r in range(2) for c in range(2)} for lane in range(32)}
        for j in range(width // 16):
            addr = {lane: (lane_address(warp, lane) ^ (((2 * j) % 8) << 4)) + (2 * j // 8) * ATOM_BYTES
                    for lane in range(32)}
            for k in range(4):  # register k = pack(s[8j + 2k], s[8j + 2k + 1]): block k of the .x4
                for t in range(32):  # lane t's register k: row t / 4, columns 2 (t % 4), +1 of block k
                    q, col = t // 4, 2 * (t % 4)
                    row_base = addr[8 * k + q]  # row q of block k is at the address lane 8k + q gives
                    for c in range(2):
                        written[row_base + (col + c) * 2] = held[t][8 * j + 2 * k + c]
    bad = [(a, v, expected_address(*v)) for a, v in written.items() if expected_address(*v) != a]
    covered = {v for v in written.values()}
    if bad:
        a, v, e = bad[0]
        print(f"mismatch: {name} {v} stored at byte {a}, read at {e} ({len(bad)} of {len(written)})")
        return 1
    if len(covered) != ROWS * width or len(written) != ROWS * width:
        print(f"coverage: {name}: {len(covered)} distinct values in {len(written)} places, want {ROWS * width}")
        return 1
    print(f"ok: all {ROWS * width} values of a 64 x {width} {name} land where the K-major SW128 layout reads them")
    return 0


def main() -> int:
    for name, width in WIDTHS:
        if check(name, width):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
