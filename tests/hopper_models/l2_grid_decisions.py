"""Which fixed-length causal shapes the L2 rule (pairs and bands only while the K/V they reuse fits in L2)
launches differently from the rule without it: a port of flash_attn_fwd.cu's
host decisions (GQA packing, tall and wide tiles, split-KV, the keyless-row fill, pairs, bands; 132 SMs,
50 MB of L2) over the two hold-out shapes that motivated the rule, the suite, and the hold-out seeds
already looked at (2, 7, 11).

    python tests/hopper_models/l2_grid_decisions.py
"""

import json
import math
import subprocess
import sys
from pathlib import Path

from launch_replay import head_visible_keys  # flash_attn_fwd.cu's, ported

ROOT = Path(__file__).resolve().parents[2]
NSM, L2 = 132, 50 * 2**20
TILES = {
    64: dict(bm=128, bn=128, tall=(192, 128), wide=192, wide_min=2048, tallwide=192),
    96: dict(bm=128, bn=128, tall=(192, 112), wide=None, wide_min=0, tallwide=None),
    128: dict(bm=128, bn=128, tall=None, wide=176, wide_min=6144, tallwide=None),
    192: dict(bm=128, bn=112, tall=None, wide=None, wide_min=0, tallwide=None),
    256: dict(bm=128, bn=80, tall=None, wide=None, wide_min=0, tallwide=None),
}


def pack(bm, sq, hq, hkv):
    g = hq // hkv
    n = -(-sq // bm)
    if 1 < g <= bm:
        r = bm // g
        packed = -(-sq // r) * hkv
        if packed < n * hq:
            return g, r, -(-sq // r)
    return 1, bm, n


def plan(p, rule):
    D, b, hq, hkv, sq, sk, causal = (
        p["head_dim"],
        p["batch"],
        p["heads_q"],
        p["heads_kv"],
        p["seqlen_q"],
        p["seqlen_k"],
        p["causal"],
    )
    T = TILES[D]
    g, r, n = pack(128, sq, hq, hkv)
    tiles = n * hq // g * b
    tall = False
    if T["tall"]:
        g2, r2, n2 = pack(192, sq, hq, hkv)
        tt = n2 * hq // g2 * b
        if tt < tiles and -(-tt // NSM) * 192 <= -(-tiles // NSM) * 128 * 1.1:
            g, r, n, tiles, tall = g2, r2, n2, tt, True
    mean = head_visible_keys(sq, sk, causal, r) / n
    wide = False
    wmin = T["wide_min"]
    has_wide = T["tallwide"] if tall else T["wide"]
    if has_wide and tiles >= NSM and mean >= wmin:
        wide = True
    bn = (T["tallwide"] if wide else T["tall"][1]) if tall else (T["wide"] if wide else T["bn"])
    nbk = -(-sk // bn)
    ns = min(NSM // tiles, nbk // 2, 16)
    ns = ns if ns >= 2 else 1
    if ns > 1 or not causal:
        return dict(kind="split" if ns > 1 else "uniform", tiles=tiles)
    if sq > sk:
        m_lo = (sq - sk) // r
        if m_lo * (hq // g) * b >= 2 * NSM:
            n -= m_lo
            tiles = n * hq // g * b
    if tiles <= NSM:
        return dict(kind="one-per-tile", tiles=tiles)
    kv = 2 * sk * D * 2
    slots = hq // g * b
    per_kv = (hq // hkv) if g == 1 else 1

    def band():
        kvh = L2 // 4 // kv
        min_slots = -(-2 * NSM // n)
        bd = max(kvh, 1) * per_kv
        if bd < min_slots:
            bd = -(-min_slots // per_kv) * per_kv
        bd = min(bd, slots)
        if rule and bd / per_kv * kv > L2:
            return 0
        return bd if bd > 1 else 0

    fed = D in (192, 256) and not (tall)
    if fed:
        return dict(kind="fed", band=band(), tiles=tiles, n=n)
    pairs = (slots + 1) // 2 * (2 * (n // 2) + (n & 1))
    loss = NSM * (-(-pairs // NSM)) / pairs - 1
    hidden = 128 / max(mean, 1)
    inflight = 0
    if n >= 2:
        inflight = math.ceil(min(pairs, NSM) * slots / pairs / per_kv) * kv
    if loss <= hidden and not (rule and inflight > L2):
        return dict(kind="pairs", pairs=pairs, tiles=tiles, n=n, inflight_MB=round(inflight / 2**20, 1))
    return dict(kind="bands", band=band(), tiles=tiles, n=n, inflight_MB=round(inflight / 2**20, 1))


# The two shapes that motivated the rule, as the hold-out's distribution drew them at seeds 7 and 11
# (before the odd-numbered hold-out scenarios came from real models' configurations).
MOTIVATING = {
    "holdout_s7_09_d128_q165_k980_cap20_causal": dict(
        batch=16, heads_q=16, heads_kv=16, head_dim=128, causal=True, softcap=20.0, layout="contiguous",
        magnitude=2.0, seqlen_q=165, seqlen_k=980),
    "holdout_s11_17_d128_q204_k1997_causal": dict(
        batch=8, heads_q=16, heads_kv=16, head_dim=128, causal=True, softcap=0.0, layout="contiguous",
        magnitude=1.0, seqlen_q=204, seqlen_k=1997),
}
for name, p in MOTIVATING.items():
    a, b2 = plan(p, False), plan(p, True)
    if a != b2:
        print(name, a, "->", b2)

rows = []
for args in [
    [],
    ["--holdout", "24", "--holdout-seed", "2"],
    ["--holdout", "24", "--holdout-seed", "7"],
    ["--holdout", "24", "--holdout-seed", "11"],
]:
    out = subprocess.run(
        [sys.executable, "-m", "kernelseek", "scenarios", "--json", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    for s in json.loads(out):
        p = s["params"]
        if p.get("layout") == "varlen" or not p["causal"]:
            continue
        a, b2 = plan(p, False), plan(p, True)
        if a != b2:
            print(s["name"], a, "->", b2)
