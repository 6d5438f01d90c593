"""Replay of v15's host decisions (fixed length: GQA packing, wide tile, splits, the keyless-row fill,
the grid) and of its device index maps (TileScheduler::decode, fa_fill_empty's grid-stride loops), for an
H200 (132 SMs, 50 MiB L2). For every shape it lists it counts how often each (batch, head, row[, split])
of O and of lse is written and fails unless every one is written exactly once. v14b's host
decisions are v15's (v14a changed no host rule).

Usage: PYTHONPATH=<worktree> python tests/hopper_models/launch_replay.py   (runs `kernelseek scenarios` for the suite and
the hold-outs of seeds 1-3, prints which take the fill path, checks them, the extra shapes, and a
control sample of suite shapes that do not take it). Exit status 1 when any check fails."""
import json
import subprocess
import sys

import numpy as np

BM, NSM, L2 = 128, 132, 50 << 20
K_MAX_SPLITS, K_MIN_BLOCKS_PER_SPLIT, K_WORKSPACE = 16, 2, 64 << 20
K_TILE_FIXED_KEYS, K_WIDE_MIN_MEAN_KEYS, K_BAND_MAX_WAVES, K_BAND_L2_FRACTION = 128, 2048, 8, 4
K_FILL_MIN_WAVES, K_FILL_THREADS = 2, 256
NARROW_BN = {64: 128, 96: 128, 128: 128, 192: 112, 256: 64}
WIDE_BN = {64: 192}


