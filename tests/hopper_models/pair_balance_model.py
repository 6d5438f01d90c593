"""Causal pairing's static balance, modelled on the CPU (no GPU), and v51's pairs.

CTA c of a grid of G = min(pairs, 132) takes pairs c, c + G, ... (TileScheduler::decode); a pair is a heavy and a
light m-block of one head slot. v39 makes, with odd m-blocks, the middle m-block a pair of its own (half the
work); v51 groups two slots and pairs their middles. Printed: the busiest CTA's work over the mean (tile cost =
its key blocks + c0, square causal), both ways. First, a port of v51's decode is checked to visit every
(slot, m-block) exactly once for any m-block count, slot count and grid.

    python tests/hopper_models/pair_balance_model.py
"""
from __future__ import annotations

import math

NSM, C0 = 132, 1.5
SHAPES = [  # name, seqlen, tile rows, key block, head slots (batch x heads)
    ("d64 s2048 b8 h32 (tall)", 2048, 192, 128, 256), ("d64 s3000 b5 h32 (tall)", 3000, 192, 128, 160),
    ("d128 s1400 b11 h16", 1400, 128, 128, 176), ("d128 s2800 b5 h16", 2800, 128, 128, 80),
    ("d192 s900 b18 h10", 900, 128, 112, 180), ("d96 s1700 b9 h20 (tall)", 1700, 192, 128, 180),
    ("d128 s300 b54 h16", 300, 128, 128, 864), ("d128 s2048 b8 h16", 2048, 128, 128, 128),
    ("d128 s1071 b15 h16", 1071, 128, 128, 240), ("d64 s4023 b4 h32 (tall)", 4023, 192, 128, 128),
    ("d96 s155 b105 h20 (tall)", 155, 192, 128, 2100), ("d192 s700 b23 h10", 700, 128, 112, 230),
]


def tile_cost(mb: int, n: int, bm: int, bn: int) -> float:
    return C0 + math.ceil(min((mb + 1) * bm, n * bm) / bn)


def pairs_v39(n: int, slots: int) -> list[list[int]]:
    per_head = (n + 1) // 2
    out = []
    for p in range(per_head * slots):
        k = p % per_head
        out.append([n - 1 - k] if n - 1 - k == k else [n - 1 - k, k])
    return out


def n_pairs_v51(n: int, slots: int) -> int:
    return (slots + 1) // 2 * (2 * (n // 2) + (n & 1))


def decode_v51(pair: int, light: int, n: int, slots: int) -> tuple[int, int] | None:
    """TileScheduler::decode's pairing branch (v51): (slot, m-block) of a pair's heavy (light 0) or light tile."""
    half = n // 2
    per_group = 2 * half + (n & 1)
    g, j = divmod(pair, per_group)
    if j < 2 * half:
        slot, k = 2 * g + j // half, j % half
        mb = k if light else n - 1 - k
    else:
        slot, mb = 2 * g + light, half
    return None if slot >= slots else (slot, mb)


def tiles_of_grid(n: int, slots: int, grid: int) -> list[tuple[int, int]]:
    """Every CTA's tiles, t = c, c + G, ... < num_tiles, as the kernel walks them."""
    pairs = n_pairs_v51(n, slots)
    num_tiles = 2 * grid * ((pairs + grid - 1) // grid)
    out = []
    for t in range(num_tiles):
        rnd = t // grid
        pair = (rnd // 2) * grid + t % grid
        if pair < pairs and (tile := decode_v51(pair, rnd & 1, n, slots)) is not None:
            out.append(tile)
    return out


def check_v51_decode() -> int:
    cases = 0
    for n in range(1, 12):
        for slots in range(1, 30):
            for grid in (1, 2, 3, 7, 132):
                tiles = tiles_of_grid(n, slots, min(grid, n_pairs_v51(n, slots)))
                assert sorted(tiles) == [(s, m) for s in range(slots) for m in range(n)], (n, slots, grid)
                cases += 1
    return cases


def pairs_v51(n: int, slots: int) -> list[list[int]]:
    return [[mb for light in (0, 1) if (tile := decode_v51(p, light, n, slots)) for mb in [tile[1]]]
            for p in range(n_pairs_v51(n, slots))]


def paired(pairs: int, n: int, bm: int) -> bool:
    """choose_grid's rule: pairs when the round loss is at most the hidden fixed cost (kTileFixedKeys = 128)."""
    loss = NSM * math.ceil(pairs / NSM) / pairs - 1
    mean_keys = sum(min((m + 1) * bm, n * bm) for m in range(n)) / n
    return loss <= 128 / mean_keys


def imbalance(pairs: list[list[int]], n: int, bm: int, bn: int) -> float:
    g = min(len(pairs), NSM)
    work = [0.0] * g
    for p, tiles in enumerate(pairs):
        work[p % g] += sum(tile_cost(mb, n, bm, bn) for mb in tiles)
    return max(work) / (sum(work) / g)


def main() -> None:
    print(f"v51 decode: every (slot, m-block) exactly once in {check_v51_decode()} (m-blocks, slots, grid) cases")
    for name, s, bm, bn, slots in SHAPES:
        n = math.ceil(s / bm)
        a, b = pairs_v39(n, slots), pairs_v51(n, slots)
        cols = [f"{imbalance(x, n, bm, bn):.3f} ({len(x)} pairs{'' if paired(len(x), n, bm) else ', not paired'})"
                for x in (a, b)]
        print(f"{name:26s} m-blocks {n:3d}: v39 {cols[0]:32s} v51 {cols[1]}")


if __name__ == "__main__":
    main()
