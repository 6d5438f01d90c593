// add_rmsnorm for Hopper (and any sm_80+ GPU): fused residual add + RMSNorm, bf16, one pass over memory.
// Contract: evals/tasks/add_rmsnorm/entry.h.
//
// The operator is memory-bound (about 5 flops per 8 bytes), so the design is about bytes in flight:
// - a row is read once: each thread loads its V 16-byte vectors of x, the residual and the weight up
//   front (V independent loads of each, streaming hints for x and the residual, the read-only path for
//   the weight that every row shares), keeps h in registers as bf16 (the value it stores as the new
//   residual and normalises), so nothing is read twice; out is written from registers;
// - the sum of squares in float32: warp shuffles, and across warps one shared-memory exchange and a
//   single barrier (every warp reduces the per-warp sums itself);
// - the work rule (per launch, from hidden and rows): a row whose vectors fit in one warp at <= 4 a lane
//   (hidden <= 1024) goes to a warp, 8 rows to a CTA; a wider row to a CTA whose threads hold the
//   fewest vectors each (V >= 2) that keep it within 512 threads; with fewer rows than SMs (decode)
//   a row is spread over up to 1024 threads (V = 1 or 2), since latency then matters more than occupancy;
// - rows not 16-byte aligned (an odd hidden, a stride like hidden + 3), or wider than 32768, take a
//   general path: a CTA per row, element by element, h re-read from residual_out.
// In place (residual_out == residual): each thread reads its residual vectors before it writes the
// same addresses, and no other thread touches them; no pointer is declared __restrict__.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace {

struct Params {
    const __nv_bfloat16* x;
    const __nv_bfloat16* residual;
    const __nv_bfloat16* weight;
    __nv_bfloat16* out;
    __nv_bfloat16* residual_out;
    int rows, hidden;
    long long xs, rs, os, ros;
    float eps;
};

constexpr int kWarpRowsPerCta = 8;

__device__ __forceinline__ void unpack(uint4 v, float f[8]) {
    const __nv_bfloat162* b = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 t = __bfloat1622float2(b[i]);
        f[2 * i] = t.x;
        f[2 * i + 1] = t.y;
    }
}

