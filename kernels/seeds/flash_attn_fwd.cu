// Seed kernel for flash_attn_fwd: the "existing, slow CUDA kernel" optimization runs start from.
//
// A plain FlashAttention-style forward pass: one thread block handles BM query rows of one
// (sequence, head); it streams the keys in tiles of BN, computing S = Q K^T and O += P V with WMMA
// (bf16 inputs, fp32 accumulation) and an online softmax in fp32. Everything lives in shared memory
// (Q, the current K/V tile, the score tile S, the probability tile P and the fp32 output
// accumulator O), so the code stays simple and readable. It is deliberately NOT tuned: no
// pipelining, no register-resident accumulators, no Hopper/Blackwell-specific instructions.
//
// Contract: evals/tasks/flash_attn_fwd/entry.h (FlashAttention forward semantics).
//   q/k/v/out: bf16 [batch, seqlen, heads, head_dim] through strides {batch, row, head} (elements),
//   last dim contiguous; varlen (cu_seqlens non-NULL): packed [total, heads, head_dim], lse is
//   [heads_q, total_q], otherwise lse is [batch, heads_q, seqlen_q]. GQA/MQA: kv head = q head /
//   (heads_q / heads_kv). Causal masks aligned bottom-right: row i sees key j iff
//   j <= i + seqlen_k - seqlen_q. Rows that see no key get zeros and lse = -inf.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <mma.h>
#include <math.h>
#include <stdint.h>

using namespace nvcuda;

