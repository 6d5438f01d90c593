"""GQA packing of causal prefills, counted on the CPU: what packing saves in tiles and key blocks, beside
the times an H100 sweep measured for the same shapes packed and unpacked (kernels/hopper/LAB.md, 2026-12-08).

choose_gqa_packing fills a tile of bm rows with g query heads' r = bm // g rows each (the g heads share a
KV head) wherever that makes fewer tiles. A causal tile of rows [m0, m0 + r) runs the key blocks its last
row sees, ceil(min(m0 + r, sq) / bn) (square shapes), for all of its rows. The pair schedule deals the
m-blocks of each head slot in heavy/light pairs (pair_balance_model.py's port of TileScheduler::decode);
its busiest CTA sets the launch's time (the walk must deal every tile once: it fails otherwise); where
choose_grid does not pair, one CTA a tile, heavy first, as band_model.py schedules them. Printed per
shape: tiles, key blocks and the busiest CTA's key blocks and tiles, unpacked and packed, and the measured
times with the cost a packed tile adds beyond its key blocks (the time's change less the busiest CTA's
change in key blocks at the unpacked launch's time a block, over its tiles).

    python tests/hopper_models/gqa_pack_model.py
"""
from __future__ import annotations

import math

from band_model import makespan
from pair_balance_model import NSM, decode_v51, n_pairs_v51, paired

# name, tile rows, key block, query heads, KV heads, batch, seqlen (square, causal),
# measured us unpacked and packed (H100, benchmarks/sweep_shapes.py, one call)
SHAPES = [
    ("d128 h40/8 b11 q719", 128, 128, 40, 8, 11, 719, 158.8, 185.6),
    ("d128 h64/8 b10 q600", 128, 128, 64, 8, 10, 600, 176.6, 192.9),
    ("d64 h32/8 b4 q2048 (tall)", 192, 128, 32, 8, 4, 2048, 202.3, 190.8),
]


def key_blocks(mb: int, r: int, sq: int, bn: int) -> int:
    """Key blocks of the causal tile of m-block mb, r rows of each head (square: keys = rows)."""
    return math.ceil(min((mb + 1) * r, sq) / bn)


def launch(slots: int, r: int, sq: int, bn: int) -> dict[str, float]:
    """Tiles and key blocks of a launch of `slots` head slots, r rows a slot a tile, and its busiest CTA's
    (SM's) key blocks and tiles. Paired (choose_grid's rule): tile t goes to CTA t % G, as
    TileScheduler::decode deals the pairs, rounds of heavy then light. Otherwise one CTA a tile,
    dispatched heavy first to the first free SM (band_model's list scheduling; its tiles: the mean)."""
    n = math.ceil(sq / r)
    blocks = slots * sum(key_blocks(m, r, sq, bn) for m in range(n))
    pairs = n_pairs_v51(n, slots)
    if not paired(pairs, n, r):
        costs = sorted((key_blocks(m, r, sq, bn) for m in range(n) for _ in range(slots)), reverse=True)
        return {"tiles": n * slots, "blocks": blocks, "paired": False, "cta_blocks": makespan(costs),
                "cta_tiles": n * slots / NSM}
    grid = min(pairs, NSM)
    work, tiles = [0] * grid, [0] * grid
    for t in range(2 * grid * ((pairs + grid - 1) // grid)):
        rnd = t // grid
        pair = (rnd // 2) * grid + t % grid
        tile = decode_v51(pair, rnd & 1, n, slots) if pair < pairs else None
        if tile is not None:
            work[t % grid] += key_blocks(tile[1], r, sq, bn)
            tiles[t % grid] += 1
    assert sum(tiles) == n * slots and sum(work) == blocks, f"the walk dealt {sum(tiles)} of {n * slots} tiles"
    busiest = max(range(grid), key=lambda c: work[c])
    return {"tiles": n * slots, "blocks": blocks, "paired": True, "cta_blocks": work[busiest],
            "cta_tiles": tiles[busiest]}


def main() -> None:
    for name, bm, bn, hq, hkv, b, sq, t_plain, t_packed in SHAPES:
        g = hq // hkv
        r = bm // g
        plain, packed = launch(hq * b, bm, sq, bn), launch(hkv * b, r, sq, bn)
        assert packed["tiles"] < plain["tiles"], f"{name}: choose_gqa_packing would not pack it"
        per_tile = (t_packed - t_plain - (packed["cta_blocks"] - plain["cta_blocks"]) * t_plain / plain["cta_blocks"])
        ways = [f"{w}: {x['tiles']} tiles, {x['blocks']} key blocks, "
                + (f"busiest CTA {x['cta_blocks']} in {x['cta_tiles']} tiles" if x["paired"] else
                   f"one CTA a tile, busiest SM {x['cta_blocks']:.0f} in ~{x['cta_tiles']:.1f} tiles")
                for w, x in (("unpacked", plain), (f"packed (r = {r})", packed))]
        print(f"{name:27s} {'; '.join(ways)}; measured {t_plain} -> {t_packed} us, "
              f"{per_tile / packed['cta_tiles']:+.2f} us a packed tile")

if __name__ == "__main__":
    main()
