"""A lead, not a candidate: causal pairing's last partial round dealt as single tiles (CPU model, no GPU).

Pairing (v7, v51) deals whole (heavy, light) pairs in rounds of G CTAs, so with pairs = F G + R the last R
pairs make a whole extra round for R CTAs. The configs that pair rather than feed (v55: d192, fixed-length
d256 and the tall d64/d96 tiles) keep that loss. Here, for causal square shapes of those configs that
choose_grid pairs (b = 16384 // s, heads = 2048 // d), the busiest CTA over the mean for:
  v51:        the pairs as dealt today (pair_balance_model.imbalance);
  tail LPT:   F full rounds of pairs, then the tail's 2R tiles, heaviest first, each to the least-loaded CTA;
  tail deal:  the tail's heavy tiles then its light ones, dealt in a snake (a decode could do this in O(1));
  fed:        every tile from a counter, heaviest m-block first over the slots (list scheduling), as v49's
              feed deals them; v56 feeds fixed-length d256, v57 d192.
Tile cost: pair_balance_model.tile_cost (key blocks + 1.5).

    python tests/hopper_models/pair_tail_model.py
"""
from __future__ import annotations

import math

import band_model  # its makespan: list scheduling over the SMs
import pair_balance_model as pbm

CONFIGS = ((192, 128, 112, 10), (256, 128, 80, 8), (64, 192, 128, 32), (96, 192, 112, 20))  # d, rows, keys, heads
LENGTHS = (111, 150, 236, 300, 423, 529, 700, 900, 1071, 1400, 1700, 2048, 2814, 3000, 4023)


def full_rounds(pairs: list[list[int]], n: int, bm: int, bn: int) -> tuple[list[float], list[list[int]]]:
    g = min(len(pairs), pbm.NSM)
    full = len(pairs) // g
    work = [0.0] * g
    for p in range(full * g):
        work[p % g] += sum(pbm.tile_cost(mb, n, bm, bn) for mb in pairs[p])
    return work, pairs[full * g:]


def tail_lpt(pairs: list[list[int]], n: int, bm: int, bn: int) -> float:
    work, tail = full_rounds(pairs, n, bm, bn)
    for c in sorted((pbm.tile_cost(mb, n, bm, bn) for p in tail for mb in p), reverse=True):
        i = min(range(len(work)), key=work.__getitem__)
        work[i] += c
    return max(work) / (sum(work) / len(work))


def tail_deal(pairs: list[list[int]], n: int, bm: int, bn: int) -> float:
    work, tail = full_rounds(pairs, n, bm, bn)
    g = len(work)
    tiles = [p[0] for p in tail] + [p[1] for p in tail if len(p) > 1]
    for u, mb in enumerate(tiles):
        r, c = divmod(u, g)
        work[g - 1 - c if r & 1 else c] += pbm.tile_cost(mb, n, bm, bn)
    return max(work) / (sum(work) / g)


def fed(n: int, slots: int, bm: int, bn: int) -> float:
    costs = [pbm.tile_cost(mb, n, bm, bn) for mb in reversed(range(n)) for _ in range(slots)]
    return band_model.makespan(costs) / (sum(costs) / min(len(costs), pbm.NSM))


def main() -> None:
    lpt, deal = [], []
    fed_by_d: dict[int, list[float]] = {192: [], 256: []}
    print(f"{'shape':22s} {'pairs':>5s} {'v51':>6s} {'LPT':>6s} {'deal':>6s} {'fed':>6s}")
    for d, bm, bn, heads in CONFIGS:
        for s in LENGTHS:
            b = max(1, 16384 // s)
            n = math.ceil(s / bm)
            pairs = pbm.pairs_v51(n, b * heads)
            if not pbm.paired(len(pairs), n, bm):
                continue
            a, x, y = pbm.imbalance(pairs, n, bm, bn), tail_lpt(pairs, n, bm, bn), tail_deal(pairs, n, bm, bn)
            z = fed(n, b * heads, bm, bn)
            lpt.append(x / a)
            deal.append(y / a)
            if d in fed_by_d:
                fed_by_d[d].append(z / a)
            print(f"d{d} s{s} b{b}{'':{14 - len(str(s)) - len(str(b)) - len(str(d))}s} {len(pairs):5d} {a:6.3f} {x:6.3f} "
                  f"{y:6.3f} {z:6.3f}")

    def geo(v: list[float]) -> float:
        return math.exp(sum(map(math.log, v)) / len(v))

    print(f"over v51, {len(lpt)} paired shapes: tail LPT geomean {geo(lpt):.3f} (worst {max(lpt):.3f}), "
          f"tail deal {geo(deal):.3f} (worst {max(deal):.3f})")
    for d, v in fed_by_d.items():
        print(f"d{d} fed over v51, {len(v)} paired shapes: geomean {geo(v):.3f} (worst {max(v):.3f})")


if __name__ == "__main__":
    main()
