"""The fed-tile protocol, modelled on the CPU (no GPU): random interleavings of every CTA's producer and
consumer warps over mbarriers with the hardware's parity semantics, checking that no interleaving hangs,
that every tile is computed exactly once, that every consumer warp reads each published index before
the producer overwrites it, and that the Q a warp computes with is its own tile's.

The model follows flash_attn_fwd.cu (producer<C, true>, consumer<C, true>, attend_tile's q_full wait and
q_empty release): per CTA one producer and W consumer warps. The producer publishes a tile's index and
arrives on tile_full (1 arrival) before it issues the tile's Q, whose bytes complete q_full (1 arrival)
later; a tile without key blocks, and the -1 that ends the feed, complete q_full by a plain arrival. A
consumer warp waits on tile_full, reads the index and decodes it while Q is in flight, and waits on
q_full (the same phase count) only for a tile with key blocks. q_empty counts W: a work tile's consumer
warp releases it after its last S product; a tile without key blocks at once.

    python tests/hopper_models/feed_protocol_model.py
"""
from __future__ import annotations

import random


class Mbarrier:
    def __init__(self, count: int):
        self.count, self.pending, self.phase = count, count, 0

    def arrive(self) -> None:
        self.pending -= 1
        if self.pending == 0:
            self.phase += 1
            self.pending = self.count

    def done(self, parity: int) -> bool:
        """try_wait.parity: the phase of this parity has completed (the current one has the other parity)."""
        return (self.phase & 1) != parity


class Cta:
    def __init__(self, warps: int):
        self.tile_full, self.q_full, self.q_empty = Mbarrier(1), Mbarrier(1), Mbarrier(warps)
        self.next_tile = None
        self.published: list[int] = []
        self.q_of_phase: list[int] = []  # the tile whose Q (or plain arrival) completed each q_full phase


def producer(cta: Cta, feed: dict, tiles: int, keyless: set[int], log: list):
    qcount = 0

    def fetch() -> int:
        t = feed["next"]
        feed["next"] += 1
        return t if t < tiles else -1

    t = fetch()
    while True:
        yield lambda q=qcount: cta.q_empty.done((q & 1) ^ 1)
        qcount += 1
        cta.next_tile = t
        cta.published.append(t)
        cta.tile_full.arrive()
        yield None  # Q in flight (or nothing to load)
        cta.q_of_phase.append(t)
        cta.q_full.arrive()  # Q's bytes, or a plain arrival
        if t < 0:
            break
        log.append(("issued", t))
        yield None
        t = fetch()
    feed["done"] += 1


def consumer_warp(cta: Cta, keyless: set[int], reads: list, computed: list):
    qcount = 0
    while True:
        yield lambda q=qcount: cta.tile_full.done(q & 1)
        t = cta.next_tile
        reads.append(t)
        if t < 0:
            return
        if t in keyless:
            qcount += 1
            cta.q_empty.arrive()
        else:
            yield lambda q=qcount: cta.q_full.done(q & 1)  # attend_tile's wait for Q
            landed = cta.q_of_phase[qcount] if qcount < len(cta.q_of_phase) else None
            assert landed == t, f"a warp computed tile {t} with the Q of {landed}"
            yield None  # the S products
            qcount += 1
            cta.q_empty.arrive()  # at the last S product
            yield None  # softmax, P V, epilogue
        computed.append(t)
        yield None


def run(ctas: int, warps: int, tiles: int, keyless: set[int], rng: random.Random) -> None:
    feed = {"next": 0, "done": 0}
    log: list = []
    agents, consumers = [], []
    for _ in range(ctas):
        cta = Cta(warps)
        agents.append(producer(cta, feed, tiles, keyless, log))
        for _ in range(warps):
            reads: list = []
            computed: list = []
            consumers.append((cta, reads, computed))
            agents.append(consumer_warp(cta, keyless, reads, computed))
    waiting = {a: None for a in agents}
    while waiting:
        ready = [a for a, cond in waiting.items() if cond is None or cond()]
        assert ready, f"hang: {len(waiting)} agents wait with nothing runnable"
        a = rng.choice(ready)
        try:
            waiting[a] = next(a)
        except StopIteration:
            del waiting[a]
    assert feed["done"] == ctas
    for cta, reads, _ in consumers:
        assert reads == cta.published, "a warp read an index other than the one published for its phase"
    # every tile computed by exactly one CTA (each of its warps computes its rows of it)
    per_cta = {}
    for cta, _, computed in consumers:
        per_cta.setdefault(id(cta), computed)
        assert computed == per_cta[id(cta)]
    done = sorted(t for computed in per_cta.values() for t in computed)
    assert done == list(range(tiles)), "a tile computed twice or never"


def main() -> None:
    rng = random.Random(49)
    cases = 0
    for ctas, warps, tiles in [(1, 8, 1), (1, 8, 5), (3, 8, 2), (4, 8, 17), (8, 8, 64), (5, 12, 40), (16, 8, 7)]:
        for _ in range(60):
            keyless = {t for t in range(tiles) if rng.random() < 0.25}
            run(ctas, warps, tiles, keyless, rng)
            cases += 1
    print(f"fed-tile protocol: {cases} random interleavings, no hang, every tile once, every index read in its phase, "
          "every tile computed with its own Q")


if __name__ == "__main__":
    main()
