"""Replay of v16's varlen schedule (choose_varlen_schedule, build_varlen_table, TileScheduler::decode
with p.vl_buckets > 0) for an H200 (132 SMs), beside v15's one-CTA-per-tile varlen grid.

For every varlen shape it checks, on the same index maps as the kernel (the table is built with the
kernel's own difference array and chunked warp scans):
  * v16's tiles are exactly v15's non-empty tiles, each once (same (batch, head, m-block) set);
  * every O row and lse entry of every head is stored exactly once (store_output's row rule, with
    the Q box shift of tile_start);
  * every tile's key blocks cover exactly the keys its rows see (causal bottom-right), no block
    wholly invisible, every K/V and Q box inside the tensor and covering its nominal rows;
  * the producer issues a Q load for exactly the tiles the consumers wait on, CTA by CTA.
It also prints a cost model's makespans (v15 in-order dispatch of one CTA per tile of the maxima,
v16 per-CTA sums of the snake) as predictions; the model's constants are assumptions (COST_*).

Usage: PYTHONPATH=<worktree> python tests/hopper_models/varlen_table_replay.py [--random N]
(the suite's varlen scenarios, the hold-outs of seeds 1-3 that are varlen, N random shapes: batch
1-16, lengths 0-16384, q != k, causal or not, GQA 1-8 over 1-2 KV heads; default N = 150). Exit 1 when a check fails."""
import json
import random
import subprocess
import sys

import numpy as np

BM, NSM, WARP = 128, 132, 32
NARROW_BN = {64: 128, 96: 128, 128: 128, 192: 112, 256: 64}
MAX_BATCH, MAX_BUCKETS = 128, 512  # kVarlenMaxBatch, kVarlenMaxBuckets
# Cost model, in units of one 128-key block of a 128-row tile at that head dim: a tile's fixed cost
# (kTileFixedKeys), a CTA's launch and prologue, an empty CTA's whole life. Assumptions, not measured.
COST_TILE_FIXED, COST_CTA_LAUNCH, COST_EMPTY_CTA = 1.0, 0.5, 0.3


