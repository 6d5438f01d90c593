"""Generates the wgmma inline-asm wrappers pasted into flash_attn_fwd.cu (between the GEN markers)."""
import sys

SS_N = [64, 80, 96, 112, 128, 144, 160, 176, 192]
RS_N = [64, 96, 128, 192, 256]


def ss(n):
    r = n // 2
    regs = ", ".join(f"%{i}" for i in range(r))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(r))
    return f'''template <> struct Wgmma<{n}> {{
  // D[64x{n}] (+)= A[64x16] (smem, K-major) * B[16x{n}] (smem, K-major); bf16 in, f32 accumulate
  static __device__ __forceinline__ void ss(float* d, uint64_t da, uint64_t db, int acc) {{
    asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{r+2}, 0;\\n"
      "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16 {{{regs}}}, %{r}, %{r+1}, p, 1, 1, 0, 0;\\n}}\\n"
      : {outs}
      : "l"(da), "l"(db), "r"(acc));
  }}
'''


def ss_vt(n):
    r = n // 2
    regs = ", ".join(f"%{i}" for i in range(r))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(r))
    return f'''  // D[64x{n}] (+)= A[64x16] (smem, K-major) * B[16x{n}] (smem, N-major, i.e. transposed)
  static __device__ __forceinline__ void ss_vt(float* d, uint64_t da, uint64_t db, int acc) {{
    asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{r+2}, 0;\\n"
      "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16 {{{regs}}}, %{r}, %{r+1}, p, 1, 1, 0, 1;\\n}}\\n"
      : {outs}
      : "l"(da), "l"(db), "r"(acc));
  }}
'''


def rs(n):
    r = n // 2
    regs = ", ".join(f"%{i}" for i in range(r))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(r))
    return f'''  // D[64x{n}] += A[64x16] (registers) * B[16x{n}] (smem, N-major, i.e. transposed)
  static __device__ __forceinline__ void rs(float* d, const uint32_t* a, uint64_t db, int acc) {{
    asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{r+5}, 0;\\n"
      "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16 {{{regs}}}, {{%{r}, %{r+1}, %{r+2}, %{r+3}}}, %{r+4}, p, 1, 1, 1;\\n}}\\n"
      : {outs}
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc));
  }}
'''


# --ss-vt N[,N]: also the SS product with B N-major (P V with P in shared memory) for these widths (d64's 192 x 192 tile)
SS_VT_N = [int(x) for x in sys.argv[sys.argv.index("--ss-vt") + 1].split(",")] if "--ss-vt" in sys.argv else []
out = ["// ---- GEN BEGIN (kernels/hopper/flash_attn_fwd/gen_wgmma.py"
       + (" --ss-vt " + ",".join(map(str, SS_VT_N)) if SS_VT_N else "") + ") ----", "template <int N> struct Wgmma;"]
for n in sorted(set(SS_N) | set(RS_N)):
    s = ss(n)
    if n in RS_N:
        s += rs(n)
    if n in SS_VT_N:
        s += ss_vt(n)
    s += "};\n"
    out.append(s)
out.append("// ---- GEN END ----")
sys.stdout.write("\n".join(out) + "\n")
