"""v41's one-way signals under pingpong, modelled on the CPU (no GPU): random interleavings of the two
consumer warpgroups of a d256 tile loop (turn barriers, kBarLastKRead / kBarLastVRead, asynchronous
products), checking that nothing hangs, that every named-barrier generation completes with both
warpgroups in it (a signal never runs a tile ahead of its wait), and that a warpgroup stages its O into
the last block's K (0) or V (1) buffer only after the other warpgroup's product on it has completed.

A named barrier of count 2 (in warpgroups) completes when both have arrived, by bar.sync (which blocks
until then) or bar.arrive (which does not); the code under test is attend_tile / consumer of .cand/v41.cu.

    python tests/hopper_models/borrowed_o_signal_model.py
"""
from __future__ import annotations

import random


class NamedBarrier:
    def __init__(self, name: str):
        self.name, self.arrived, self.generation = name, [], 0

    def arrive(self, wg: int) -> int:
        self.arrived.append(wg)
        gen = self.generation
        if len(self.arrived) == 2:
            assert sorted(self.arrived) == [0, 1], f"{self.name}: a generation completed by one warpgroup alone"
            self.arrived, self.generation = [], self.generation + 1
        return gen

    def passed(self, gen: int) -> bool:
        return self.generation > gen


class Product:
    """An issued wgmma group: complete some scheduler steps later."""
    def __init__(self):
        self.done = False


def warpgroup(w: int, tiles: list[int], bars: dict, products: list, staged: list, last: dict):
    turn_mine, turn_next = bars[f"turn{w}"], bars[f"turn{1 - w}"]

    def issue(tag):
        p = Product()
        products.append(p)
        last[(w, tag)] = p
        return p

    def begin():
        gen = turn_mine.arrive(w)
        return lambda: turn_mine.passed(gen)

    if w == 1:
        turn_next.arrive(w)  # start(): warpgroup 0 goes first
    for t, n_it in enumerate(tiles):
        yield begin()
        s = issue(("S", t, 0))
        turn_next.arrive(w)
        yield lambda s=s: s.done
        if w == 1 and n_it == 1:
            bars["lastK"].arrive(w)
        pv_prev = None
        for it in range(1, n_it):
            yield begin()
            s = issue(("S", t, it))
            pv_prev = issue(("PV", t, it - 1))
            turn_next.arrive(w)
            yield lambda s=s: s.done
            if w == 1 and it == n_it - 1:
                bars["lastK"].arrive(w)
            yield lambda pv=pv_prev: pv.done
        yield begin()
        pv = issue(("PV", t, n_it - 1))
        turn_next.arrive(w)
        yield lambda pv=pv: pv.done
        if w == 0:
            bars["lastV"].arrive(w)
        # epilogue: wait for the other's signal, then stage into the shared buffer
        gen = bars["lastK" if w == 0 else "lastV"].arrive(w)
        yield lambda b=bars["lastK" if w == 0 else "lastV"], g=gen: b.passed(g)
        other = last[(1, ("S", t, n_it - 1))] if w == 0 else last[(0, ("PV", t, n_it - 1))]
        assert other.done, f"warpgroup {w} staged over a buffer the other's product still reads (tile {t})"
        staged.append((w, t))


def run(tiles: list[int], rng: random.Random) -> None:
    bars = {name: NamedBarrier(name) for name in ("turn0", "turn1", "lastK", "lastV")}
    products, staged, last = [], [], {}
    agents = {warpgroup(w, tiles, bars, products, staged, last): None for w in (0, 1)}
    while agents:
        pending = [p for p in products if not p.done]
        ready = [a for a, cond in agents.items() if cond is None or cond()]
        assert ready or pending, "hang"
        if pending and (not ready or rng.random() < 0.4):
            rng.choice(pending).done = True  # some product completes
            continue
        a = rng.choice(ready)
        try:
            agents[a] = next(a)
        except StopIteration:
            del agents[a]
    assert sorted(staged) == sorted((w, t) for w in (0, 1) for t in range(len(tiles)))


def main() -> None:
    rng = random.Random(41)
    cases = 0
    for _ in range(2000):
        run([rng.randint(1, 4) for _ in range(rng.randint(1, 6))], rng)
        cases += 1
    print(f"v41 signals: {cases} random tile sequences and interleavings, no hang, every generation of both "
          "warpgroups, no staging over a buffer still read")


if __name__ == "__main__":
    main()