namespace {

constexpr int kWarps = 4;                // each warp owns 16 query rows
constexpr int BM = 16 * kWarps;          // query rows per block
constexpr int BN = 64;                   // keys per tile
constexpr int kThreads = 32 * kWarps;
constexpr int PAD_H = 8;                 // bf16 row padding (keeps WMMA loads off bank conflicts)
constexpr int PAD_F = 4;                 // fp32 row padding
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

struct Params {
  const __nv_bfloat16* q;
  const __nv_bfloat16* k;
  const __nv_bfloat16* v;
  __nv_bfloat16* o;
  float* lse;
  const int* cu_q;
  const int* cu_k;
  int seqlen_q, seqlen_k;   // fixed lengths (non-varlen)
  int heads_q, heads_kv, batch;
  long long q_b, q_r, q_h, k_b, k_r, k_h, v_b, v_r, v_h, o_b, o_r, o_h;
  float scale, softcap;
  int causal;
  int vec;                  // 1: q/k/v allow 16-byte loads
};

// Shared-memory layout for head dim D (all offsets are multiples of 32 bytes, as WMMA requires).
template <int D>
struct Smem {
  static constexpr int LDH = D + PAD_H;   // Q, K, V row stride (bf16)
  static constexpr int LDP = BN + PAD_H;  // P row stride (bf16)
  static constexpr int LDS = BN + PAD_F;  // S row stride (fp32)
  static constexpr int LDO = D + PAD_F;   // O row stride (fp32)
  static constexpr size_t q_off = 0;
  static constexpr size_t k_off = q_off + sizeof(__nv_bfloat16) * BM * LDH;
  static constexpr size_t v_off = k_off + sizeof(__nv_bfloat16) * BN * LDH;
  static constexpr size_t p_off = v_off + sizeof(__nv_bfloat16) * BN * LDH;
  static constexpr size_t s_off = p_off + sizeof(__nv_bfloat16) * BM * LDP;
  static constexpr size_t o_off = s_off + sizeof(float) * BM * LDS;
  static constexpr size_t bytes = o_off + sizeof(float) * BM * LDO;
};

// Copy rows [0, rows) of a [rows, D] tile from global memory (row stride `stride`) into shared
// memory (row stride ld); rows at or past `valid` are filled with zeros.
template <int D>
__device__ void load_tile(__nv_bfloat16* dst, int ld, const __nv_bfloat16* src, long long stride,
                          int rows, int valid, bool vec) {
  if (vec) {
    constexpr int C = D / 8;  // 16-byte chunks per row
    for (int idx = threadIdx.x; idx < rows * C; idx += kThreads) {
      int r = idx / C, c = (idx % C) * 8;
      uint4 val = make_uint4(0, 0, 0, 0);
      if (r < valid) val = *reinterpret_cast<const uint4*>(src + r * stride + c);
      *reinterpret_cast<uint4*>(dst + r * ld + c) = val;
    }
  } else {
    for (int idx = threadIdx.x; idx < rows * D; idx += kThreads) {
      int r = idx / D, c = idx % D;
      dst[r * ld + c] = r < valid ? src[r * stride + c] : __float2bfloat16(0.f);
    }
  }
}

template <int D>
__global__ void __launch_bounds__(kThreads) flash_attn_fwd_kernel(Params p) {
  using L = Smem<D>;
  extern __shared__ __align__(128) unsigned char smem[];
  __nv_bfloat16* sQ = reinterpret_cast<__nv_bfloat16*>(smem + L::q_off);
  __nv_bfloat16* sK = reinterpret_cast<__nv_bfloat16*>(smem + L::k_off);
  __nv_bfloat16* sV = reinterpret_cast<__nv_bfloat16*>(smem + L::v_off);
  __nv_bfloat16* sP = reinterpret_cast<__nv_bfloat16*>(smem + L::p_off);
  float* sS = reinterpret_cast<float*>(smem + L::s_off);
  float* sO = reinterpret_cast<float*>(smem + L::o_off);

  const int m0 = blockIdx.x * BM;
  const int hq = blockIdx.y;
  const int b = blockIdx.z;
  const int hk = hq / (p.heads_q / p.heads_kv);

  // Sequence extents and base pointers for this (batch, head).
  int sq = p.seqlen_q, sk = p.seqlen_k;
  long long q_row0 = 0, k_row0 = 0;  // first row of the sequence in the packed tensors (varlen)
  const __nv_bfloat16 *q = p.q, *k = p.k, *v = p.v;
  __nv_bfloat16* o = p.o;
  float* lse;
  if (p.cu_q != nullptr) {
    q_row0 = p.cu_q[b];
    k_row0 = p.cu_k[b];
    sq = p.cu_q[b + 1] - p.cu_q[b];
    sk = p.cu_k[b + 1] - p.cu_k[b];
    const long long total_q = p.cu_q[p.batch];
    lse = p.lse + hq * total_q + q_row0;
  } else {
    q += b * p.q_b; k += b * p.k_b; v += b * p.v_b; o += b * p.o_b;
    lse = p.lse + ((long long)b * p.heads_q + hq) * sq;
  }
  if (m0 >= sq) return;  // whole block past the end of this sequence
  q += (q_row0 + m0) * p.q_r + hq * p.q_h;
  o += (q_row0 + m0) * p.o_r + hq * p.o_h;
  k += k_row0 * p.k_r + hk * p.k_h;
  v += k_row0 * p.v_r + hk * p.v_h;
  lse += m0;

  // Keys this block may need: up to the last key visible from its last valid row.
  const int rows_here = min(BM, sq - m0);
  int n_end = sk;
  if (p.causal) n_end = min(sk, m0 + rows_here + sk - sq);

  load_tile<D>(sQ, L::LDH, q, p.q_r, BM, rows_here, p.vec);
  for (int i = threadIdx.x; i < BM * L::LDO; i += kThreads) sO[i] = 0.f;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // Softmax layout: lane pair (2r, 2r+1) owns row r of the warp's 16 rows; lane parity h takes
  // columns h, h+2, h+4, ... Row state (m in log2 units, l) is kept by both lanes of the pair.
  const int r = lane / 2, h = lane % 2;
  const int row = m0 + warp * 16 + r;                       // row index within the sequence
  const int row_end = p.causal ? min(sk, row + sk - sq + 1) : sk;  // visible keys: [0, row_end)
  float m_run = -INFINITY, l_run = 0.f;
  __nv_bfloat16* wQ = sQ + warp * 16 * L::LDH;
  __nv_bfloat16* wP = sP + warp * 16 * L::LDP;
  float* wS = sS + warp * 16 * L::LDS;
  float* wO = sO + warp * 16 * L::LDO;

  for (int n0 = 0; n0 < n_end; n0 += BN) {
    __syncthreads();  // everyone is done with the previous K/V tile (and Q / O are initialised)
    load_tile<D>(sK, L::LDH, k + n0 * p.k_r, p.k_r, BN, sk - n0, p.vec);
    load_tile<D>(sV, L::LDH, v + n0 * p.v_r, p.v_r, BN, sk - n0, p.vec);
    __syncthreads();

    // S = Q K^T for this warp's 16 rows.
    for (int nt = 0; nt < BN / 16; ++nt) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.f);
      for (int kt = 0; kt < D / 16; ++kt) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> bk;
        wmma::load_matrix_sync(a, wQ + kt * 16, L::LDH);
        wmma::load_matrix_sync(bk, sK + nt * 16 * L::LDH + kt * 16, L::LDH);
        wmma::mma_sync(acc, a, bk, acc);
      }
      wmma::store_matrix_sync(wS + nt * 16, acc, L::LDS, wmma::mem_row_major);
    }
    __syncwarp();

    // Online softmax on the tile: scale, cap, mask, then P = exp(S - m_new), rescale O and l.
    float s[BN / 2];
    float m_tile = -INFINITY;
    for (int j = 0; j < BN / 2; ++j) {
      const int c = h + 2 * j;
      float x = wS[r * L::LDS + c] * p.scale;
      if (p.softcap > 0.f) x = p.softcap * tanhf(x / p.softcap);
      x = (n0 + c < row_end) ? x * kLog2e : -INFINITY;
      s[j] = x;
      m_tile = fmaxf(m_tile, x);
    }
    m_tile = fmaxf(m_tile, __shfl_xor_sync(0xffffffffu, m_tile, 1));
    const float m_new = fmaxf(m_run, m_tile);
    const float m_use = (m_new == -INFINITY) ? 0.f : m_new;  // no key seen yet: avoid inf - inf
    const float alpha = exp2f(m_run - m_use);
    float sum = 0.f;
    for (int j = 0; j < BN / 2; ++j) {
      const float pj = exp2f(s[j] - m_use);
      sum += pj;
      wP[r * L::LDP + h + 2 * j] = __float2bfloat16(pj);
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    l_run = l_run * alpha + sum;
    m_run = m_new;
    for (int c = h; c < D; c += 2) wO[r * L::LDO + c] *= alpha;
    __syncwarp();

    // O += P V for this warp's 16 rows.
    for (int dt = 0; dt < D / 16; ++dt) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::load_matrix_sync(acc, wO + dt * 16, L::LDO, wmma::mem_row_major);
      for (int kt = 0; kt < BN / 16; ++kt) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> bv;
        wmma::load_matrix_sync(a, wP + kt * 16, L::LDP);
        wmma::load_matrix_sync(bv, sV + kt * 16 * L::LDH + dt * 16, L::LDH);
        wmma::mma_sync(acc, a, bv, acc);
      }
      wmma::store_matrix_sync(wO + dt * 16, acc, L::LDO, wmma::mem_row_major);
    }
  }
  __syncthreads();  // O may only have been zeroed (no visible keys) by other warps' threads

  // Epilogue: out = O / l (zeros where no key was visible), lse = ln(sum exp(score)).
  if (h == 0 && row < sq)
    lse[warp * 16 + r] = l_run > 0.f ? (m_run + log2f(l_run)) * kLn2 : -INFINITY;
  for (int rr = 0; rr < 16; ++rr) {
    const float l = __shfl_sync(0xffffffffu, l_run, 2 * rr);
    const int i = warp * 16 + rr;  // row within the block
    if (m0 + i >= sq) break;
    const float inv = l > 0.f ? 1.f / l : 0.f;
    for (int c = lane; c < D; c += 32)
      o[i * p.o_r + c] = __float2bfloat16(wO[rr * L::LDO + c] * inv);
  }
}

