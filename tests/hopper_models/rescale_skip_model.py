"""v26's rescale skip on the CPU: the kernel's online softmax, arithmetic for arithmetic.

The kernel walks a tile's key blocks last first; per block it takes the scores (fp32, from bf16 q and k),
softcap and mask, the row maximum m, p = 2^(s * sl2 - m * sl2), rounds p to bf16 for the P V product,
accumulates O and the row sum l in fp32, and at the end O / l and lse = (m * sl2 + log2 l) * ln 2.
v24 rescales O by corr = 2^((m_old - m_new) sl2) after every block. Three ways to do less:

  v26               a warp (16 rows) skips the rescale when no row raised its maximum: corr is 1
                    there, so the result must be v24's to the bit (checked: torch.equal);
  lag 8             the maximum moves only when a block's exceeds it by more than 8 log2 units
                    (FA4's way): nearly no rescale, but p reaches 2^8 and a block's largest p is no
                    longer exactly 1 before its bf16 rounding;
  lag 8, bf16 l     the same, O normalized by the sum of the rounded p the P V product used.

Per case, random shapes of the suite's kinds with inputs drawn as the task draws them, each variant's
error against a float64 reference is set against the judge's bound (twice the baseline's error plus
the task's absolute term), v24 standing in for FA3. It prints the worst error / bound per variant and how
often a warp still rescales. Seen (2026-12-04): v24 0.44, v26 0.44 (identical), both lag variants 0.88:
the lag doubles the error against FA3's, too close to the bound to ship; v26 takes the exact skip.

    .venv/bin/python tests/hopper_models/rescale_skip_model.py     # a few seconds
Exit status 0 when v26 is v24 to the bit on every case and no variant leaves the bound, 1 otherwise.
"""

from __future__ import annotations

import math
import random
import sys

import torch

LAG = 8.0  # the lag variants' threshold, log2 units
LOG2E = 1.4426950408889634
WARP_ROWS = 16  # a warp holds rows rloc0 and rloc0 + 8 of 8 quads


def bf16(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.bfloat16).to(torch.float32)


def scores(q, k, scale, softcap):
    s = q.float() @ k.float().T  # the tensor cores' fp32 accumulation of bf16 products
    if softcap > 0:
        return softcap * torch.tanh(s * (scale / softcap)), LOG2E
    return s, scale * LOG2E


def visible(rows: int, keys: int, causal: bool) -> torch.Tensor:
    if not causal:
        return torch.ones(rows, keys, dtype=torch.bool)
    i = torch.arange(rows)[:, None]
    j = torch.arange(keys)[None, :]
    return j <= i + (keys - rows)  # bottom-right aligned, as the kernel


def kernel_softmax(q, k, v, scale, softcap, causal, bn, lag=None, l_of_rounded=False):
    """Rows through the kernel's block loop. Returns O (bf16-rounded), lse, max p, rescales, warp-blocks.
    lag None: v24 (every row's maximum follows the scores; a warp rescales after every block);
    lag 0: v26 (the same maxima; a warp rescales only when one of its rows raised its maximum);
    lag > 0: the maximum moves only when a block's exceeds it by more than lag log2 units.
    l_of_rounded: O is normalized by the sum of the bf16-rounded p that the P V product used (the lse
    keeps the fp32 sum)."""
    s_all, sl2 = scores(q, k, scale, softcap)
    s_all = s_all.masked_fill(~visible(q.shape[0], k.shape[0], causal), -math.inf)
    rows, keys = s_all.shape
    m = torch.full((rows,), -math.inf)
    row_sum = torch.zeros(rows)
    lr = torch.zeros(rows)
    o = torch.zeros(rows, v.shape[1])
    max_p, rescales, warp_blocks = 0.0, 0, 0
    nblocks = (keys + bn - 1) // bn
    for nb in reversed(range(nblocks)):
        s = s_all[:, nb * bn:(nb + 1) * bn]
        mx = torch.maximum(m, s.max(dim=1).values)
        if lag is None:
            move = torch.ones(rows, dtype=torch.bool)
        else:
            move = (mx - m) * sl2 > lag  # NaN (-inf to -inf) compares false
        m_new = torch.where(move, mx, m)
        ms = torch.where(m_new == -math.inf, torch.zeros(rows), m_new * sl2)
        corr = torch.where(move, torch.exp2(m * sl2 - ms), torch.ones(rows))  # from -inf: 0
        m = m_new
        p = torch.exp2(s * sl2 - ms[:, None])
        max_p = max(max_p, float(p.max()))
        row_sum = row_sum * corr + p.sum(dim=1)
        lr = lr * corr + bf16(p).sum(dim=1)
        if nb != nblocks - 1:  # the first block finds O at 0: no rescale
            for w0 in range(0, rows, WARP_ROWS):
                warp_blocks += 1
                if bool(move[w0:w0 + WARP_ROWS].any()):
                    rescales += 1
                    o[w0:w0 + WARP_ROWS] *= corr[w0:w0 + WARP_ROWS, None]
        o += bf16(p) @ v[nb * bn:(nb + 1) * bn].float()
    seen = row_sum > 0
    norm = torch.where(seen, lr if l_of_rounded else row_sum, torch.ones(rows))
    out = bf16(torch.where(seen[:, None], o / norm[:, None], torch.zeros_like(o)))
    lse = torch.where(seen, (m * sl2 + torch.log2(torch.where(seen, row_sum, torch.ones(rows)))) * math.log(2), -math.inf)
    return out, lse, max_p, rescales, warp_blocks


