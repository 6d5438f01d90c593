"""Per-tile and per-key-block cost of the shipped kernel and of FA3, fitted from judged times (no GPU).

For one head dim, every fixed-length, unsplit scenario of the given judgements (suite and hold-outs),
with its shape regenerated from the task: tiles of BM query rows (heads x batch x m-blocks, m-blocks that
see no key dropped) and the key blocks they walk (BN keys, causal bottom-right). On a persistent grid of
`sms` CTAs the time is about launch + (tiles x per_tile + blocks x per_block) / sms; least squares gives
the three constants for our times and for FA3's (FA3's tile taken as the same geometry, or the one given).
A per-tile cost well above FA3's with a like per-block cost says the gap is fixed work a tile (Q load,
epilogue, scheduling), not the main loop.

    python kernels/hopper/versions/per_tile_cost_fit.py --head-dim 192 --bm 128 --bn 112 \
        evals/results/v39-sm90-full-holdout24-s2.json evals/results/v39-sm90-decode-holdout24-s7.json
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from kernelseek.harness import load_task  # noqa: E402


def tiles_and_blocks(p: dict, bm: int, bn: int) -> tuple[int, int]:
    """Tiles that see a key, and the key blocks they walk, for one fixed-length shape."""
    sq, sk = p["seqlen_q"], p["seqlen_k"]
    tiles = blocks = 0
    for m in range((sq + bm - 1) // bm):
        last_row = min(sq, (m + 1) * bm) - 1
        keys = min(sk, last_row + sk - sq + 1) if p["causal"] else sk  # bottom-right causal
        if keys <= 0:
            continue
        tiles += 1
        blocks += (keys + bn - 1) // bn
    slots = p["heads_q"] * p["batch"]
    return tiles * slots, blocks * slots


def scenarios_of(task, judgement: dict) -> dict[str, dict]:
    """Scenario name -> params, for the suite and the judgement's hold-out seed."""
    named = {s.name: s.params for s in task.scenarios("sm90")}
    held = judgement.get("holdout") or {}
    if held.get("seed") is not None:
        named.update({s.name: s.params for s in task.holdout("sm90", held["n"], held["seed"])})
    return named


def fit(rows: list[tuple[float, float, float]], sms: int) -> tuple[np.ndarray, float]:
    """Least squares of time (us) on [1, tiles/sms, blocks/sms]; the coefficients and the rms relative error."""
    a = np.array([[1.0, t / sms, b / sms] for t, b, _ in rows])
    y = np.array([us for _, _, us in rows])
    w = 1.0 / y  # relative error: short and long scenarios weigh alike
    coef, *_ = np.linalg.lstsq(a * w[:, None], y * w, rcond=None)
    rel = (a @ coef - y) / y
    return coef, float(math.sqrt(float(np.mean(rel * rel))))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("judgements", nargs="+")
    ap.add_argument("--head-dim", type=int, required=True)
    ap.add_argument("--bm", type=int, default=128, help="our tile's query rows")
    ap.add_argument("--bn", type=int, required=True, help="our key block")
    ap.add_argument("--fa3-bn", type=int, help="FA3's key block, if not ours")
    ap.add_argument("--sms", type=int, default=132)
    args = ap.parse_args()
    task = load_task("flash_attn_fwd")
    ours, fa3 = [], []
    for path in args.judgements:
        data = json.loads(Path(path).read_text())
        shapes = scenarios_of(task, data)
        for r in data["scenarios"]:
            p = shapes.get(r["scenario"])
            if (p is None or p["head_dim"] != args.head_dim or p["layout"] == "varlen" or not r.get("correct")
                    or "fa3" not in r["time_s"]):
                continue
            tiles, blocks = tiles_and_blocks(p, args.bm, args.bn)
            if tiles < args.sms:  # below a wave the kernel may split the keys: another cost model
                continue
            ours.append((tiles, blocks, r["time_s"]["candidate"] * 1e6))
            ft, fb = tiles_and_blocks(p, args.bm, args.fa3_bn or args.bn)
            fa3.append((ft, fb, r["time_s"]["fa3"] * 1e6))
    if len(ours) < 4:
        print(f"only {len(ours)} scenarios of d{args.head_dim} with a full wave of tiles: too few to fit")
        return 1
    print(f"d{args.head_dim}: {len(ours)} fixed-length scenarios with at least a wave of tiles")
    for name, rows in (("ours", ours), ("fa3", fa3)):
        (launch, per_tile, per_block), err = fit(rows, args.sms)
        print(f"  {name:4s} launch {launch:6.2f} us  per tile {per_tile:6.3f} us  per key block {per_block:6.3f} us"
              f"  (rms error {100 * err:.1f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
