"""v44's band order for one-CTA-per-tile causal grids, modelled on the CPU (no GPU).

1. The decode (a port of TileScheduler::decode's band branch, short band first) visits every (m-block,
   slot) of a grid exactly once, for band sizes that divide the slots and that do not.
2. In-order dispatch of the tiles to the SMs (a CTA starts on the first SM that is free: greedy list
   scheduling) and the makespan against total work / SMs, for v39's rule (bands below 8 waves, head by
   head above) and v44's (bands at any wave count, at least kBandMinWaves waves of tiles a band, the short
   band first). A tile of m-block mb walks mb + 1 key blocks (square causal, BM = BN) plus a fixed cost c0.
   Shapes whose pairs the launcher picks (choose_grid's pairing rule, unchanged) are not band-scheduled
   by either version; the table says so.

    python tests/hopper_models/band_model.py
"""
from __future__ import annotations

import heapq
import math

NSM, L2_BYTES, L2_FRACTION, MIN_WAVES, OLD_MAX_WAVES = 132, 50 << 20, 4, 2, 8


def decode_band(t: int, n_mblocks: int, slots: int, band: int) -> tuple[int, int]:
    """(m-block, slot) of tile t: bands of `band` slots, the short one first, heavy first in a band."""
    short_nh = slots % band
    if t < short_nh * n_mblocks:
        band0, nh = 0, short_nh
    else:
        band0 = short_nh + (t - short_nh * n_mblocks) // (n_mblocks * band) * band
        nh = band
    r = t - band0 * n_mblocks
    return n_mblocks - 1 - r // nh, band0 + r % nh  # causal: the heaviest m-block first


def decode_old(t: int, n_mblocks: int, slots: int, band: int) -> tuple[int, int]:
    """v39: bands with the short one last, or (band 0) head by head."""
    if band > 0:
        band0 = t // (n_mblocks * band) * band
        nh = min(band, slots - band0)
        r = t - band0 * n_mblocks
        return n_mblocks - 1 - r // nh, band0 + r % nh
    return n_mblocks - 1 - t % n_mblocks, t // n_mblocks


def l2_band(kv_bytes_per_head: int, group: int, slots: int) -> int:
    kv_heads = L2_BYTES // L2_FRACTION // kv_bytes_per_head
    return max(kv_heads, 1) * group


def band_v39(tiles: int, kv: int, group: int, slots: int) -> int:
    if tiles >= OLD_MAX_WAVES * NSM:
        return 0
    band = min(l2_band(kv, group, slots), slots)
    return band if band > 1 else 0


def band_v44(n_mblocks: int, kv: int, group: int, slots: int) -> int:
    band = l2_band(kv, group, slots)
    min_slots = math.ceil(MIN_WAVES * NSM / n_mblocks)
    if band < min_slots:
        band = math.ceil(min_slots / group) * group
    band = min(band, slots)
    return band if band > 1 else 0


def paired(n_mblocks: int, slots: int) -> bool:
    """choose_grid's pairing rule for a square causal shape (kTileFixedKeys = 128)."""
    pairs = (n_mblocks + 1) // 2 * slots
    loss = NSM * math.ceil(pairs / NSM) / pairs - 1
    mean_keys = sum(min((m + 1) * 128, n_mblocks * 128) for m in range(n_mblocks)) / n_mblocks
    return loss <= 128 / mean_keys


def makespan(costs: list[float]) -> float:
    free = [0.0] * NSM
    for c in costs:
        heapq.heappush(free, heapq.heappop(free) + c)
    return max(free)


def check_bijection() -> int:
    checked = 0
    for n_mblocks in (1, 2, 3, 7, 16, 64):
        for slots in range(1, 40):
            for band in range(1, slots + 1):
                seen = {decode_band(t, n_mblocks, slots, band) for t in range(n_mblocks * slots)}
                assert seen == {(m, s) for m in range(n_mblocks) for s in range(slots)}, (n_mblocks, slots, band)
                checked += 1
    return checked


def main() -> None:
    print(f"decode: every tile exactly once in {check_bijection()} (m-blocks, slots, band) cases")
    print(f"{'shape (causal, BM = BN = 128)':34s} waves  band v39/v44  makespan / ideal: v39    v44   (c0 = 1.5 blocks)")
    for d, s, b, h, g in [(128, 8192, 2, 16, 1), (64, 8192, 2, 32, 1), (128, 16384, 1, 16, 1), (256, 4096, 4, 8, 1),
                          (192, 8192, 2, 10, 1), (128, 12000, 1, 16, 1), (96, 9000, 1, 20, 1), (128, 8192, 2, 32, 4),
                          (256, 16384, 1, 8, 1), (64, 16384, 1, 32, 1), (192, 3000, 5, 10, 1), (128, 20000, 1, 16, 2), (128, 4096, 4, 16, 1),
                          (64, 2048, 8, 32, 1)]:
        n_mblocks, slots = math.ceil(s / 128), b * h
        tiles, kv = n_mblocks * slots, 2 * s * d * 2
        if paired(n_mblocks, slots):
            print(f"d{d} s{s} b{b} h{h}: paired (neither version bands it)")
            continue
        old, new = band_v39(tiles, kv, g, slots), band_v44(n_mblocks, kv, g, slots)
        cost = lambda mb: 1.5 + mb + 1  # noqa: E731
        ideal = sum(cost(m) for m in range(n_mblocks)) * slots / NSM
        spans = [makespan([cost(dec(t, n_mblocks, slots, band)[0]) for t in range(tiles)]) / ideal
                 for dec, band in ((decode_old, old), (decode_band if new else decode_old, new))]
        print(f"d{d} s{s} b{b} h{h}{f' g{g}' if g > 1 else '':4s}{'':>12s}{tiles / NSM:5.1f}  {old:4d} / {new:<4d}"
              f"{'':16s}{spans[0]:.3f}  {spans[1]:.3f}")


if __name__ == "__main__":
    main()