def cdiv(a, b):
    return -(-a // b)


def head_visible_keys(sq, sk, causal, r):
    n = cdiv(sq, r)
    if not causal:
        return n * sk
    d = sk - sq
    m_lo = 0 if d >= 0 else (-d) // r
    tot = sk
    if n - 1 > m_lo:
        tot += r * ((n - 1) * n // 2 - m_lo * (m_lo + 1) // 2) + d * (n - 1 - m_lo)
    return tot


def decide(p):
    """attention<D>'s decisions for a fixed-length shape (contiguous or packed QKV), as in v15."""
    b, hq, hkv, dim = p["batch"], p["heads_q"], p["heads_kv"], p["head_dim"]
    sq, sk, causal = p["seqlen_q"], p["seqlen_k"], int(bool(p["causal"]))
    g = hq // hkv
    D = dict(b=b, hq=hq, g=g, d=dim, sq=sq, sk=sk, causal=causal, pack_g=1, pack_r=BM, nmb=cdiv(sq, BM))
    if 1 < g <= BM:  # choose_gqa_packing
        r = BM // g
        if cdiv(sq, r) * hkv < D["nmb"] * hq:
            D.update(pack_g=g, pack_r=r, nmb=cdiv(sq, r))
    tiles = D["nmb"] * (hq // D["pack_g"]) * b
    mean = head_visible_keys(sq, sk, causal, D["pack_r"]) / D["nmb"]
    wide = dim in WIDE_BN and tiles >= NSM and mean >= K_WIDE_MIN_MEAN_KEYS
    D["bn"] = WIDE_BN[dim] if wide else NARROW_BN[dim]
    nbk = cdiv(sk, D["bn"])
    ns = min(NSM // tiles, nbk // K_MIN_BLOCKS_PER_SPLIT, K_MAX_SPLITS)  # choose_splits
    rows = b * hq * sq
    while ns >= 2 and cdiv(ns * rows, 4) * 4 * 4 + ns * rows * dim * 4 > K_WORKSPACE:
        ns -= 1
    D["ns"] = ns if ns >= 2 else 1
    D["mb_off"], D["fill"] = 0, 0  # choose_empty_fill
    if causal and D["ns"] == 1 and sq > sk:
        m_lo = (sq - sk) // D["pack_r"]
        if m_lo * (hq // D["pack_g"]) * b >= K_FILL_MIN_WAVES * NSM:
            D["mb_off"], D["nmb"], D["fill"] = m_lo, D["nmb"] - m_lo, m_lo * D["pack_r"]
    return D


def choose_grid(D):
    slots = (D["hq"] // D["pack_g"]) * D["b"]
    tiles = D["nmb"] * D["ns"] * slots
    mean = head_visible_keys(D["sq"], D["sk"], D["causal"], D["pack_r"]) / D["nmb"]
    D["n_pairs"], D["band"] = 0, 0
    if not D["causal"]:
        return min(tiles, NSM)
    if D["ns"] > 1 or tiles <= NSM:
        return tiles
    pairs = (D["nmb"] + 1) // 2 * slots
    if NSM * cdiv(pairs, NSM) / pairs - 1 <= K_TILE_FIXED_KEYS / max(mean, 1.0):
        D["n_pairs"] = pairs
        return min(pairs, NSM)
    kv_bytes = 2 * D["sk"] * D["d"] * 2
    if tiles < K_BAND_MAX_WAVES * NSM and kv_bytes > 0:
        band = max(1, L2 // K_BAND_L2_FRACTION // kv_bytes) * (D["g"] if D["pack_g"] == 1 else 1)
        band = min(band, slots)
        if band > 1:
            D["band"] = band
    return tiles


def decode(D, G, t):
    """TileScheduler::decode: (b, head slot, m0, split) or None for an empty slot."""
    HH, R, n = D["hq"] // D["pack_g"], D["pack_r"], D["nmb"]
    if D["n_pairs"] > 0:
        rnd = t // G
        pair = (rnd // 2) * G + t % G
        if pair >= D["n_pairs"]:
            return None
        per = (n + 1) // 2
        k = pair % per
        heavy = n - 1 - k
        if (rnd & 1) and heavy == k:
            return None
        mb, hh, b, sp = (k if rnd & 1 else heavy), (pair // per) % HH, pair // per // HH, 0
    else:
        if D["band"] > 0:
            band0 = t // (n * D["band"]) * D["band"]
            nh = min(D["band"], D["ns"] * HH * D["b"] - band0)
            r = t - band0 * n
            mb, slot = r // nh, band0 + r % nh
        else:
            mb, slot = t % n, t // n
        sp = slot % D["ns"]
        slot //= D["ns"]
        hh, b = slot % HH, slot // HH
        if D["causal"]:
            mb = n - 1 - mb
    m0 = (mb + D["mb_off"]) * R
    return None if m0 >= D["sq"] else (b, hh, m0, sp)


def check(D):
    """Counts of writes of O rows and lse entries: [split][batch][head][row] (the fill writes split 0
    of an unsplit shape). True when each is written exactly once."""
    G = choose_grid(D)
    HH = D["hq"] // D["pack_g"]
    o = np.zeros((D["ns"], D["b"], D["hq"], D["sq"]), np.int32)
    if D["fill"]:  # fa_fill_empty<D>: O as (batch, row) units x (head, 16-byte chunk); lse per (batch, head)
        chunks = D["d"] // 8
        units = D["b"] * D["fill"]
        blocks = min(units, 8 * NSM)
        seen = np.zeros((D["b"], D["fill"], D["hq"], chunks), np.int32)
        per_unit = D["hq"] * chunks
        for blk in range(blocks):
            u = np.arange(blk, units, blocks)
            j = np.arange(per_unit)  # threadIdx strides of kFillThreads cover 0..per_unit-1 once
            np.add.at(seen, (u[:, None] // D["fill"], u[:, None] % D["fill"], j[None] // chunks, j[None] % chunks), 1)
        if not (seen == 1).all():
            return G, False, "fill O chunks not written exactly once"
        lse = np.zeros((D["b"] * D["hq"], D["fill"]), np.int32)
        for blk in range(blocks):
            lse[blk::blocks, :] += 1
        if not (lse == 1).all():
            return G, False, "fill lse not written exactly once"
        o[0, :, :, : D["fill"]] += 1
    nt = 2 * G * cdiv(D["n_pairs"], G) if D["n_pairs"] > 0 else D["nmb"] * D["ns"] * HH * D["b"]
    for t in range(nt):  # every CTA c walks t = c, c + G, ...: together, every t once
        T = decode(D, G, t)
        if T is not None:
            b, hh, m0, sp = T
            o[sp, b, hh * D["pack_g"]:(hh + 1) * D["pack_g"], m0:min(m0 + D["pack_r"], D["sq"])] += 1
    if (o == 1).all():
        return G, True, ""
    return G, False, f"{int((o == 0).sum())} rows unwritten, {int((o > 1).sum())} written twice"


def scenarios(*flags):
    out = subprocess.run([sys.executable, "-m", "kernelseek", "scenarios", "flash_attn_fwd", "--arch", "sm90",
                          "--json", *flags], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def fixed_len(p):
    return p["layout"] != "varlen" and p["seqlen_k"] > 0


EXTRA = [dict(name="extra_d64_q7281_k35_gqa8", batch=2, heads_q=32, heads_kv=4, head_dim=64, seqlen_q=7281, seqlen_k=35),
         dict(name="extra_d64_q4424_k695_mqa", batch=3, heads_q=32, heads_kv=1, head_dim=64, seqlen_q=4424, seqlen_k=695),
         dict(name="extra_d96_q3000_k200_gqa5", batch=3, heads_q=20, heads_kv=4, head_dim=96, seqlen_q=3000, seqlen_k=200),
         dict(name="extra_d128_q9000_k1500", batch=1, heads_q=24, heads_kv=24, head_dim=128, seqlen_q=9000, seqlen_k=1500),
         dict(name="extra_d256_q2000_k1_edge", batch=4, heads_q=16, heads_kv=16, head_dim=256, seqlen_q=2000, seqlen_k=1),
         dict(name="extra_d192_q1000_k900_below", batch=1, heads_q=8, heads_kv=8, head_dim=192, seqlen_q=1000, seqlen_k=900)]


def main():
    sets = {"suite": scenarios()}
    for seed in (1, 2, 3):
        sets[f"holdout seed {seed}"] = scenarios("--holdout", "24", "--holdout-seed", str(seed))
    failed = 0
    for label, scen in sets.items():
        fixed = [s for s in scen if fixed_len(s["params"])]
        taking = [s for s in fixed if decide(s["params"])["fill"] > 0]
        print(f"{label}: {len(scen)} scenarios, {len(fixed)} fixed-length, {len(taking)} take the fill path")
        for s in taking:
            D = decide(s["params"])
            G, ok, why = check(D)
            failed += not ok
            print(f"  {s['name']}: fill_rows {D['fill']} mb_off {D['mb_off']} n_mblocks {D['nmb']} pack {D['pack_g']}x"
                  f"{D['pack_r']} pairs {D['n_pairs']} band {D['band']} grid {G}: {'covered once' if ok else 'FAIL ' + why}")
    controls = [s for s in sets["suite"] if fixed_len(s["params"]) and s["params"]["causal"]
                and s["params"]["batch"] * s["params"]["heads_q"] * s["params"]["seqlen_q"] <= 1 << 21]
    bad = [s["name"] for s in controls if not check(decide(s["params"]))[1]]
    failed += len(bad)
    print(f"control: {len(controls)} causal fixed-length suite shapes without the fill: "
          f"{'all covered once' if not bad else 'FAIL ' + ', '.join(bad)}")
    for e in EXTRA:
        p = dict(e, causal=True, layout="contiguous")
        D = decide(p)
        G, ok, why = check(D)
        failed += not ok
        print(f"  {e['name']}: fill_rows {D['fill']} mb_off {D['mb_off']} pack {D['pack_g']}x{D['pack_r']} "
              f"splits {D['ns']} pairs {D['n_pairs']} band {D['band']} grid {G}: {'covered once' if ok else 'FAIL ' + why}")
    print("all checks passed" if not failed else f"{failed} checks FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
