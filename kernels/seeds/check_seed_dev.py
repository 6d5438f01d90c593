"""Device check of the seed kernel kernels/seeds/flash_attn_fwd.cu (a developer script, not the judge).

Calls the built library through ctypes on ~30 scenarios covering the entry point's features,
compares against a float32 torch reference (bounded by a bf16 torch reference's own error, the
FlashAttention rule), checks lse, then times a few large shapes.

    python3 kernels/seeds/check_seed_dev.py [path/to/lib.so]
"""

from __future__ import annotations

import ctypes
import itertools
import math
import sys
import time

import torch

LL3 = ctypes.c_longlong * 3


def load_lib(path: str) -> ctypes.CDLL:
    lib = ctypes.CDLL(path)
    f = lib.ks_flash_attn_fwd
    f.argtypes = [ctypes.c_void_p] * 7 + [ctypes.c_int] * 6 + [ctypes.POINTER(ctypes.c_longlong)] * 4
    f.argtypes += [ctypes.c_float, ctypes.c_float, ctypes.c_int, ctypes.c_void_p]
    f.restype = ctypes.c_int
    return lib


def strides3(t: torch.Tensor, varlen: bool) -> ctypes.Array:
    # {batch, row, head} in elements; varlen tensors are [total, heads, dim]
    if varlen:
        return LL3(0, t.stride(0), t.stride(1))
    return LL3(t.stride(0), t.stride(1), t.stride(2))


def call(lib, q, k, v, out, lse, cu_q, cu_k, B, sq, sk, hq, hkv, d, scale, softcap, causal, stream=None):
    varlen = cu_q is not None
    st = stream if stream is not None else torch.cuda.current_stream().cuda_stream
    return lib.ks_flash_attn_fwd(
        q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), lse.data_ptr(),
        cu_q.data_ptr() if varlen else None, cu_k.data_ptr() if varlen else None,
        B, sq, sk, hq, hkv, d,
        strides3(q, varlen), strides3(k, varlen), strides3(v, varlen), strides3(out, varlen),
        scale, softcap, int(causal), st)


