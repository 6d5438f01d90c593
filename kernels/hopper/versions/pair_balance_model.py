"""Causal pairing's static balance, modelled on the CPU (no GPU): a lead for grid_d64_s2048_causal, not a candidate.

CTA c of a grid of G = min(pairs, 132) takes pairs c, c + G, ... (TileScheduler::decode); a pair is a heavy and a
light m-block of one head slot, or, with odd m-blocks, the middle one alone. Printed: the busiest CTA's work over
the mean (tile cost = its key blocks + c0, square causal) as decoded today, and with the middles of two slots
paired into one (fewer, equal pairs; a different round count).

    python kernels/hopper/versions/pair_balance_model.py
"""
from __future__ import annotations

import math

NSM, C0 = 132, 1.5
SHAPES = [  # name, seqlen, tile rows, key block, head slots (batch x heads)
    ("d64 s2048 b8 h32 (tall)", 2048, 192, 128, 256), ("d64 s3000 b5 h32 (tall)", 3000, 192, 128, 160),
    ("d128 s1400 b11 h16", 1400, 128, 128, 176), ("d128 s2800 b5 h16", 2800, 128, 128, 80),
    ("d192 s900 b18 h10", 900, 128, 112, 180), ("d96 s1700 b9 h20 (tall)", 1700, 192, 128, 180),
    ("d128 s300 b54 h16", 300, 128, 128, 864), ("d128 s2048 b8 h16", 2048, 128, 128, 128),
]


def tile_cost(mb: int, n: int, bm: int, bn: int) -> float:
    return C0 + math.ceil(min((mb + 1) * bm, n * bm) / bn)


def today(n: int, slots: int) -> list[list[int]]:
    per_head = (n + 1) // 2
    out = []
    for p in range(per_head * slots):
        k = p % per_head
        out.append([n - 1 - k] if n - 1 - k == k else [n - 1 - k, k])
    return out


def middles_paired(n: int, slots: int) -> list[list[int]]:
    half = n // 2
    out = []
    for _ in range((slots + 1) // 2):
        for _slot in range(2):
            out += [[n - 1 - k, k] for k in range(half)]
        if n % 2:
            out.append([half, half])
    return out


def imbalance(pairs: list[list[int]], n: int, bm: int, bn: int) -> float:
    g = min(len(pairs), NSM)
    work = [0.0] * g
    for p, tiles in enumerate(pairs):
        work[p % g] += sum(tile_cost(mb, n, bm, bn) for mb in tiles)
    return max(work) / (sum(work) / g)


for name, s, bm, bn, slots in SHAPES:
    n = math.ceil(s / bm)
    a, b = today(n, slots), middles_paired(n, slots)
    print(f"{name:26s} m-blocks {n:3d}: today {imbalance(a, n, bm, bn):.3f} ({len(a)} pairs)   "
          f"middles paired {imbalance(b, n, bm, bn):.3f} ({len(b)} pairs)")
