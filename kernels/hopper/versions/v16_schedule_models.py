"""Cost-model makespans of four varlen schedules over the suite's and hold-outs' varlen shapes, with
v16_replay's model (its COST_* constants are assumptions, not measurements): v15 (one CTA per tile of
the maxima, in-order dispatch), v16 (persistent, heaviest-first list dealt in a snake), a dynamic
counter over the same list (greedy: each CTA takes the next tile when it frees up; v16r, not built:
see NOTES), and a non-persistent heaviest-first grid (real tiles first, the empty CTAs trailing),
with and without a per-CTA table-build cost.

Usage: PYTHONPATH=<worktree> python kernels/hopper/versions/v16_schedule_models.py"""
import heapq
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import v16_replay as r  # noqa: E402


def greedy(costs, machines):
    free = [0.0] * machines
    heapq.heapify(free)
    for c in costs:
        heapq.heappush(free, heapq.heappop(free) + c)
    return max(free)


def main():
    named = [s for s in r.scenarios() if s["params"]["layout"] == "varlen"]
    for seed in (1, 2, 3):
        named += [s for s in r.scenarios("--holdout", "24", "--holdout-seed", str(seed))
                  if s["params"]["layout"] == "varlen"]
    for build in (0.0, 0.5):
        print(f"non-persistent: table build {build} block a CTA")
        for s in named:
            D = r.host(s["params"])
            if not (D["main"] and D["U"]):
                continue
            m15, m16 = r.makespans(D)
            seq, cum = r.build_table(D)
            tiles = [r.varlen_tile(D, seq, cum, pos) for pos in range(cum[D["U"] - 1] * D["hq"])]
            dyn = greedy([r.tile_cost(D, t) for t in tiles], D["grid16"]) + r.COST_CTA_LAUNCH
            nonp = greedy([r.COST_CTA_LAUNCH + build + r.tile_cost(D, t) for t in tiles]
                          + [r.COST_EMPTY_CTA] * (D["grid15"] - len(tiles)), r.NSM)
            print(f"  {s['name']:52s} v15 {m15:7.1f} v16 {m16:7.1f} dynamic {dyn:7.1f} non-persistent {nonp:7.1f}")


if __name__ == "__main__":
    main()