__device__ __forceinline__ uint4 pack(const float f[8]) {
    uint4 v;
    __nv_bfloat162* b = reinterpret_cast<__nv_bfloat162*>(&v);
#pragma unroll
    for (int i = 0; i < 4; ++i) b[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// The most threads a CTA of V vectors a thread may have: 1024 while a thread fits in 64 registers;
// with V = 4, 512 threads and two CTAs an SM (64 registers), so that one loads while the other reduces.
constexpr int max_threads(int v) { return v <= 2 ? 1024 : 512; }
constexpr int min_ctas(int v) { return v == 4 ? 2 : 1; }

// WARP_ROWS: a warp per row, kWarpRowsPerCta rows a CTA; else a CTA per row.
template <int V, bool RES, bool WARP_ROWS>
__global__ void __launch_bounds__(WARP_ROWS ? 32 * kWarpRowsPerCta : max_threads(V), WARP_ROWS ? 1 : min_ctas(V))
add_rmsnorm_vec(Params p) {
    const int lanes = WARP_ROWS ? 32 : blockDim.x;
    const int t = WARP_ROWS ? (threadIdx.x & 31) : threadIdx.x;
    const long long row = WARP_ROWS ? (long long)blockIdx.x * kWarpRowsPerCta + (threadIdx.x >> 5) : blockIdx.x;
    if (WARP_ROWS && row >= p.rows) return;  // the whole warp leaves together; no barrier follows
    const int vecs = p.hidden >> 3;
    const uint4* xr = reinterpret_cast<const uint4*>(p.x + row * p.xs);
    const uint4* rr = reinterpret_cast<const uint4*>(RES ? p.residual + row * p.rs : p.x);
    uint4* ror = reinterpret_cast<uint4*>(RES ? p.residual_out + row * p.ros : p.out);
    uint4* outr = reinterpret_cast<uint4*>(p.out + row * p.os);
    const uint4* wr = reinterpret_cast<const uint4*>(p.weight);

    // h[i]: x, then h; o[i]: the residual, then (once it is added) the weight, loaded while the
    // row's sum is reduced; with no residual the weight is loaded at once
    uint4 h[V], o[V];
#pragma unroll
    for (int i = 0; i < V; ++i) {
        const int c = t + i * lanes;
        if (c < vecs) {
            h[i] = __ldcs(xr + c);
            o[i] = RES ? __ldcs(rr + c) : __ldg(wr + c);
        }
    }
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < V; ++i) {
        const int c = t + i * lanes;
        if (c < vecs) {
            float a[8];
            unpack(h[i], a);
            if (RES) {
                float b[8];
                unpack(o[i], b);
#pragma unroll
                for (int k = 0; k < 8; ++k) a[k] += b[k];
                h[i] = pack(a);  // h as stored: the new residual, and what is normalised
                ror[c] = h[i];
                o[i] = __ldg(wr + c);
                unpack(h[i], a);
            }
#pragma unroll
            for (int k = 0; k < 8; ++k) sum += a[k] * a[k];
        }
    }
    sum = warp_sum(sum);
    if (!WARP_ROWS) {
        __shared__ float partial[32];
        const int warps = blockDim.x >> 5, lane = threadIdx.x & 31;
        if (lane == 0) partial[threadIdx.x >> 5] = sum;
        __syncthreads();
        sum = warp_sum(lane < warps ? partial[lane] : 0.f);
    }
    const float scale = rsqrtf(sum / p.hidden + p.eps);
#pragma unroll
    for (int i = 0; i < V; ++i) {
        const int c = t + i * lanes;
        if (c < vecs) {
            // keep h packed across the reduction (4 registers a vector, not 8 floats): the compiler
            // would otherwise keep the unpacked values of the sum's loop alive until here
            asm volatile("" : "+r"(h[i].x), "+r"(h[i].y), "+r"(h[i].z), "+r"(h[i].w));
            float a[8], b[8];
            unpack(h[i], a);
            unpack(o[i], b);
#pragma unroll
            for (int k = 0; k < 8; ++k) a[k] = a[k] * scale * b[k];
            outr[c] = pack(a);
        }
    }
}

// Any alignment and any width: a CTA per row, one element at a time, h re-read from residual_out.
template <bool RES>
__global__ void __launch_bounds__(512) add_rmsnorm_any(Params p) {
    __shared__ float partial[32];
    const long long row = blockIdx.x;
    const __nv_bfloat16* xr = p.x + row * p.xs;
    float sum = 0.f;
    for (int c = threadIdx.x; c < p.hidden; c += blockDim.x) {
        float h = __bfloat162float(xr[c]);
        if (RES) {
            const __nv_bfloat16 stored = __float2bfloat16(h + __bfloat162float(p.residual[row * p.rs + c]));
            p.residual_out[row * p.ros + c] = stored;
            h = __bfloat162float(stored);
        }
        sum += h * h;
    }
    sum = warp_sum(sum);
    const int warps = blockDim.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) partial[threadIdx.x >> 5] = sum;
    __syncthreads();
    sum = warp_sum(lane < warps ? partial[lane] : 0.f);
    const float scale = rsqrtf(sum / p.hidden + p.eps);
    for (int c = threadIdx.x; c < p.hidden; c += blockDim.x) {
        // each thread re-reads only the elements it wrote itself
        const float h = RES ? __bfloat162float(p.residual_out[row * p.ros + c]) : __bfloat162float(xr[c]);
        p.out[row * p.os + c] = __float2bfloat16(h * scale * __bfloat162float(p.weight[c]));
    }
}

bool aligned16(const void* ptr, long long stride_elems) {
    return ((reinterpret_cast<uintptr_t>(ptr) | static_cast<uintptr_t>(stride_elems * 2)) & 15) == 0;
}

