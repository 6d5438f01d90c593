"""The varlen split-KV against full attention, in float64 on the CPU.

    python tests/hopper_models/varlen_split_model.py

Transcribed from flash_attn_fwd.cu: the host's split count (`choose_varlen_splits`) and GQA packing
(`choose_gqa_packing`), each split's share of key blocks (`TileScheduler::decode`: the longest sequence's
share, so a shorter sequence leaves its last splits without keys), the Q box's shift by pack_r
(`tile_start`), which rows a tile owns and where their partials go (`partial_row`), the neutral partial of a
split without keys (O = 0, lse = -inf, from `finalize_rows`), and `fa_combine`'s varlen rows. For each batch
it checks that every (split, head, packed row) partial is written exactly once and that the combined O and
lse equal full attention (causal aligned bottom-right, softcap, rows that see no key); two wrong
transcriptions (the Q box shifted by BM rows, shares that leave keys out) must be caught. It does not model
the kernel's inner loop, barriers or TMA. Exits 1 on any difference.
"""

from __future__ import annotations

import heapq
import itertools
import math
import sys

import numpy as np

BM, NSM = 128, 132
MAX_SPLITS, MIN_BLOCKS_PER_SPLIT, TILE_FIXED_KEYS = 16, 2, 128
VARLEN_SPLIT_SLACK, VARLEN_SPLIT_MIN_GAIN = 0.05, 0.10


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def split_counts(sk_max: int, bn: int) -> range:
    return range(1, max(1, min(cdiv(sk_max, bn) // MIN_BLOCKS_PER_SPLIT, MAX_SPLITS)) + 1)


def worst_case(tiles: int, sk_max: int, bn: int, ns: int) -> float:
    """Key blocks a launch takes with every sequence as long as the longest: split rounds x a split's share."""
    return cdiv(tiles * ns, NSM) * (cdiv(cdiv(sk_max, bn), ns) + TILE_FIXED_KEYS / bn)


def bound_only_splits(tiles: int, sk_max: int, bn: int) -> int:
    """The equal-length bound's choice (the whole rule before lengths spread below the longest counted)."""
    return min(split_counts(sk_max, bn), key=lambda ns: (worst_case(tiles, sk_max, bn, ns), ns))


def choose_varlen_splits(tiles: int, sk_max: int, bn: int) -> int:
    nbk = cdiv(sk_max, bn)
    fixed = TILE_FIXED_KEYS / bn

    def worst(ns: int) -> float:
        return worst_case(tiles, sk_max, bn, ns)

    def spread(ns: int) -> float:  # lengths spread evenly below the longest: list scheduling's bound
        return tiles * (nbk / 2 + ns * fixed) / NSM + cdiv(nbk, ns) + fixed

    bound_best = bound_only_splits(tiles, sk_max, bn)
    best = bound_best
    for ns in split_counts(sk_max, bn):
        if worst(ns) <= (1 + VARLEN_SPLIT_SLACK) * worst(bound_best) and spread(ns) < spread(best):
            best = ns
    return best if spread(best) <= (1 - VARLEN_SPLIT_MIN_GAIN) * spread(bound_best) else bound_best


def tile_start(seq_start: int, seq_len: int, offset: int, box: int) -> tuple[int, int]:
    """The box's first row, pulled back to stay inside the sequence, and how far it was pulled."""
    nominal = seq_start + offset
    start = min(nominal, max(seq_start + seq_len - box, 0))
    return start, nominal - start


def attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, cap: float) -> tuple[np.ndarray, float]:
    s = k @ q
    s = cap * np.tanh(s * scale / cap) if cap else s * scale
    top = s.max()
    p = np.exp(s - top)
    return p @ v / p.sum(), top + math.log(p.sum())


def check(seqlens_q, seqlens_k, hq, hkv, d, bn, causal, cap, seed=0, mutant=None) -> dict:
    rng = np.random.default_rng(seed)
    batch, sq_max, sk_max, group = len(seqlens_q), max(seqlens_q), max(seqlens_k), hq // hkv
    cu_q, cu_k = np.concatenate([[0], np.cumsum(seqlens_q)]), np.concatenate([[0], np.cumsum(seqlens_k)])
    q = rng.standard_normal((cu_q[-1], hq, d))
    k = rng.standard_normal((cu_k[-1], hkv, d))
    v = rng.standard_normal((cu_k[-1], hkv, d))
    scale = 1 / math.sqrt(d)
    pack_g, pack_r, n_mblocks = 1, BM, cdiv(sq_max, BM)
    if 1 < group <= BM:
        r = BM // group
        if cdiv(sq_max, r) * hkv < n_mblocks * hq:
            pack_g, pack_r, n_mblocks = group, r, cdiv(sq_max, r)
    slots = hq // pack_g
    ns = choose_varlen_splits(n_mblocks * slots * batch, sk_max, bn)
    if ns < 2:
        return {"splits": 1}
    rows_q = batch * sq_max  # packed rows a head, bounded by the maxima
    rows = hq * rows_q
    o_part, lse_part = np.full((ns * rows, d), np.nan), np.full(ns * rows, np.nan)
    writes = np.zeros(ns * rows, int)
    empty = 0
    for b, slot, mb, sp in itertools.product(range(batch), range(slots), range(n_mblocks), range(ns)):
        q0, sq, k0, sk = cu_q[b], seqlens_q[b], cu_k[b], seqlens_k[b]
        m0 = mb * pack_r
        if m0 >= sq:
            continue  # a tile past its sequence's rows: decode returns false
        nbk = cdiv(sk, bn)
        if causal:
            lim = min(m0 + pack_r, sq) + sk - sq
            nbk = min(nbk, 0 if lim <= 0 else cdiv(lim, bn))
        share = cdiv(max(nbk, cdiv(sk_max, bn)), ns)
        if mutant == "own_share_floor":  # each sequence's own share, rounded down: keys left out
            share = max(1, nbk // ns)
        lo = min(nbk, sp * share)
        hi = min(nbk, lo + share)
        empty += hi <= lo
        _, shift = tile_start(q0, sq, m0, BM if mutant == "shift_by_bm" else pack_r)
        for m in range(BM):
            g = m // pack_r
            row = m0 - shift + (m - g * pack_r) if g < pack_g else sq
            head = slot * pack_g + (g if g < pack_g else 0)
            if not (m0 <= row < sq and q0 + row < rows_q):
                continue  # shifted in from another tile, past the sequence, or past the packed bound
            keys = [j for j in range(lo * bn, min(hi * bn, sk)) if not causal or j <= row + sk - sq]
            if keys:
                o, lse = attend(q[q0 + row, head], k[k0 + np.array(keys), head // group],
                                v[k0 + np.array(keys), head // group], scale, cap)
            else:
                o, lse = np.zeros(d), -math.inf  # the neutral partial
            index = sp * rows + head * rows_q + q0 + row
            writes[index] += 1
            o_part[index], lse_part[index] = o, lse
    total = cu_q[-1]
    bad = 0
    for index in range(rows):
        i, h = index % rows_q, index // rows_q
        if i >= total:
            continue  # fa_combine skips rows past cu_q[batch]
        if any(writes[s * rows + index] != 1 for s in range(ns)):
            bad += 1
            continue
        lses = np.array([lse_part[s * rows + index] for s in range(ns)])
        if lses.max() == -math.inf:
            out, lse = np.zeros(d), -math.inf
        else:
            lse = lses.max() + math.log(np.exp(lses - lses.max()).sum())
            out = sum(math.exp(lses[s] - lse) * o_part[s * rows + index] for s in range(ns))
        b = int(np.searchsorted(cu_q, i, side="right")) - 1
        r, sq, sk = i - cu_q[b], seqlens_q[b], seqlens_k[b]
        keys = [j for j in range(sk) if not causal or j <= r + sk - sq]
        if not keys:
            bad += not (np.all(out == 0) and lse == -math.inf)
            continue
        want_o, want_lse = attend(q[i, h], k[cu_k[b] + np.array(keys), h // group],
                                  v[cu_k[b] + np.array(keys), h // group], scale, cap)
        bad += not (np.allclose(out, want_o, atol=1e-9) and abs(lse - want_lse) < 1e-9)
    return {"splits": ns, "pack": (pack_g, pack_r), "empty_splits": empty, "bad": bad}


CASES = {
    # decode, GQA 4, causal, sequences from 3 to 1700 keys
    "decode_gqa4": ([2] * 10, [1600, 1500, 1234, 900, 1700, 1111, 1650, 40, 3, 1599], 8, 2, 16, 16, True, 0.0),
    "q1_softcap_gqa2": ([1, 1], [623, 601], 4, 2, 16, 8, False, 50.0),
    "causal_rows_without_keys": ([5, 3, 7], [2, 300, 6], 4, 1, 8, 16, True, 0.0),
    "unpacked_box_shift": ([40, 1, 33], [400, 90, 1], 2, 2, 8, 16, True, 30.0),
    "gqa3": ([20, 3], [500, 700], 6, 2, 8, 16, False, 0.0),
    # packed rows past one box (pack_r 32): the box shifts back from the sequence's start
    "many_sequences": ([2] * 24, [300 + 53 * i for i in range(24)], 8, 2, 8, 16, True, 0.0),
    # the sanitizer suite's san_varlen_decode_split_gqa_d128_causal (its 128-key blocks, a smaller head dim)
    "sanitizer_scenario": ([2, 1, 0, 2], [2600, 600, 37, 1], 8, 2, 8, 128, True, 0.0),
}


def makespan(seqlens_k: list[int], slots: int, bn: int, ns: int) -> float:
    """Key blocks until the last SM is done, for decode tiles (one m-block a sequence) dealt in the launch's
    order (split fastest, then head slot, then sequence) to the first free of NSM SMs. A split costs its
    blocks plus the per-split fixed cost; an empty one a quarter of that (its launch and neutral partials)."""
    fixed = TILE_FIXED_KEYS / bn
    share = cdiv(cdiv(max(seqlens_k), bn), ns)
    free = [0.0] * NSM
    for sk in seqlens_k:
        nbk = cdiv(sk, bn)
        for _slot, sp in itertools.product(range(slots), range(ns)):
            lo = min(nbk, sp * share)
            heapq.heappush(free, heapq.heappop(free) + (fixed + min(nbk, lo + share) - lo if nbk > lo else fixed / 4))
    return max(free)


# Decode batches (keys a sequence, head slots after GQA packing): equal lengths bound what the host may
# lose; lengths spread below the longest are what a serving batch holds.
BATCHES = {
    "equal_128_tiles": ([14000] * 16, 8),
    "spread_128_tiles": ([14000 * (i + 1) // 16 for i in range(16)], 8),
    "equal_30_tiles": ([15000] * 15, 2),
    "spread_30_tiles": ([1000 * (i + 1) for i in range(15)], 2),
    "one_long_many_short": ([16000] + [600] * 40, 1),
}


def main() -> int:
    failed = 0
    for name, (seqlens_k, slots) in BATCHES.items():
        tiles, bn = len(seqlens_k) * slots, 128
        old, new = bound_only_splits(tiles, max(seqlens_k), bn), choose_varlen_splits(tiles, max(seqlens_k), bn)
        before, after = makespan(seqlens_k, slots, bn, old), makespan(seqlens_k, slots, bn, new)
        print(f"{name}: splits {old} -> {new}, makespan {before:.1f} -> {after:.1f} key blocks")
        if after > (1 + VARLEN_SPLIT_SLACK) * before:
            print(f"  {name} loses more than the slack")
            failed += 1
        if name.startswith("spread") and not after < 0.75 * before:
            print(f"  {name} is not a quarter faster")
            failed += 1
    for name, case in CASES.items():
        result = check(*case)
        print(f"{name}: {result}")
        failed += result.get("bad", 0) > 0 or result["splits"] < 2
    sanitizer = check(*CASES["sanitizer_scenario"])
    if not (sanitizer["splits"] == 7 and sanitizer["empty_splits"] > 0 and sanitizer["pack"] == (4, 32)):
        print("the sanitizer scenario no longer launches a packed split with empty splits")
        failed += 1
    # two wrong transcriptions must be caught: v73's box shift by BM rows, and shares that leave keys out
    for mutant in ("shift_by_bm", "own_share_floor"):
        if all(check(*case, mutant=mutant).get("bad", 0) == 0 for case in CASES.values()):
            print(f"mutant {mutant} was not caught")
            failed += 1
    print("all partials written once, combined as full attention; mutants caught; spread batches faster" if not failed
          else f"{failed} checks FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
