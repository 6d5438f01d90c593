"""Replay of v17's epilogue (v15 + O through shared memory and TMA stores): which consumer warpgroups of
which tiles take the TMA store, which O rows each box writes, and the staging tile's layout.

For every shape it checks:
  * every (batch, head, row) of O is written exactly once and every lse entry exactly once
    (direct stores, TMA boxes after the map's clipping, split-KV partials, v15's fill);
  * a warpgroup's TMA box (64 rows of one head; fixed length clipped at seqlen_q, the map's per-batch
    row bound) writes exactly the rows that warpgroup would have written with the direct stores: no
    row of another tile, another head, another sequence or past the end;
and once per head dim that the staging writes (stage_o) put every O element where a 128B-swizzled TMA
box read expects it (16-byte chunk c of box row i at chunk c ^ (i % 8) of a 128-byte line).

The host decisions and the tile scheduler are v15's (imported from v15_replay.py beside this file);
v17 adds: o_tma = the config stages O (d64 with BN 128, d96, d128) and the shape is unsplit and
pack_r % 64 == 0; per warpgroup w, OBox (o_box in the kernel).

Shapes: the suite, the hold-outs of seeds 1-3 (`kernelseek scenarios`), and seeded random shapes: fixed
length with GQA groups 1-8 (non-divisors of 128 included), causal or not, and varlen with random
sequence lengths (0 included). Usage: PYTHONPATH=<worktree> python kernels/hopper/versions/v17_replay.py
Exit status 1 when any check fails."""
import importlib.util
import pathlib
import sys

import numpy as np

_spec = importlib.util.spec_from_file_location("v15_replay", pathlib.Path(__file__).with_name("v15_replay.py"))
v15 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(v15)

BM, WG_ROWS, ATOM_COLS, SWIZZLE_BYTES = 128, 64, 64, 128
O_ATOM_BYTES = WG_ROWS * SWIZZLE_BYTES
NARROW_BN = {64: 128, 96: 128, 128: 128, 192: 112, 256: 64}
KV_MAX_DYN_SMEM, BARRIER_REGION, SMEM_ALIGN, O_STAGE_MAX_BN = 232448, 256, 1024, 128
STAGES = {(64, 128): 2, (64, 192): 3, (96, 128): 2, (128, 128): 2, (192, 112): 2, (256, 64): 2}


def dp(d):
    return v15.cdiv(d, ATOM_COLS) * ATOM_COLS


def o_stage(d, bn):
    """Cfg::O_STAGE: the staging tile fits after the rings and the key block is at most 128 wide."""
    ring_end = BM * dp(d) * 2 + 2 * STAGES[(d, bn)] * bn * dp(d) * 2
    return bn <= O_STAGE_MAX_BN and ring_end + BM * dp(d) * 2 + BARRIER_REGION + SMEM_ALIGN <= KV_MAX_DYN_SMEM