int multiprocessors() {
    static int cached[64] = {};
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) return 132;
    if (!cached[device] && cudaDeviceGetAttribute(&cached[device], cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
        return 132;
    return cached[device];
}

template <bool RES>
void launch_vec(const Params& p, int v, bool warp_rows, int threads, cudaStream_t stream) {
    if (warp_rows) {
        const unsigned grid = (p.rows + kWarpRowsPerCta - 1) / kWarpRowsPerCta;
        switch (v) {
            case 1: add_rmsnorm_vec<1, RES, true><<<grid, 32 * kWarpRowsPerCta, 0, stream>>>(p); break;
            case 2: add_rmsnorm_vec<2, RES, true><<<grid, 32 * kWarpRowsPerCta, 0, stream>>>(p); break;
            default: add_rmsnorm_vec<4, RES, true><<<grid, 32 * kWarpRowsPerCta, 0, stream>>>(p); break;
        }
        return;
    }
    switch (v) {
        case 1: add_rmsnorm_vec<1, RES, false><<<p.rows, threads, 0, stream>>>(p); break;
        case 2: add_rmsnorm_vec<2, RES, false><<<p.rows, threads, 0, stream>>>(p); break;
        case 4: add_rmsnorm_vec<4, RES, false><<<p.rows, threads, 0, stream>>>(p); break;
        default: add_rmsnorm_vec<8, RES, false><<<p.rows, threads, 0, stream>>>(p); break;
    }
}

}  // namespace

extern "C" int ks_add_rmsnorm(const void* x, const void* residual, const void* weight, void* out, void* residual_out,
                              int rows, int hidden, long long x_row_stride, long long residual_row_stride,
                              long long out_row_stride, long long residual_out_row_stride, float eps,
                              void* stream_ptr) {
    if (rows == 0 && hidden >= 1) return 0;  // nothing to do: an empty tensor may have a NULL pointer
    if (rows < 0 || hidden < 1 || !x || !weight || !out || (residual && !residual_out)) return 1;
    const bool res = residual != nullptr;
    Params p{static_cast<const __nv_bfloat16*>(x), static_cast<const __nv_bfloat16*>(residual),
             static_cast<const __nv_bfloat16*>(weight), static_cast<__nv_bfloat16*>(out),
             static_cast<__nv_bfloat16*>(residual_out), rows, hidden, x_row_stride,
             res ? residual_row_stride : 0, out_row_stride, res ? residual_out_row_stride : 0, eps};
    cudaStream_t stream = static_cast<cudaStream_t>(stream_ptr);
    const int vecs = hidden / 8;
    const bool vectorised = hidden % 8 == 0 && vecs <= 8 * max_threads(8) && aligned16(x, x_row_stride) &&
                            aligned16(weight, 0) && aligned16(out, out_row_stride) &&
                            (!res || (aligned16(residual, residual_row_stride) &&
                                      aligned16(residual_out, residual_out_row_stride)));
    if (!vectorised) {
        const int threads = hidden >= 4096 ? 512 : hidden >= 1024 ? 256 : 128;
        if (res) add_rmsnorm_any<true><<<rows, threads, 0, stream>>>(p);
        else add_rmsnorm_any<false><<<rows, threads, 0, stream>>>(p);
        return cudaGetLastError() == cudaSuccess ? 0 : 2;
    }
    // the work rule: how many 16-byte vectors each thread holds (V) and how many threads share a row
    int v = 0, threads = 32;
    bool warp_rows = vecs <= 32 * 4;
    if (warp_rows) {
        v = vecs <= 32 ? 1 : vecs <= 64 ? 2 : 4;
    } else {
        const bool few_rows = rows < multiprocessors();
        const auto limit = [few_rows](int v) { return few_rows ? max_threads(v) : 512; };
        for (v = few_rows ? 1 : 2; v < 8 && (vecs + v - 1) / v > limit(v); v *= 2) {}
        threads = ((vecs + v - 1) / v + 31) / 32 * 32;
        if (threads > max_threads(v)) return 3;  // cannot happen for vecs <= 8 * max_threads(8)
    }
    if (res) launch_vec<true>(p, v, warp_rows, threads, stream);
    else launch_vec<false>(p, v, warp_rows, threads, stream);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