def ref_one(q, k, v, scale, softcap, causal, upcast):
    """q [sq, hq, d], k/v [sk, hkv, d] -> out [sq, hq, d] fp32, lse [hq, sq] fp32."""
    sq, hq, d = q.shape
    sk, hkv, _ = k.shape
    out = torch.zeros(sq, hq, d, device=q.device, dtype=torch.float32)
    lse = torch.full((hq, sq), -math.inf, device=q.device, dtype=torch.float32)
    if sq == 0 or sk == 0:
        return out, lse
    rep = hq // hkv
    row = torch.arange(sq, device=q.device)[:, None]
    col = torch.arange(sk, device=q.device)[None, :]
    mask = (col <= row + sk - sq) if causal else torch.ones(sq, sk, dtype=torch.bool, device=q.device)
    chunk = max(1, (1 << 28) // (sq * sk))
    for h0 in range(0, hq, chunk):
        hs = range(h0, min(hq, h0 + chunk))
        qh = q[:, h0:hs.stop].transpose(0, 1)  # [h, sq, d]
        kh = k[:, [h // rep for h in hs]].transpose(0, 1)
        vh = v[:, [h // rep for h in hs]].transpose(0, 1)
        if upcast:
            s = torch.matmul(qh.float(), kh.float().transpose(1, 2)) * scale
        else:
            s = torch.matmul(qh, kh.transpose(1, 2)).float() * scale
        if softcap > 0:
            s = softcap * torch.tanh(s / softcap)
        s = s.masked_fill(~mask, -math.inf)
        lse[h0:hs.stop] = torch.logsumexp(s, dim=-1)
        p = torch.softmax(s, dim=-1).nan_to_num(0.0)
        if upcast:
            o = torch.matmul(p, vh.float())
        else:
            o = torch.matmul(p.to(torch.bfloat16), vh).float()
        out[:, h0:hs.stop] = o.transpose(0, 1)
        del s, p, o
    return out, lse


def make_inputs(sc, gen_scale):
    """Returns q, k, v, out (possibly strided views), lse, cu_q, cu_k, B, sq, sk."""
    hq, hkv, d = sc["hq"], sc["hkv"], sc["d"]
    dev = "cuda"
    bf = torch.bfloat16

    def rnd(*shape, mag=1.0):
        return (torch.randn(*shape, device=dev, dtype=torch.float32) * mag).to(bf)

    mq = gen_scale * sc.get("mag", 1.0)
    if "lens" in sc:  # varlen
        lq = [a for a, _ in sc["lens"]]
        lk = [b for _, b in sc["lens"]]
        cu_q = torch.tensor([0, *itertools.accumulate(lq)], device=dev, dtype=torch.int32)
        cu_k = torch.tensor([0, *itertools.accumulate(lk)], device=dev, dtype=torch.int32)
        tq, tk = sum(lq), sum(lk)
        if sc.get("layout") == "packed":  # equal q/k lengths: slices of one packed qkv tensor
            assert tq == tk and hq == hkv
            qkv = rnd(tq, 3, hq, d, mag=mq)
            q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]
        else:
            q, k, v = rnd(tq, hq, d, mag=mq), rnd(tk, hkv, d, mag=mq), rnd(tk, hkv, d, mag=sc.get("vmag", 1.0))
        out = torch.full((tq, hq, d), math.nan, device=dev, dtype=bf)
        lse = torch.full((hq, tq), math.nan, device=dev, dtype=torch.float32)
        return q, k, v, out, lse, cu_q, cu_k, len(lq), max(lq), max(lk)
    B, sq, sk = sc["B"], sc["sq"], sc["sk"]
    layout = sc.get("layout", "contig")
    if layout == "packed":
        assert sq == sk and hq == hkv
        qkv = rnd(B, sq, 3, hq, d, mag=mq)
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    elif layout == "odd":  # unaligned base and odd row strides: exercises the scalar load path
        def odd(s, h):
            buf = rnd(B * s * (h * d + 3) + 8, mag=mq)
            return buf.as_strided((B, s, h, d), (s * (h * d + 3), h * d + 3, d, 1), 1)
        q, k, v = odd(sq, hq), odd(sk, hkv), odd(sk, hkv)
    else:
        q, k, v = rnd(B, sq, hq, d, mag=mq), rnd(B, sk, hkv, d, mag=mq), rnd(B, sk, hkv, d, mag=sc.get("vmag", 1.0))
    if sc.get("strided_out"):
        out = torch.full((B, sq, 2 * hq, d), math.nan, device=dev, dtype=bf)[:, :, 1::2]
    else:
        out = torch.full((B, sq, hq, d), math.nan, device=dev, dtype=bf)
    lse = torch.full((B, hq, sq), math.nan, device=dev, dtype=torch.float32)
    return q, k, v, out, lse, None, None, B, sq, sk


def reference(sc, q, k, v, cu_q, cu_k, B, upcast):
    scale = sc.get("scale", 1.0 / math.sqrt(sc["d"]))
    sc_cap = sc.get("softcap", 0.0)
    if cu_q is not None:
        outs, lses = [], []
        cq, ck = cu_q.tolist(), cu_k.tolist()
        for b in range(B):
            o, lo = ref_one(q[cq[b]:cq[b + 1]], k[ck[b]:ck[b + 1]], v[ck[b]:ck[b + 1]], scale, sc_cap, sc["causal"], upcast)
            outs.append(o)
            lses.append(lo)
        return torch.cat(outs, 0), torch.cat(lses, 1)
    outs, lses = [], []
    for b in range(B):
        o, lo = ref_one(q[b], k[b], v[b], scale, sc_cap, sc["causal"], upcast)
        outs.append(o)
        lses.append(lo)
    return torch.stack(outs), torch.stack(lses)


def check(lib, sc, graph=False):
    q, k, v, out, lse, cu_q, cu_k, B, sq, sk = make_inputs(sc, gen_scale=1.0)
    scale = sc.get("scale", 1.0 / math.sqrt(sc["d"]))
    args = (q, k, v, out, lse, cu_q, cu_k, B, sq, sk, sc["hq"], sc["hkv"], sc["d"], scale, sc.get("softcap", 0.0), sc["causal"])
    rc = call(lib, *args)
    if graph:  # first call done; capture a second call in a CUDA graph, re-poison, replay
        s = torch.cuda.Stream()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s):
            rc2 = call(lib, *args, stream=s.cuda_stream)
        out.fill_(math.nan)
        lse.fill_(math.nan)
        g.replay()
        rc = rc or rc2
    torch.cuda.synchronize()
    if rc != 0:
        return dict(ok=False, why=f"rc={rc}")
    o_ref, l_ref = reference(sc, q, k, v, cu_q, cu_k, B, upcast=True)
    o_pt, _ = reference(sc, q, k, v, cu_q, cu_k, B, upcast=False)
    o = out.float()
    nan = bool(torch.isnan(o).any() or torch.isnan(lse).any())
    err = (o - o_ref).abs().max().item() if o.numel() else 0.0
    err_pt = (o_pt - o_ref).abs().max().item() if o.numel() else 0.0
    inf_ref, inf_got = torch.isinf(l_ref), torch.isinf(lse)
    inf_match = bool((inf_ref == inf_got).all()) and bool((lse[inf_got] < 0).all())
    fin = ~inf_ref
    lerr = (lse[fin] - l_ref[fin]).abs().max().item() if fin.any() else 0.0
    lscale = l_ref[fin].abs().max().item() if fin.any() else 0.0
    ok = (not nan) and inf_match and err <= 2 * err_pt + 1e-5 and lerr <= 1e-3 + 1e-4 * lscale
    why = "" if ok else ("NaN " if nan else "") + ("" if inf_match else "-inf mismatch ") + f"err={err:.2e} lse={lerr:.2e}"
    n_inf = int(inf_ref.sum().item())
    return dict(ok=ok, err=err, err_pt=err_pt, lerr=lerr, n_inf=n_inf, why=why)


def scenarios():
    S = []
    for d in (64, 96, 128, 192, 256):
        for causal in (False, True):
            S.append(dict(name=f"d{d}{'_c' if causal else ''}", B=2, sq=512, sk=512, hq=4, hkv=4, d=d, causal=causal))
    for sq, sk in ((1, 1), (113, 203), (239, 1), (799, 3), (1023, 1024), (4224, 4224)):
        S.append(dict(name=f"ragged{sq}x{sk}_c", B=1, sq=sq, sk=sk, hq=4, hkv=4, d=128, causal=True))
    S.append(dict(name="ragged113x203", B=2, sq=113, sk=203, hq=2, hkv=2, d=192, causal=False))
    S.append(dict(name="ragged203x113_c", B=2, sq=203, sk=113, hq=2, hkv=2, d=96, causal=True))
    S.append(dict(name="gqa8/2_c", B=2, sq=333, sk=777, hq=8, hkv=2, d=128, causal=True))
    S.append(dict(name="mqa8/1", B=2, sq=400, sk=400, hq=8, hkv=1, d=64, causal=False))
    S.append(dict(name="softcap30_c", B=2, sq=300, sk=500, hq=4, hkv=2, d=128, causal=True, softcap=30.0, mag=4.0))
    S.append(dict(name="softcap5_d256", B=1, sq=257, sk=257, hq=2, hkv=2, d=256, causal=False, softcap=5.0, mag=2.0))
    lens = [(100, 150), (0, 40), (357, 357), (1, 900), (64, 0), (643, 200)]
    S.append(dict(name="varlen_gqa", lens=lens, hq=6, hkv=3, d=128, causal=False))
    S.append(dict(name="varlen_c", lens=lens, hq=4, hkv=4, d=64, causal=True))
    S.append(dict(name="varlen_softcap_d192_c", lens=lens, hq=4, hkv=1, d=192, causal=True, softcap=20.0))
    S.append(dict(name="varlen_packed_c", lens=[(300, 300), (0, 0), (77, 77), (1024, 1024)], hq=4, hkv=4, d=128, causal=True, layout="packed"))
    S.append(dict(name="decode1x8192", B=4, sq=1, sk=8192, hq=16, hkv=2, d=128, causal=True))
    S.append(dict(name="decode1x8192_d256", B=2, sq=1, sk=8192, hq=8, hkv=8, d=256, causal=False))
    S.append(dict(name="chunk64x16384_c", B=1, sq=64, sk=16384, hq=8, hkv=8, d=128, causal=True))
    S.append(dict(name="chunk17x5000_c", B=2, sq=17, sk=5000, hq=4, hkv=4, d=96, causal=True))
    S.append(dict(name="packed_qkv_c", B=2, sq=1000, sk=1000, hq=8, hkv=8, d=128, causal=True, layout="packed"))
    S.append(dict(name="packed_qkv_d64", B=3, sq=517, sk=517, hq=4, hkv=4, d=64, causal=False, layout="packed", strided_out=True))
    S.append(dict(name="odd_strides_c", B=2, sq=130, sk=250, hq=3, hkv=3, d=96, causal=True, layout="odd"))
    S.append(dict(name="bigmag_c", B=2, sq=700, sk=700, hq=4, hkv=4, d=128, causal=True, mag=10.0, vmag=5.0))
    S.append(dict(name="bigmag_d256", B=1, sq=300, sk=900, hq=4, hkv=4, d=256, causal=False, mag=8.0))
    S.append(dict(name="graph_replay_c", B=2, sq=333, sk=555, hq=4, hkv=2, d=128, causal=True, graph=True))
    S.append(dict(name="paper16k_d128_c", B=1, sq=16384, sk=16384, hq=16, hkv=16, d=128, causal=True))
    return S


def bad_inputs(lib):
    q = torch.zeros(1, 8, 4, 128, device="cuda", dtype=torch.bfloat16)
    lse = torch.zeros(1, 4, 8, device="cuda")
    r1 = call(lib, q[..., :80].contiguous(), q[..., :80].contiguous(), q[..., :80].contiguous(), q[..., :80].contiguous(), lse,
              None, None, 1, 8, 8, 4, 4, 80, 0.1, 0.0, False)
    k3 = torch.zeros(1, 8, 3, 128, device="cuda", dtype=torch.bfloat16)
    r2 = call(lib, q, k3, k3, q.clone(), lse, None, None, 1, 8, 8, 4, 3, 128, 0.1, 0.0, False)
    return r1, r2


def bench(lib, B, S, d, causal, reps=5):
    H = 2048 // d
    q, k, v = (torch.randn(B, S, H, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    out = torch.empty_like(q)
    lse = torch.empty(B, H, S, device="cuda")
    args = (q, k, v, out, lse, None, None, B, S, S, H, H, d, 1 / math.sqrt(d), 0.0, causal)
    assert call(lib, *args) == 0
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(reps):
        call(lib, *args)
    e1.record()
    torch.cuda.synchronize()
    ms = e0.elapsed_time(e1) / reps
    flop = 4 * B * S * S * H * d / (2 if causal else 1)
    return ms, flop / ms / 1e9


def main() -> int:
    path = sys.argv[1] if len(sys.argv) > 1 else "build/seed/flash_attn_fwd_sm90a.so"
    lib = load_lib(path)
    torch.manual_seed(0)
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}  lib {path}", flush=True)
    r1, r2 = bad_inputs(lib)
    print(f"unsupported: head_dim=80 -> rc={r1}; heads 4/3 -> rc={r2}", flush=True)

    print("\nspeed (B*S=16k, H*D=2048):", flush=True)
    for S in (16384, 2048):
        for d in (64, 128, 256):
            for causal in (False, True):
                ms, tf = bench(lib, 16384 // S, S, d, causal)
                print(f"  B={16384 // S:2d} S={S:5d} d={d:3d} causal={int(causal)}  {ms:8.2f} ms  {tf:6.1f} TFLOP/s", flush=True)

    rows = []
    t_all = time.time()
    for sc in scenarios():
        t0 = time.time()
        try:
            res = check(lib, sc, graph=sc.get("graph", False))
        except Exception as e:  # noqa: BLE001 - report and go on
            res = dict(ok=False, why=f"{type(e).__name__}: {e}"[:80])
        res["t"] = time.time() - t0
        rows.append((sc["name"], res))
        torch.cuda.empty_cache()
    print(f"\n{'scenario':24s} {'ok':4s} {'err':>9s} {'err_bf16':>9s} {'lse_err':>9s} {'-inf':>6s} {'s':>5s}")
    for name, r in rows:
        print(f"{name:24s} {'PASS' if r['ok'] else 'FAIL':4s} {r.get('err', float('nan')):9.2e} "
              f"{r.get('err_pt', float('nan')):9.2e} {r.get('lerr', float('nan')):9.2e} {r.get('n_inf', -1):6d} "
              f"{r['t']:5.1f} {r.get('why', '')}")
    n_ok = sum(r["ok"] for _, r in rows)
    bad_ok = r1 != 0 and r2 != 0
    print(f"\n{n_ok}/{len(rows)} scenarios pass; unsupported inputs rejected: {bad_ok}; checks took {time.time() - t_all:.1f}s")
    return 0 if n_ok == len(rows) and bad_ok else 1


if __name__ == "__main__":
    sys.exit(main())
