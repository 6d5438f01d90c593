"""The producer's load order against the consumers' use of K and V, on the CPU (no GPU): a timing model of
one tile's key-block loop (attend_tile: block it's S product issued with block it-1's P V, the warpgroups
taking turns, the tensor cores running one product at a time) fed by one producer thread that issues its
TMA loads in a fixed order, each into a ring buffer once every consumer warpgroup has released that
buffer's previous block.

Two orders: pairs (K(nb), V(nb), K(nb-1), ...) and K a block ahead (K(nb), K(nb-1), V(nb), K(nb-2),
V(nb-1), ...). For each it prints the time the consumers wait for K and V to land, at load latencies of
2-8 products (a key block is two products a warpgroup: 4 with two consumers, 6 with three), and checks
that neither order can hang (a load waiting for a release that only a later load makes possible). A
load's latency is in units of a tensor-core product; the real latency of a 24-32 KB TMA load from L2 is
~1 us, a d64-d128 key block's products 1.1-1.3 us a CTA.

    python tests/hopper_models/load_order_model.py      # prints the table and "ok: ..."
"""

from __future__ import annotations

import sys


def loads(order: str, n: int) -> list[tuple[str, int]]:
    """The producer's loads of one tile, blocks numbered in the order the consumers use them (0 first)."""
    if order == "pairs":
        return [(kind, j) for j in range(n) for kind in ("K", "V")]
    seq = [("K", 0)]
    for j in range(n):
        seq += [("K", j + 1), ("V", j)] if j + 1 < n else [("V", j)]
    return seq


def simulate(order: str, n: int, wgs: int, stages: int, latency: float, t_qk: float = 1.0, t_pv: float = 1.0,
             t_softmax: float = 1.5) -> tuple[float, float, float]:
    """Returns (the tile's end, the consumers' summed wait for K, for V). Raises RuntimeError on a hang."""
    seq = loads(order, n)
    released: dict[tuple[str, int], list[float]] = {}  # (kind, block) -> release times, one a warpgroup
    arrival: dict[tuple[str, int], float] = {}
    issued_upto = [0, 0.0]  # loads issued so far, the producer's time

    def land(kind: str, j: int) -> float:
        """Issue the producer's loads in order up to (kind, j); its arrival time."""
        while (kind, j) not in arrival:
            i = issued_upto[0]
            if i >= len(seq):
                raise RuntimeError(f"{order}: {kind}{j} is never loaded")
            k2, j2 = seq[i]
            t = issued_upto[1]
            prev = (k2, j2 - stages)  # the block whose buffer this load reuses
            if j2 - stages >= 0:
                rel = released.get(prev, [])
                if len(rel) < wgs:
                    raise RuntimeError(f"{order}: {k2}{j2} waits for {prev} before the consumers can release it")
                t = max(t, max(rel))
            arrival[(k2, j2)] = t + latency
            issued_upto[:] = [i + 1, t]
        return arrival[(kind, j)]

    tc_free = 0.0           # the tensor cores run one product at a time
    turn_free = 0.0         # the end of the previous warpgroup's turn
    ready = [0.0] * wgs     # each warpgroup's time when it reaches its next turn
    pv_done = [0.0] * wgs
    wait_k = wait_v = 0.0
    for it in range(n + 1):
        for w in range(wgs):
            t = max(ready[w], turn_free)
            s_done = None
            if it < n:  # S of block it
                k_at = land("K", it)
                wait_k += max(0.0, k_at - t)
                t = max(t, k_at)
                start = max(t, tc_free)
                s_done = tc_free = start + t_qk
            if it > 0:  # P V of block it-1
                v_at = land("V", it - 1)
                wait_v += max(0.0, v_at - t)
                t = max(t, v_at)
                start = max(t, tc_free)
                pv_done[w] = tc_free = start + t_pv
            turn_free = t
            if s_done is not None:
                released.setdefault(("K", it), []).append(s_done)
                soft_end = s_done + t_softmax
            else:
                soft_end = t
            if it > 0:
                end = max(soft_end, pv_done[w])
                released.setdefault(("V", it - 1), []).append(end)
                ready[w] = end
            else:
                ready[w] = soft_end
    return max(ready), wait_k, wait_v


def main() -> int:
    print("wgs stages latency | pairs: end, wait K, wait V | K ahead: end, wait K, wait V")
    later = earlier = 0
    for wgs in (2, 3):
        for stages in (2, 3):
            for latency in (2.0, 3.0, 4.0, 6.0, 8.0):
                rows = [simulate(order, 16, wgs, stages, latency) for order in ("pairs", "kfirst")]
                (e0, k0, v0), (e1, k1, v1) = rows
                print(f"{wgs:3d} {stages:6d} {latency:7.1f} | {e0:6.1f} {k0:6.1f} {v0:6.1f} | {e1:6.1f} {k1:6.1f} {v1:6.1f}")
                later += e1 > e0 + 1e-9
                earlier += e1 < e0 - 1e-9
    for order in ("pairs", "kfirst"):  # no hang on any tile length
        for n in range(1, 12):
            for wgs in (2, 3):
                for stages in (2, 3):
                    simulate(order, n, wgs, stages, 2.0)
    if later or not earlier:
        print(f"K ahead ends a tile later in {later} cases, earlier in {earlier}", file=sys.stderr)
        return 1
    print(f"ok: neither order hangs on tiles of 1-11 blocks; K ahead ends a tile earlier in {earlier} of 20 cases, "
          "later in none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