def cdiv(a, b):
    return -(-a // b)


def host(p):
    """attention<D>'s varlen decisions in v16 (contiguous, aligned inputs as the suite's)."""
    lq, lk = p["seqlens_q"], p["seqlens_k"]
    b, hq, d = p["batch"], p["heads_q"], p["head_dim"]
    D = dict(b=b, hq=hq, group=hq // p["heads_kv"], d=d, causal=int(bool(p["causal"])), sq=p["seqlen_q"],
             sk=p["seqlen_k"], lq=lq, lk=lk, bn=NARROW_BN[d], R=BM, nmb=cdiv(p["seqlen_q"], BM))
    D["cu_q"] = [0]
    D["cu_k"] = [0]
    for x, y in zip(lq, lk, strict=True):
        D["cu_q"].append(D["cu_q"][-1] + x)
        D["cu_k"].append(D["cu_k"][-1] + y)
    # use_main needs seqlen_k > 0; the kernel returns at once (the fallback's job) below one box of rows
    D["main"] = D["sk"] > 0 and D["cu_q"][-1] >= BM and D["cu_k"][-1] >= D["bn"]
    buckets = D["sk"] // BM + D["nmb"]  # choose_varlen_schedule
    D["U"] = buckets if b <= MAX_BATCH and buckets <= MAX_BUCKETS else 0
    ub = D["nmb"] * hq * b  # the maxima's tile bound
    D["grid16"] = min(ub, NSM) if D["U"] else ub
    D["grid15"] = ub
    return D


def warp_inclusive_scan(a, n):
    """warp_inclusive_scan: lane l sums its chunk, a shuffle scan of the chunk sums, then the writes."""
    chunk = cdiv(n, WARP)
    sums, bounds = [], []
    for lane in range(WARP):
        lo = min(n, lane * chunk)
        hi = min(n, lo + chunk)
        bounds.append((lo, hi))
        sums.append(sum(a[lo:hi]))
    incl = list(sums)
    dd = 1
    while dd < WARP:
        incl = [incl[i] + (incl[i - dd] if i >= dd else 0) for i in range(WARP)]
        dd *= 2
    for lane, (lo, hi) in enumerate(bounds):
        run = incl[lane] - sums[lane]
        for i in range(lo, hi):
            run += a[i]
            a[i] = run


def build_table(D):
    """build_varlen_table: seq[b] = (s_b, nmb_b), cum[0..U] (cum[U] unused)."""
    U = D["U"]
    cum = [0] * (U + 1)
    seq = []
    for bb in range(D["b"]):
        sq_b = D["cu_q"][bb + 1] - D["cu_q"][bb]
        sk_b = D["cu_k"][bb + 1] - D["cu_k"][bb]
        nmb_b = min(cdiv(max(sq_b, 0), D["R"]), D["nmb"])
        s_b = (D["sk"] - min(max(sk_b, 0), D["sk"])) // BM
        assert s_b < U and s_b + nmb_b <= U, "table index out of range"
        seq.append((s_b, nmb_b))
    for s_b, nmb_b in seq:
        if nmb_b > 0:
            if D["causal"]:
                cum[s_b] += 1
                cum[s_b + nmb_b] -= 1
            else:
                cum[s_b] += nmb_b
    if D["causal"]:
        warp_inclusive_scan(cum, U)
    warp_inclusive_scan(cum, U)
    return seq, cum


def varlen_tile(D, seq, cum, pos):
    HH, U = D["hq"], D["U"]
    lo, hi = 0, U - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if cum[mid] * HH > pos:
            hi = mid
        else:
            lo = mid + 1
    u = lo
    i = pos - (cum[u - 1] * HH if u > 0 else 0)
    s = n = 0
    bb = 0
    while bb < D["b"]:
        s, n = seq[bb]
        pairs = (1 if s <= u < s + n else 0) if D["causal"] else (n if u == s else 0)
        if i < pairs * HH:
            break
        i -= pairs * HH
        bb += 1
    assert bb < D["b"], f"position {pos} found in no sequence"
    if D["causal"]:
        return bb, i, n - 1 - (u - s)
    return bb, i // n, i % n


def walk16(D, seq, cum):
    """TileScheduler with vl_buckets: per CTA, its (t, tile) list."""
    G = D["grid16"]
    vl_tiles = cum[D["U"] - 1] * D["hq"]
    num_tiles = G * cdiv(vl_tiles, G)
    per_cta = []
    for c in range(G):
        tiles = []
        for t in range(c, num_tiles, G):
            rnd, cc = t // G, t % G
            pos = rnd * G + (G - 1 - cc if rnd & 1 else cc)
            if pos < vl_tiles:
                tiles.append(varlen_tile(D, seq, cum, pos))
        per_cta.append(tiles)
    return per_cta


def walk15(D):
    """v15's varlen grid: one CTA per (batch, head, m-block of the maximum); None where it exits."""
    HH, n = D["hq"], D["nmb"]
    out = []
    for t in range(n * HH * D["b"]):
        mb, slot = t % n, t // n
        hh, bb = slot % HH, slot // HH
        if D["causal"]:
            mb = n - 1 - mb
        sq_b = D["cu_q"][bb + 1] - D["cu_q"][bb]
        out.append(None if mb * D["R"] >= sq_b else (bb, hh, mb))
    return out


def tile_start(seq_start, seq_len, nominal_off, box):
    nominal = seq_start + nominal_off
    start = min(nominal, max(seq_start + seq_len - box, 0))
    return start, nominal - start


def tile_blocks(D, tile):
    """decode's key-block range and boxes for one tile; raises on a wrong range."""
    bb, hh, mb = tile
    q0, k0 = D["cu_q"][bb], D["cu_k"][bb]
    sq_b, sk_b = D["cu_q"][bb + 1] - q0, D["cu_k"][bb + 1] - k0
    BN, R = D["bn"], D["R"]
    m0 = mb * R
    assert m0 < sq_b
    nbk = cdiv(sk_b, BN)
    last_row = min(m0 + R, sq_b) - 1
    if D["causal"]:
        lim = min(m0 + R, sq_b) + sk_b - sq_b
        nbk = min(nbk, 0 if lim <= 0 else cdiv(lim, BN))
    seen = min(sk_b, max(0, last_row + sk_b - sq_b + 1)) if D["causal"] else sk_b  # keys the last row sees
    assert nbk * BN >= seen and (nbk == 0 or (nbk - 1) * BN < seen), f"key blocks {nbk} for {seen} keys"
    tq, tk = D["cu_q"][-1], D["cu_k"][-1]
    qrow, qshift = tile_start(q0, sq_b, m0, BM)
    assert 0 <= qrow and qrow + BM <= tq and qrow <= q0 + m0 and q0 + last_row < qrow + BM, "Q box"
    for nb in range(nbk):
        krow, _ = tile_start(k0, sk_b, nb * BN, BN)
        hi = min(nb * BN + BN, sk_b)
        assert 0 <= krow and krow + BN <= tk and krow <= k0 + nb * BN and k0 + hi <= krow + BN, "K/V box"
    return nbk, (q0 + m0, q0 + min(m0 - qshift + BM, sq_b))  # stored rows: m0 <= row < sq_b of the box


def check(D):
    """None when every check passes, else why."""
    if not D["main"] or not D["U"]:
        return None
    seq, cum = build_table(D)
    per_cta = walk16(D, seq, cum)
    got = [t for ts in per_cta for t in ts]
    want = [t for t in walk15(D) if t is not None]
    if len(got) != len(set(got)):
        return "a tile scheduled twice"
    if set(got) != set(want):
        return f"tile sets differ: {len(set(want) - set(got))} missing, {len(set(got) - set(want))} extra"
    written = np.zeros((D["hq"], D["cu_q"][-1]), np.int32)  # O row and lse entry per (head, row)
    for ts in per_cta:
        q_loads = q_waits = 0
        for tile in ts:
            nbk, rows = tile_blocks(D, tile)
            q_loads += nbk != 0  # producer: skips tiles with nb_hi == nb_lo
            q_waits += nbk > 0   # consumer: attend_tile only when nb_hi > nb_lo
            written[tile[1], rows[0]:rows[1]] += 1
        if q_loads != q_waits:
            return "producer and consumer disagree on Q loads"
    if not (written == 1).all():
        return f"{int((written == 0).sum())} rows unwritten, {int((written > 1).sum())} written twice"
    return None


def tile_cost(D, tile):
    nbk, _ = tile_blocks(D, tile)
    return nbk * D["bn"] / 128 + COST_TILE_FIXED


def makespans(D):
    """Model makespans (v15, v16) in 128-key block units."""
    import heapq

    free = [0.0] * NSM  # v15: in-order dispatch to the first free SM, one CTA at a time
    heapq.heapify(free)
    for t in walk15(D):
        start = heapq.heappop(free)
        heapq.heappush(free, start + (COST_EMPTY_CTA if t is None else COST_CTA_LAUNCH + tile_cost(D, t)))
    m15 = max(free)
    seq, cum = build_table(D)
    m16 = max(COST_CTA_LAUNCH + sum(tile_cost(D, t) for t in ts) for ts in walk16(D, seq, cum))
    return m15, m16


def scenarios(*flags):
    out = subprocess.run([sys.executable, "-m", "kernelseek", "scenarios", "flash_attn_fwd", "--arch", "sm90",
                          "--json", *flags], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def random_shape(rng):
    b = rng.randint(1, 16)
    hkv = rng.choice((1, 2))
    g = rng.randint(1, 8)
    lq = [0 if rng.random() < 0.15 else rng.choice((rng.randint(1, 300), rng.randint(1, 4096), rng.randint(1, 16384)))
          for _ in range(b)]
    lk = [q if rng.random() < 0.3 else (0 if rng.random() < 0.1 else rng.randint(1, 16384)) for q in lq]
    if max(lq) == 0:
        lq[0] = rng.randint(1, 4096)
    if max(lk) == 0:
        lk[0] = rng.randint(1, 4096)
    return dict(batch=b, heads_q=hkv * g, heads_kv=hkv, head_dim=rng.choice(tuple(NARROW_BN)),
                causal=rng.random() < 0.5, seqlens_q=lq, seqlens_k=lk, seqlen_q=max(lq), seqlen_k=max(lk))


def main(argv):
    n_random = int(argv[argv.index("--random") + 1]) if "--random" in argv else 150
    failed = 0
    named = [s for s in scenarios() if s["params"]["layout"] == "varlen"]
    for seed in (1, 2, 3):
        named += [s for s in scenarios("--holdout", "24", "--holdout-seed", str(seed))
                  if s["params"]["layout"] == "varlen"]
    print(f"{'scenario':48s} {'grid15':>6s} {'grid16':>6s} {'U':>4s} {'model15':>8s} {'model16':>8s} {'ratio':>6s}  check")
    for s in named:
        D = host(s["params"])
        why = check(D)
        failed += why is not None
        if D["main"] and D["U"]:
            m15, m16 = makespans(D)
            model = f"{m15:8.1f} {m16:8.1f} {m15 / m16:6.2f}"
        else:
            model = f"{'-':>8s} {'-':>8s} {'-':>6s}"
        path = "main" if D["main"] else "fallback only"
        print(f"{s['name']:48s} {D['grid15']:6d} {D['grid16']:6d} {D['U']:4d} {model}  "
              f"{path}: {'ok' if why is None else 'FAIL ' + why}")
    rng = random.Random(16)
    bad = on_path = 0
    for _ in range(n_random):
        p = random_shape(rng)
        D = host(p)
        on_path += bool(D["main"] and D["U"])
        why = check(D)
        if why is not None:
            bad += 1
            print(f"random FAIL {why}: {p}")
    failed += bad
    print(f"random: {n_random} shapes ({on_path} on the v16 schedule), {bad} failed")
    print("all checks passed" if not failed else f"{failed} checks FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
