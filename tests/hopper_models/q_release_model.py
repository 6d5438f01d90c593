"""v43's early Q release and deferred release of the staged O buffer, modelled on the CPU (no GPU): random
interleavings of the producer and the two consumer warpgroups of a d192 CTA (2-stage K/V ring, O staged in
the last block's K (warpgroup 0) and V (warpgroup 1) buffers, released at the next tile's Q arrival),
checking that nothing hangs and that the producer never loads into a buffer a warpgroup still reads or
still has its O staged in. Barrier counts are in warpgroups (the code's 4 warps each arrive together).

    python tests/hopper_models/q_release_model.py
"""
from __future__ import annotations

import random

STAGES = 2


class Mbarrier:
    def __init__(self, count: int):
        self.count, self.pending, self.phase = count, count, 0

    def arrive(self, n: int = 1) -> None:
        self.pending -= n
        assert self.pending >= 0
        if self.pending == 0:
            self.phase += 1
            self.pending = self.count

    def done(self, parity: int) -> bool:
        return (self.phase & 1) != parity


def producer(tiles, bars, busy):
    qc, stage, phase = 0, 0, 0
    for n_it in tiles:
        if n_it == 0:  # a tile without key blocks loads no Q
            continue
        yield lambda q=qc: bars["q_empty"].done((q & 1) ^ 1)
        qc += 1
        assert not busy[("q", 0)], f"Q loaded while {busy[('q', 0)]} read it"
        bars["q_full"].arrive()
        for _ in range(n_it):
            for kind in ("k", "v"):
                yield lambda s=stage, ph=phase, k=kind: bars[f"{k}_empty{s}"].done(ph ^ 1)
                assert not busy[(kind, stage)], f"load into {kind}{stage} while {busy[(kind, stage)]} use it"
                bars[f"{kind}_full{stage}"].arrive()
            stage += 1
            if stage == STAGES:
                stage, phase = 0, phase ^ 1


def consumer(w, tiles, bars, busy, meet):
    qc, stage, phase = 0, 0, 0
    stored = None  # (kind, stage) whose O store may still read it

    def release(kind, s):  # this warpgroup's reads of the buffer, and its O store's, are over
        busy[(kind, s)].discard(w)
        busy[(kind, s)].discard(f"O of warpgroup {w}")
        bars[f"{kind}_empty{s}"].arrive()

    for n_it in tiles:
        if n_it == 0:  # no Q, no products: the O store's buffer goes back at once; zeros stored directly
            if stored:
                release(*stored)
                stored = None
            yield None
            continue
        yield lambda q=qc: bars["q_full"].done(q & 1)  # v43: the last store's read overlaps this Q
        if stored:
            release(*stored)
            stored = None
        yield None
        qc += 1
        ks = vs = (stage, phase)
        held = None
        for it in range(n_it):
            s, ph = ks
            yield lambda s=s, ph=ph: bars[f"k_full{s}"].done(ph)
            busy[("k", s)].add(w)
            busy[("q", 0)].add(w)
            yield None  # the S product reads Q and K
            busy[("q", 0)].discard(w)
            if it == n_it - 1 and w == 0:
                held = ("k", s)  # warpgroup 0 keeps the last K for its O
            else:
                release("k", s)
            if it == n_it - 1:
                bars["q_empty"].arrive()  # v43: Q released at the last S product
            s, ph = vs
            yield lambda s=s, ph=ph: bars[f"v_full{s}"].done(ph)
            busy[("v", s)].add(w)
            yield None  # the P V product reads V
            if it == n_it - 1 and w == 1:
                held = ("v", s)
            else:
                release("v", s)
            ks = vs = ((s + 1) % STAGES, ph ^ (1 if s + 1 == STAGES else 0))
        stage, phase = ks
        gen = meet.arrive_wg(w)  # both warpgroups' products are done with the last block
        yield lambda g=gen: meet.generation > g
        busy[held].discard(w)
        busy[held].add(f"O of warpgroup {w}")  # staged O, read by its TMA store until the release
        yield None
        stored = held
    if stored:  # the kernel's end
        release(*stored)


class Meet:
    def __init__(self):
        self.arrived, self.generation = 0, 0

    def arrive_wg(self, w):
        gen = self.generation
        self.arrived += 1
        if self.arrived == 2:
            self.arrived, self.generation = 0, self.generation + 1
        return gen


def run(tiles, rng):
    bars = {"q_full": Mbarrier(1), "q_empty": Mbarrier(2)}
    for s in range(STAGES):
        for k in ("k", "v"):
            bars[f"{k}_full{s}"], bars[f"{k}_empty{s}"] = Mbarrier(1), Mbarrier(2)
    busy = {(k, s): set() for k in ("k", "v") for s in range(STAGES)}
    busy[("q", 0)] = set()
    meet = Meet()
    agents = {producer(tiles, bars, busy): None}
    agents.update({consumer(w, tiles, bars, busy, meet): None for w in (0, 1)})

    while agents:
        ready = [a for a, cond in agents.items() if cond is None or cond()]
        assert ready, "hang"
        a = rng.choice(ready)
        try:
            agents[a] = next(a)
        except StopIteration:
            del agents[a]


def main():
    rng = random.Random(43)
    for _ in range(3000):
        run([rng.choice((0, 1, 1, 2, 3, 4)) for _ in range(rng.randint(1, 6))], rng)
    print("v43 releases: 3000 random tile sequences (0-4 key blocks a tile) and interleavings, no hang, no load "
          "into a buffer in use")


if __name__ == "__main__":
    main()
