"""The varlen schedule's balance, modelled on the CPU (no GPU): v39's static snake against a fed order.

v39 lists a varlen batch's tiles heaviest first (VarlenTable: buckets of BM keys) and deals them in a
snake: in round k CTA c takes position kG + c (k even) or kG + G-1-c (k odd). A fed schedule deals the
same order from a counter: each CTA takes the next position when it is free (list scheduling). Printed
for each varlen scenario of the suite and for shapes of the task's hold-out generator (seeds 1000-1199,
not the seeds judged): the makespan of each, over the lower bound max(heaviest tile, total work / G).

Cost of a tile: `c0` + its key blocks (one block = 1; a tile that sees no key costs `c_empty`: it writes
zeros and -inf). c0 and c_empty are in key blocks; the defaults are d256's (BM 128, BN 64: a block ~1.7 us,
a tile's Q load and epilogue ~3 us, a keyless tile's zero store ~1.5 us), not fitted.

    python tests/hopper_models/varlen_schedule_model.py [--head-dim 256]
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import kernelseek  # noqa: E402
from kernelseek.harness import load_task  # noqa: E402

# the sibling models, found from the package's checkout (a mutant copy of this file runs elsewhere)
sys.path.insert(0, str(Path(kernelseek.__file__).resolve().parents[1] / "tests" / "hopper_models"))
import band_model  # noqa: E402  (its makespan: list scheduling over the SMs)
import varlen_table_replay  # noqa: E402  (its port of the kernel's varlen table and decode)

NSM = 132
BM = 128
BN_OF = {64: 128, 96: 128, 128: 128, 192: 112, 256: 64}


def varlen_order(seqlens_q: list[int], seqlens_k: list[int], heads: int, causal: bool) -> list[tuple[int, int, int]]:
    """(batch, head, m-block) in VarlenTable's order: buckets heaviest first, sequences, then heads."""
    sk_max = max(seqlens_k)
    seqs = []
    for sq_b, sk_b in zip(seqlens_q, seqlens_k, strict=True):
        seqs.append(((sk_max - sk_b) // BM, (sq_b + BM - 1) // BM))
    buckets = sk_max // BM + max(n for _, n in seqs)
    order = []
    for u in range(buckets):
        for b, (s, n) in enumerate(seqs):
            if causal and s <= u < s + n:
                order += [(b, h, n - 1 - (u - s)) for h in range(heads)]
            elif not causal and u == s:
                order += [(b, i // n, i % n) for i in range(n * heads)]
    return order


def decode_positions(p: dict) -> list[tuple[int, int, int]] | None:
    """(batch, head, m-block) of every position 0 .. vl_tiles - 1 through varlen_table_replay's port of the kernel's
    build_varlen_table and TileScheduler::varlen_tile (unchanged since v16), which the fed schedule (v53)
    takes as the counter gives them; None beyond the table's capacities (no varlen schedule)."""
    D = varlen_table_replay.host(p)
    if not D["U"]:
        return None
    seq, cum = varlen_table_replay.build_table(D)
    return [varlen_table_replay.varlen_tile(D, seq, cum, pos) for pos in range(cum[D["U"] - 1] * D["hq"])]


def check_decode(shapes: list[tuple[str, dict]]) -> int:
    """The ported decode lists exactly the order above (every tile once, heaviest first), on every shape."""
    checked = 0
    for name, p in shapes:
        got = decode_positions(p)
        if got is None:
            continue
        want = varlen_order(p["seqlens_q"], p["seqlens_k"], p["heads_q"], p["causal"])
        assert got == want, f"{name}: the decode's positions differ from the table's order"
        assert len(set(got)) == len(got) == sum((q + BM - 1) // BM for q in p["seqlens_q"]) * p["heads_q"], name
        checked += 1
    return checked


def tile_blocks(sq_b: int, sk_b: int, mb: int, causal: bool, bn: int) -> int:
    last_row = min(sq_b, (mb + 1) * BM) - 1
    keys = min(sk_b, max(0, last_row + sk_b - sq_b + 1)) if causal else sk_b
    return math.ceil(keys / bn)


def makespans(p: dict, bn: int, c0: float, c_empty: float) -> tuple[float, float, float]:
    lq, lk = p["seqlens_q"], p["seqlens_k"]
    order = varlen_order(lq, lk, p["heads_q"], p["causal"])
    costs = []
    for b, _, mb in order:
        blocks = tile_blocks(lq[b], lk[b], mb, p["causal"], bn)
        costs.append(c0 + blocks if blocks else c_empty)
    g = min(NSM, len(costs))
    snake = [0.0] * g
    for pos, c in enumerate(costs):
        rnd, i = divmod(pos, g)
        snake[g - 1 - i if rnd & 1 else i] += c
    bound = max(max(costs), sum(costs) / g)
    return max(snake), band_model.makespan(costs), bound


def varlen_shapes(head_dim: int, n: int) -> list[tuple[str, dict]]:
    """The suite's varlen scenarios of this head dim, then up to n of the hold-out generator's (seeds 1000 on:
    never judged; the judged hold-out seeds are 1-11)."""
    task = load_task("flash_attn_fwd")
    out = [(s.name, s.params) for s in task.scenarios("sm90")
           if s.params.get("layout") == "varlen" and s.params["head_dim"] == head_dim]
    found = 0
    for seed in range(1000, 1200):
        for s in task.holdout("sm90", 24, seed):
            if found < n and s.params["layout"] == "varlen" and s.params["head_dim"] == head_dim:
                out.append((s.name.replace("holdout_", "gen_"), s.params))
                found += 1
        if found >= n:
            break
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--head-dim", type=int, default=256)
    ap.add_argument("--c0", type=float, default=1.8, help="a tile's fixed cost, in key blocks")
    ap.add_argument("--c-empty", type=float, default=0.9, help="a keyless tile's cost, in key blocks")
    ap.add_argument("--generated", type=int, default=12, help="generator shapes to add")
    a = ap.parse_args()
    bn = BN_OF[a.head_dim]
    checked = check_decode([x for d in BN_OF for x in varlen_shapes(d, 40)])
    print(f"decode: every tile exactly once, in the table's order, on {checked} varlen shapes")
    print(f"d{a.head_dim}: BM {BM}, BN {bn}, c0 {a.c0}, c_empty {a.c_empty} (key blocks); makespan / bound")
    print(f"{'shape':58s} {'tiles':>5s} {'snake':>6s} {'fed':>6s} {'fed/snake':>9s}")
    ratios = []
    for name, p in varlen_shapes(a.head_dim, a.generated):
        snake, fed, bound = makespans(p, bn, a.c0, a.c_empty)
        tiles = len(varlen_order(p["seqlens_q"], p["seqlens_k"], p["heads_q"], p["causal"]))
        ratios.append(fed / snake)
        print(f"{name[:58]:58s} {tiles:5d} {snake / bound:6.3f} {fed / bound:6.3f} {fed / snake:9.3f}")
    print(f"geomean fed/snake: {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}")


if __name__ == "__main__":
    main()