def check_layout(d):
    """stage_o's addresses against a 128B-swizzled TMA read of each warpgroup box (one warpgroup's tile)."""
    na = dp(d) // ATOM_COLS
    held = {}  # smem byte offset of a 4-byte word -> (row, first column) it holds
    for warp in range(4):
        for lane in range(32):
            lrow0, qd = 16 * warp + lane // 4, lane % 4
            for r in range(2):
                row = lrow0 + 8 * r
                for i in range(d // 8):
                    addr = row * SWIZZLE_BYTES + qd * 4 + (i // 8) * O_ATOM_BYTES + (((i % 8) ^ (row % 8)) << 4)
                    if addr in held:
                        return f"d{d}: smem word {addr} written twice"
                    held[addr] = (row, 8 * i + 2 * qd)
    for a in range(na):
        for i in range(WG_ROWS):
            for c in range(0, ATOM_COLS, 2):
                col = a * ATOM_COLS + c
                if col >= d:
                    continue  # past head_dim: the map's column bound clips it (d96's second atom)
                addr = a * O_ATOM_BYTES + i * SWIZZLE_BYTES + (((c // 8) ^ (i % 8)) << 4) + (c % 8) * 2
                if held.get(addr) != (i, col):
                    return f"d{d}: box element (row {i}, col {col}) reads {held.get(addr)}"
    if len(held) != WG_ROWS * d // 2:
        return f"d{d}: {len(held)} words staged, expected {WG_ROWS * d // 2}"
    return ""


def tile_rows(m0, qshift, sq, R, pack_g, hq0):
    """row_ctx for the tile's 128 rows: the row within the sequence (sq: belongs to no head) and head."""
    m = np.arange(BM)
    g = m // R
    row = np.where(g < pack_g, m0 - qshift + (m - g * R), sq)
    head = hq0 + np.where(g < pack_g, g, 0)
    return row, head


def epilogue_writes(o_tma, varlen, m0, qshift, q_row0, sq, R, pack_g, hq0):
    """Per warpgroup: (took TMA, rows written as (head, sequence row) pairs, problem or "") and the lse rows."""
    row, head = tile_rows(m0, qshift, sq, R, pack_g, hq0)
    own = (row >= m0) & (row < sq)  # store_output's / store_lse's rule
    out = []
    for w in range(2):
        sel = slice(WG_ROWS * w, WG_ROWS * w + WG_ROWS)
        direct = {(int(h), int(r)) for h, r, k in zip(head[sel], row[sel], own[sel]) if k}
        mw = WG_ROWS * w
        g = mw // R
        r0 = mw - g * R
        lo = m0 - qshift + r0
        ok = o_tma and R % WG_ROWS == 0 and lo >= m0 and (lo + WG_ROWS <= sq if varlen else lo < sq)
        if not ok:
            out.append((False, direct, ""))
            continue
        box_row0 = q_row0 + r0  # the map's row coordinate; sequence row = box row - (q_row0 - (m0 - qshift))
        seq_rows = np.arange(box_row0, box_row0 + WG_ROWS) - (q_row0 - (m0 - qshift))
        if not varlen:
            seq_rows = seq_rows[seq_rows < sq]  # the map's row bound (seqlen_q) clips the tail
        boxed = {(hq0 + g, int(r)) for r in seq_rows}
        why = "" if boxed == direct else f"box {sorted(boxed)[:3]}.. != direct {sorted(direct)[:3]}.."
        out.append((True, boxed, why))
    lse = {(int(h), int(r)) for h, r, k in zip(head, row, own) if k}
    return out, lse


def check_fixed(p):
    """Fixed length: v15's decisions and schedule, v17's epilogue. Returns (tma boxes, direct warpgroups, problem)."""
    D = v15.decide(p)
    G = v15.choose_grid(D)
    o_tma = o_stage(D["d"], D["bn"]) and D["ns"] == 1 and D["pack_r"] % WG_ROWS == 0
    HH = D["hq"] // D["pack_g"]
    o = np.zeros((D["ns"], D["b"], D["hq"], D["sq"]), np.int32)
    lse = np.zeros_like(o)
    if D["fill"]:
        o[0, :, :, : D["fill"]] += 1  # fa_fill_empty (its own coverage: v15_replay)
        lse[0, :, :, : D["fill"]] += 1
    nt = 2 * G * v15.cdiv(D["n_pairs"], G) if D["n_pairs"] > 0 else D["nmb"] * D["ns"] * HH * D["b"]
    n_tma = n_direct = 0
    for t in range(nt):
        T = v15.decode(D, G, t)
        if T is None:
            continue
        b, hh, m0, sp = T
        wgs, lrows = epilogue_writes(o_tma, False, m0, 0, m0, D["sq"], D["pack_r"], D["pack_g"], hh * D["pack_g"])
        for took, rows, why in wgs:
            if why:
                return n_tma, n_direct, f"tile b{b} slot{hh} m0 {m0}: {why}"
            n_tma += took
            n_direct += not took and bool(rows)
            for h, r in rows:
                o[sp, b, h, r] += 1
        for h, r in lrows:
            lse[sp, b, h, r] += 1
    if not ((o == 1).all() and (lse == 1).all()):
        return n_tma, n_direct, f"O {(o != 1).sum()} rows not written once, lse {(lse != 1).sum()}"
    return n_tma, n_direct, ""


def check_varlen(d, hq, hkv, seqlens_q, seqlens_k):
    """Varlen: one CTA per tile over (m-block, head, batch), no packing or split; boxes shifted back at
    each sequence's end (tile_start). The main kernel declines (fallback) when there are < 128 query rows
    or < BN key rows in all."""
    bn = NARROW_BN[d]
    cu_q = np.concatenate([[0], np.cumsum(seqlens_q)])
    if cu_q[-1] < BM or sum(seqlens_k) < bn:
        return 0, 0, "declined"
    o_tma = o_stage(d, bn)
    nmb = v15.cdiv(max(seqlens_q), BM)
    o = np.zeros((hq, cu_q[-1]), np.int32)
    lse = np.zeros_like(o)
    n_tma = n_direct = 0
    for b in range(len(seqlens_q)):
        q_start, sq = int(cu_q[b]), int(seqlens_q[b])
        for h in range(hq):
            for mb in range(nmb):
                m0 = mb * BM
                if m0 >= sq:
                    continue
                start = min(q_start + m0, max(q_start + sq - BM, 0))
                qshift = q_start + m0 - start
                wgs, lrows = epilogue_writes(o_tma, True, m0, qshift, start, sq, BM, 1, h)
                for took, rows, why in wgs:
                    if why:
                        return n_tma, n_direct, f"tile b{b} h{h} m0 {m0}: {why}"
                    n_tma += took
                    n_direct += not took and bool(rows)
                    for hh, r in rows:
                        o[hh, q_start + r] += 1
                for hh, r in lrows:
                    lse[hh, q_start + r] += 1
    if not ((o == 1).all() and (lse == 1).all()):
        return n_tma, n_direct, f"O {(o != 1).sum()} rows not written once, lse {(lse != 1).sum()}"
    return n_tma, n_direct, ""


def check_params(p):
    if p["layout"] == "varlen":
        return check_varlen(p["head_dim"], p["heads_q"], p["heads_kv"], p["seqlens_q"], p["seqlens_k"])
    if p["seqlen_k"] == 0 or p["seqlen_q"] == 0:
        return 0, 0, "declined"
    return check_fixed(p)


def random_shapes(rng, n_fixed, n_varlen):
    out = []
    for i in range(n_fixed):
        g = int(rng.integers(1, 9))
        hkv = int(rng.integers(1, 5))
        p = dict(name=f"rand_fixed_{i}", layout="contiguous", head_dim=int(rng.choice([64, 96, 128, 192, 256])),
                 batch=int(rng.integers(1, 4)), heads_q=g * hkv, heads_kv=hkv, causal=bool(rng.integers(0, 2)),
                 seqlen_q=int(rng.integers(1, 1200)), seqlen_k=int(rng.integers(1, 1200)))
        if rng.random() < 0.25:
            p["seqlen_q"] = int(rng.integers(1, 9))  # decode-like: GQA packing and split-KV
        out.append(p)
    for i in range(n_varlen):
        nb = int(rng.integers(1, 7))
        sq = [int(x) if rng.random() > 0.15 else 0 for x in rng.integers(1, 600, nb)]
        sk = [int(x) for x in rng.integers(0, 600, nb)]
        hkv = int(rng.integers(1, 3))
        out.append(dict(name=f"rand_varlen_{i}", layout="varlen", head_dim=int(rng.choice([64, 96, 128, 192, 256])),
                        batch=nb, heads_q=hkv * int(rng.integers(1, 4)), heads_kv=hkv, causal=bool(rng.integers(0, 2)),
                        seqlens_q=sq, seqlens_k=sk, seqlen_q=max(sq), seqlen_k=max(sk)))
    return out


def main():
    failed = 0
    for d in (64, 96, 128):
        why = check_layout(d)
        failed += bool(why)
        print(f"layout d{d}: {'staging matches the swizzled box read' if not why else 'FAIL ' + why}")
    sets = {"suite": v15.scenarios()}
    for seed in (1, 2, 3):
        sets[f"holdout seed {seed}"] = v15.scenarios("--holdout", "24", "--holdout-seed", str(seed))
    sets["random (seed 17)"] = [dict(name=p["name"], params=p) for p in random_shapes(np.random.default_rng(17), 150, 40)]
    for label, scen in sets.items():
        tot_tma = tot_direct = n_take = n_decl = 0
        for s in scen:
            n_tma, n_direct, why = check_params(s["params"])
            if why == "declined":
                n_decl += 1
                continue
            if why:
                failed += 1
                print(f"  FAIL {s['name']}: {why}")
            tot_tma += n_tma
            tot_direct += n_direct
            n_take += n_tma > 0
            if label != "suite" and n_tma and s["name"].startswith("holdout"):
                print(f"  {s['name']}: {n_tma} TMA boxes, {n_direct} warpgroups on direct stores")
        print(f"{label}: {len(scen)} shapes ({n_decl} not on the main kernel), {n_take} with TMA-stored warpgroups; "
              f"{tot_tma} boxes, {tot_direct} warpgroup epilogues on direct stores")
    for name in ("holdout_s2_16_d96_q169_k1", "holdout_s2_23_d128_q3209_k1", "holdout_s2_17"):
        hits = [s for s in sets["holdout seed 2"] if s["name"].startswith(name)]
        for s in hits:
            print(f"  {s['name']}: tma boxes/direct = {check_params(s['params'])[:2]}")
    print("all checks passed" if not failed else f"{failed} checks FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