def reference(q, k, v, scale, softcap, causal):
    s = q.double() @ k.double().T
    if softcap > 0:
        s = softcap * torch.tanh(s * (scale / softcap))
    else:
        s = s * scale
    s = s.masked_fill(~visible(q.shape[0], k.shape[0], causal), -math.inf)
    lse = torch.logsumexp(s, dim=1)
    p = torch.exp(s - torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse))[:, None])
    return (p @ v.double()).float(), lse.float()


def case(rng: random.Random):
    """A random shape with inputs drawn as the task draws them (randn x magnitude x U(0.5, 1.5) per tensor)."""
    d = rng.choice([64, 96, 128, 192, 256])
    bn = {64: 128, 96: 128, 128: 128, 192: 112, 256: 64}[d]
    rows = rng.choice([16, 128, 512, 1024])
    keys = rng.choice([1, 7, 100, 129, 555, 1071, 2048, 3001])
    causal = rng.random() < 0.5
    softcap = rng.choice([0.0, 0.0, 15.0, 50.0])
    mag = rng.choice([1.0, 12.0])
    g = torch.Generator().manual_seed(rng.randrange(1 << 30))

    def rand(*shape):
        return (torch.randn(*shape, generator=g) * mag * rng.uniform(0.5, 1.5)).to(torch.bfloat16)

    q, k, v = rand(rows, d), rand(keys, d), rand(keys, d)
    if rng.random() < 0.25:  # an attention sink: one key every row attends to strongly (met last: key 0)
        k[0] = (q.float().mean(0) * 4).to(torch.bfloat16)
    return dict(d=d, bn=bn, rows=rows, keys=keys, causal=causal, softcap=softcap, mag=mag), (q, k, v)


def judge_bound(base: dict, ref_o, ref_lse) -> dict:
    """The task's tolerance (evals/tasks/flash_attn_fwd/task.py within_tolerance), v24 standing in for FA3
    (their errors were equal on the judged scenarios)."""
    out_atol = 2.0**-10 * max(float(ref_o.abs().max()), 1e-3)
    finite = ref_lse[torch.isfinite(ref_lse)]
    lse_atol = 1e-4 * max(float(finite.abs().max()) if finite.numel() else 0.0, 1.0)
    return {"out_max": 2 * base["out_max"] + out_atol, "lse_max": 2 * base["lse_max"] + lse_atol}


def errors(o, lse, ref_o, ref_lse) -> dict:
    finite = torch.isfinite(ref_lse)
    same_empty = torch.equal(torch.isfinite(lse), finite)
    lse_err = float((lse[finite] - ref_lse[finite]).abs().max()) if finite.any() else 0.0
    return {"out_max": float((o - ref_o).abs().max()), "lse_max": lse_err if same_empty else math.inf,
            "finite": bool(torch.isfinite(o).all())}


VARIANTS = {"v24": dict(), "v26": dict(lag=0.0), "lag 8": dict(lag=LAG), "lag 8, bf16 l": dict(lag=LAG, l_of_rounded=True)}


def main() -> int:
    rng = random.Random(26)
    fails = {name: 0 for name in VARIANTS}
    worst = {name: 0.0 for name in VARIANTS}  # largest error / bound over the cases
    counts = {name: [0, 0] for name in VARIANTS}
    not_identical = 0
    n = 80
    for i in range(n):
        meta, (q, k, v) = case(rng)
        scale = 1.0 / math.sqrt(meta["d"])
        ref_o, ref_lse = reference(q, k, v, scale, meta["softcap"], meta["causal"])
        base, outs = None, {}
        for name, kw in VARIANTS.items():
            o, lse, max_p, resc, wb = kernel_softmax(q, k, v, scale, meta["softcap"], meta["causal"], meta["bn"], **kw)
            outs[name] = (o, lse)
            e = errors(o, lse, ref_o, ref_lse)
            base = base or e
            bound = judge_bound(base, ref_o, ref_lse)
            ratio = max(e["out_max"] / bound["out_max"], e["lse_max"] / bound["lse_max"])
            worst[name] = max(worst[name], ratio)
            if ratio > 1.0 or not e["finite"] or max_p > 2.0 ** kw.get("lag", 0.0) * (1 + 1e-6):
                fails[name] += 1
                print(f"case {i} {meta} {name}: out {e['out_max']:.3g} (bound {bound['out_max']:.3g}), "
                      f"lse {e['lse_max']:.3g} (bound {bound['lse_max']:.3g}), largest p {max_p:.4g}")
            counts[name][0] += resc
            counts[name][1] += wb
        if not (torch.equal(outs["v26"][0], outs["v24"][0]) and torch.equal(outs["v26"][1], outs["v24"][1])):
            not_identical += 1
            print(f"case {i} {meta}: v26 differs from v24")
    for name in VARIANTS:
        r, w = counts[name]
        print(f"{name:14s} outside the bound {fails[name]:2d} of {n}; worst error / bound {worst[name]:.2f}; "
              f"a warp rescales O in {100 * r / max(w, 1):5.1f} % of its key blocks after the first")
    print(f"v26 is v24 to the bit on {n - not_identical} of {n} cases")
    return 0 if not_identical == 0 and not any(fails.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