template <int D>
int launch(const Params& p, int max_seqlen_q, cudaStream_t stream) {
  static bool attr_set = false;  // set once: later calls stay capture-safe and cheap
  const size_t smem = Smem<D>::bytes;
  if (!attr_set) {
    cudaError_t e = cudaFuncSetAttribute(flash_attn_fwd_kernel<D>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess) return (int)e;
    attr_set = true;
  }
  dim3 grid((max_seqlen_q + BM - 1) / BM, p.heads_q, p.batch);
  flash_attn_fwd_kernel<D><<<grid, kThreads, smem, stream>>>(p);
  return (int)cudaGetLastError();
}

bool aligned16(const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15) == 0; }

}  // namespace

extern "C" int ks_flash_attn_fwd(
    const void* q, const void* k, const void* v,
    void* out,
    float* lse,
    const int* cu_seqlens_q, const int* cu_seqlens_k,
    int batch, int seqlen_q, int seqlen_k,
    int heads_q, int heads_kv, int head_dim,
    const long long* q_strides, const long long* k_strides,
    const long long* v_strides, const long long* o_strides,
    float softmax_scale, float softcap, int causal,
    void* stream) {
  if (!q || !k || !v || !out || !lse || !q_strides || !k_strides || !v_strides || !o_strides)
    return 1;
  if (heads_q <= 0 || heads_kv <= 0 || heads_q % heads_kv != 0) return 2;
  if ((cu_seqlens_q == nullptr) != (cu_seqlens_k == nullptr)) return 3;
  if (batch < 0 || seqlen_q < 0 || seqlen_k < 0 || batch > 65535 || heads_q > 65535) return 4;
  if (batch == 0 || seqlen_q == 0) return 0;  // no query rows: nothing to write

  Params p;
  p.q = static_cast<const __nv_bfloat16*>(q);
  p.k = static_cast<const __nv_bfloat16*>(k);
  p.v = static_cast<const __nv_bfloat16*>(v);
  p.o = static_cast<__nv_bfloat16*>(out);
  p.lse = lse;
  p.cu_q = cu_seqlens_q;
  p.cu_k = cu_seqlens_k;
  p.seqlen_q = seqlen_q;
  p.seqlen_k = seqlen_k;
  p.heads_q = heads_q;
  p.heads_kv = heads_kv;
  p.batch = batch;
  const bool varlen = cu_seqlens_q != nullptr;
  p.q_b = varlen ? 0 : q_strides[0]; p.q_r = q_strides[1]; p.q_h = q_strides[2];
  p.k_b = varlen ? 0 : k_strides[0]; p.k_r = k_strides[1]; p.k_h = k_strides[2];
  p.v_b = varlen ? 0 : v_strides[0]; p.v_r = v_strides[1]; p.v_h = v_strides[2];
  p.o_b = varlen ? 0 : o_strides[0]; p.o_r = o_strides[1]; p.o_h = o_strides[2];
  p.scale = softmax_scale;
  p.softcap = softcap > 0.f ? softcap : 0.f;
  p.causal = causal ? 1 : 0;
  // 16-byte vector loads need aligned bases and strides that are multiples of 8 elements.
  bool vec = aligned16(q) && aligned16(k) && aligned16(v);
  const long long s8[] = {p.q_b, p.q_r, p.q_h, p.k_b, p.k_r, p.k_h, p.v_b, p.v_r, p.v_h};
  for (long long s : s8) vec = vec && (s % 8 == 0);
  p.vec = vec ? 1 : 0;

  cudaStream_t st = static_cast<cudaStream_t>(stream);
  switch (head_dim) {
    case 64: return launch<64>(p, seqlen_q, st);
    case 96: return launch<96>(p, seqlen_q, st);
    case 128: return launch<128>(p, seqlen_q, st);
    case 192: return launch<192>(p, seqlen_q, st);
    case 256: return launch<256>(p, seqlen_q, st);
    default: return 5;  // unsupported head_dim
  }
}
