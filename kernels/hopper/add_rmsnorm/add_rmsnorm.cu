// add_rmsnorm for Hopper and Blackwell (sm_90+: clusters): fused residual add + RMSNorm, bf16, one pass
// over memory. Contract: evals/tasks/add_rmsnorm/entry.h. Rows of any alignment take the vector path too;
// with fewer rows than SMs, a row of 96 KB or more is shared by a cluster of CTAs, its sums exchanged by
// plain distributed shared-memory stores between two cluster barriers. Map: README.md beside this file;
// versions and their judgements: RESULTS.md.
//
// The operator is memory-bound (about 5 flops per 8 bytes), so the design is about bytes in flight:
// - a row is read once: each thread loads its V chunks of 8 elements of x, the residual and the weight
//   up front (V independent loads of each, streaming hints for x and the residual, the read-only path
//   for the weight that every row shares), keeps h in registers as bf16 (the value it stores as the new
//   residual and normalises), so nothing is read twice; out is written from registers;
// - the sum of squares in float32: warp shuffles, and across warps one shared-memory exchange and a
//   single barrier (every warp reduces the per-warp sums itself);
// - the work rule (per launch, from hidden and rows): a row of <= 128 chunks (hidden < 1032) goes to a
//   warp, 8 rows to a CTA, when there are enough rows for a CTA of them on every SM; a wider row, or a
//   short row with fewer rows than that, to a CTA whose threads hold the fewest chunks each (V >= 2)
//   that keep it within 512 threads; a short row's CTA holds a chunk a thread; with fewer rows than SMs
//   (decode) a row is spread over up to 1024 threads (V = 1 or 2), since latency then matters more than
//   occupancy, and, where the row is wide and its pointers aligned, over a cluster of up to 8 CTAs on as
//   many SMs (an SM draws about 64 bytes a clock from L2: a row of 16384 with a residual moves 160 KB, over
//   a microsecond through one SM), each its share of the chunks, the sum of squares exchanged through
//   distributed shared memory; with V = 1 the weight is loaded with x and the residual, not after the add;
// - rows of any alignment (an odd hidden, a stride like hidden + 3): the chunks start where x's row is
//   16-byte aligned (at most 7 elements in), each pointer is then accessed in the widest vectors its own
//   alignment allows (16, 8, 4 or 2 bytes, the same for every chunk of a row), and the at most 14
//   elements before the first chunk and after the last are single elements, one a thread, also kept in
//   registers; only rows wider than 32768 (with 8 chunks a thread, 512 threads) take a general path: a
//   CTA per row, element by element, h re-read from residual_out.
// In place (residual_out == residual): each element belongs to one thread, which reads its residual
// before it writes the same address; no pointer is declared __restrict__.
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
// false: short rows always get a CTA each (one chunk a thread), whatever the rows; whether that beats
// warp rows on many rows has not been judged
constexpr bool kShortRowsToWarps = true;

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

// The widest access (16, 8, 4 or 2 bytes) that chunks at p, p + 8, p + 16, ... all allow.
__device__ __forceinline__ int chunk_width(const __nv_bfloat16* p) {
    const unsigned a = static_cast<unsigned>(reinterpret_cast<uintptr_t>(p)) | 16u;
    return static_cast<int>(a & (0u - a));
}

// 8 elements at p in accesses of `width` bytes; STREAM: evict-first (x, the residual), else read-only.
template <bool STREAM>
__device__ __forceinline__ uint4 load_chunk(const __nv_bfloat16* p, int width) {
    uint4 v;
    if (width == 16) {
        const uint4* q = reinterpret_cast<const uint4*>(p);
        v = STREAM ? __ldcs(q) : __ldg(q);
    } else if (width == 8) {
        const uint2* q = reinterpret_cast<const uint2*>(p);
        const uint2 lo = STREAM ? __ldcs(q) : __ldg(q), hi = STREAM ? __ldcs(q + 1) : __ldg(q + 1);
        v = make_uint4(lo.x, lo.y, hi.x, hi.y);
    } else if (width == 4) {
        const unsigned* q = reinterpret_cast<const unsigned*>(p);
        v.x = STREAM ? __ldcs(q) : __ldg(q);
        v.y = STREAM ? __ldcs(q + 1) : __ldg(q + 1);
        v.z = STREAM ? __ldcs(q + 2) : __ldg(q + 2);
        v.w = STREAM ? __ldcs(q + 3) : __ldg(q + 3);
    } else {
        const unsigned short* q = reinterpret_cast<const unsigned short*>(p);
        unsigned e[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) e[k] = STREAM ? __ldcs(q + k) : __ldg(q + k);
        v = make_uint4(e[0] | e[1] << 16, e[2] | e[3] << 16, e[4] | e[5] << 16, e[6] | e[7] << 16);
    }
    return v;
}

// Plain (weak) stores in inline assembly, opaque to the compiler, which would otherwise fold the 16-byte
// case into the 4-byte one (the branches store the same words at the same addresses).
__device__ __forceinline__ void st16(void* p, uint4 v) {
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
__device__ __forceinline__ void st8(void* p, unsigned a, unsigned b) {
    asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(p), "r"(a), "r"(b) : "memory");
}
__device__ __forceinline__ void st4(void* p, unsigned a) {
    asm volatile("st.global.b32 [%0], %1;" ::"l"(p), "r"(a) : "memory");
}
__device__ __forceinline__ void st2(void* p, unsigned short a) {
    asm volatile("st.global.b16 [%0], %1;" ::"l"(p), "h"(a) : "memory");
}

__device__ __forceinline__ void store_chunk(__nv_bfloat16* p, uint4 v, int width) {
    if (width == 16) {
        st16(p, v);
    } else if (width == 8) {
        st8(p, v.x, v.y);
        st8(p + 4, v.z, v.w);
    } else if (width == 4) {
        st4(p, v.x);
        st4(p + 2, v.y);
        st4(p + 4, v.z);
        st4(p + 6, v.w);
    } else {
        const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            st2(p + 2 * k, static_cast<unsigned short>(w[k] & 0xffffu));
            st2(p + 2 * k + 1, static_cast<unsigned short>(w[k] >> 16));
        }
    }
}

__device__ __forceinline__ float load_element(const __nv_bfloat16* p) {
    const unsigned short bits = __ldcs(reinterpret_cast<const unsigned short*>(p));
    return __uint_as_float(static_cast<unsigned>(bits) << 16);
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

constexpr int kMaxCluster = 8;  // the portable cluster size

__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ unsigned cluster_size() {
    unsigned n;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
    return n;
}

// The exchange of a cluster's partial sums. Each CTA arrives (relaxed: nothing to order yet) on the
// cluster barrier at its start, and waits on it just before its first store into another CTA: a CTA's
// shared memory may be written only once that CTA runs. Thread k < ranks then stores the CTA's sum into
// CTA k's slot [rank] (st.shared::cluster), and a second cluster barrier (release, acquire) orders every
// slot's store before any CTA reads its slots; nobody exits before every store into it has landed. The new
// residual is stored after this barrier, not before, so that its release has no global store to wait
// for (ptxas makes the release a MEMBAR.ALL.GPU). An exchange through st.async and an mbarrier instead
// drew racecheck warnings at the mbarrier's initialisation.
__device__ __forceinline__ unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

__device__ __forceinline__ unsigned remote_addr(unsigned local, unsigned rank) {
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
    return remote;
}

// All threads, first thing (before any load); then cluster_total once.
__device__ __forceinline__ void cluster_started() {
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}

// The cluster's total of v (each CTA's v the same in all its threads), in `slots` (kMaxCluster floats of
// this CTA's shared memory): every CTA adds the slots in rank order, so all compute the same float total.
__device__ __forceinline__ float cluster_total(float* slots, float v, unsigned rank, unsigned ranks) {
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");  // every CTA of the cluster runs
    if (threadIdx.x < ranks)
        asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(remote_addr(smem_addr(slots + rank), threadIdx.x)),
                     "f"(v)
                     : "memory");
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
    float total = 0.f;
    for (unsigned k = 0; k < ranks; ++k) total += slots[k];
    return total;
}

// The most threads a CTA of V chunks a thread may have: 1024 while a thread fits in 64 registers;
// with V = 4, 512 threads and two CTAs an SM (64 registers), so that one loads while the other reduces.
constexpr int max_threads(int v) { return v <= 2 ? 1024 : 512; }
constexpr int min_ctas(int v) { return v == 4 ? 2 : 1; }

// WARP_ROWS: a warp per row, kWarpRowsPerCta rows a CTA, four CTAs an SM (64 registers); else a CTA per row,
// or, CLUSTER, a cluster of CTAs per row (launched with a cluster dimension), each its share of the chunks.
// ANY: rows of any alignment and width (see the header); else every row and the weight are 16-byte
// aligned and hidden is a multiple of 8, and the alignment logic compiles away.
template <int V, bool RES, bool WARP_ROWS, bool ANY, bool CLUSTER = false>
__global__ void __launch_bounds__(WARP_ROWS ? 32 * kWarpRowsPerCta : max_threads(V), WARP_ROWS ? 4 : min_ctas(V))
add_rmsnorm_vec(Params p) {
    static_assert(!CLUSTER || (!WARP_ROWS && !ANY), "a cluster shares an aligned row among CTAs");
    __shared__ float cluster_slots[CLUSTER ? kMaxCluster : 1];
    // with one chunk a thread, registers are plenty: the weight is loaded with x and the residual
    constexpr bool kEarlyWeight = V == 1;
    const int lanes = WARP_ROWS ? 32 : blockDim.x;
    const int t = WARP_ROWS ? (threadIdx.x & 31) : threadIdx.x;
    const unsigned rank = CLUSTER ? cluster_rank() : 0u, ranks = CLUSTER ? cluster_size() : 1u;
    const long long row = WARP_ROWS ? (long long)blockIdx.x * kWarpRowsPerCta + (threadIdx.x >> 5)
                                    : (long long)(blockIdx.x / ranks);
    if (WARP_ROWS && row >= p.rows) return;  // the whole warp leaves together; no barrier follows
    const __nv_bfloat16* xr = p.x + row * p.xs;
    const __nv_bfloat16* rr = RES ? p.residual + row * p.rs : p.x;
    __nv_bfloat16* ror = RES ? p.residual_out + row * p.ros : p.out;
    __nv_bfloat16* outr = p.out + row * p.os;

    // the row's chunks: [head + 8c, head + 8c + 8) for c < chunks; head puts x's chunks on 16 bytes
    int head = 0, chunks = p.hidden >> 3;
    if (ANY) {
        head = min(static_cast<int>((0u - static_cast<unsigned>(reinterpret_cast<uintptr_t>(xr) >> 1)) & 7u), p.hidden);
        chunks = (p.hidden - head) >> 3;
    }
    const int wx = ANY ? chunk_width(xr + head) : 16, wr = ANY ? chunk_width(rr + head) : 16;
    const int wro = ANY ? chunk_width(ror + head) : 16, wo = ANY ? chunk_width(outr + head) : 16;
    const int ww = ANY ? chunk_width(p.weight + head) : 16;
    int start = head;  // the element where this warp's or CTA's chunks begin
    if (CLUSTER) {     // this CTA's share of the row's chunks: [first, first + chunks)
        const int per = (chunks + static_cast<int>(ranks) - 1) / static_cast<int>(ranks);
        const int first = min(static_cast<int>(rank) * per, chunks);
        start = 8 * first;  // (head is 0: not ANY)
        chunks = min(per, chunks - first);
    }
    const __nv_bfloat16* xc = xr + start;
    const __nv_bfloat16* rc = rr + start;
    const __nv_bfloat16* wc = p.weight + start;
    __nv_bfloat16* roc = ror + start;
    __nv_bfloat16* outc = outr + start;

    if (CLUSTER) cluster_started();
    // h[i]: x, then h; o[i]: the residual, then (once it is added) the weight, loaded while the
    // row's sum is reduced; with no residual, or kEarlyWeight (into w[i]), the weight is loaded at once
    uint4 h[V], o[V], w[kEarlyWeight ? V : 1];
#pragma unroll
    for (int i = 0; i < V; ++i) {
        const int c = t + i * lanes;
        if (c < chunks) {
            h[i] = load_chunk<true>(xc + 8 * c, wx);
            o[i] = RES ? load_chunk<true>(rc + 8 * c, wr) : load_chunk<false>(wc + 8 * c, ww);
            if (kEarlyWeight && RES) w[i] = load_chunk<false>(wc + 8 * c, ww);
        }
    }
    // ANY: the elements outside the chunks (the head's, then the tail's), one a thread
    const int extras = ANY ? p.hidden - 8 * chunks : 0;
    const bool extra = ANY && t < extras;
    const int e = t < head ? t : t + 8 * chunks;
    float he = 0.f, re = 0.f, we = 0.f;
    if (extra) {
        he = load_element(xr + e);
        if (RES) re = load_element(rr + e);
        we = __bfloat162float(p.weight[e]);
    }
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < V; ++i) {
        const int c = t + i * lanes;
        if (c < chunks) {
            float a[8];
            unpack(h[i], a);
            if (RES) {
                float b[8];
                unpack(o[i], b);
#pragma unroll
                for (int k = 0; k < 8; ++k) a[k] += b[k];
                h[i] = pack(a);  // h as stored: the new residual, and what is normalised
                if (!CLUSTER) store_chunk(roc + 8 * c, h[i], wro);  // a cluster's: after its exchange
                if (!kEarlyWeight) o[i] = load_chunk<false>(wc + 8 * c, ww);
                unpack(h[i], a);
            }
#pragma unroll
            for (int k = 0; k < 8; ++k) sum += a[k] * a[k];
        }
    }
    if (extra) {
        if (RES) {
            const __nv_bfloat16 stored = __float2bfloat16(he + re);
            ror[e] = stored;
            he = __bfloat162float(stored);
        }
        sum += he * he;
    }
    sum = warp_sum(sum);
    if (!WARP_ROWS) {
        __shared__ float partial[32];
        const int warps = blockDim.x >> 5, lane = threadIdx.x & 31;
        if (lane == 0) partial[threadIdx.x >> 5] = sum;
        __syncthreads();
        sum = warp_sum(lane < warps ? partial[lane] : 0.f);
        if (CLUSTER) sum = cluster_total(cluster_slots, sum, rank, ranks);
    }
    const float scale = rsqrtf(sum / p.hidden + p.eps);
#pragma unroll
    for (int i = 0; i < V; ++i) {
        const int c = t + i * lanes;
        if (c < chunks) {
            // keep h packed across the reduction (4 registers a chunk, not 8 floats): the compiler
            // would otherwise keep the unpacked values of the sum's loop alive until here
            asm volatile("" : "+r"(h[i].x), "+r"(h[i].y), "+r"(h[i].z), "+r"(h[i].w));
            if (CLUSTER && RES) store_chunk(roc + 8 * c, h[i], wro);
            float a[8], b[8];
            unpack(h[i], a);
            unpack(kEarlyWeight && RES ? w[kEarlyWeight ? i : 0] : o[i], b);
#pragma unroll
            for (int k = 0; k < 8; ++k) a[k] = a[k] * scale * b[k];
            store_chunk(outc + 8 * c, pack(a), wo);
        }
    }
    if (extra) outr[e] = __float2bfloat16(he * scale * we);
}

// Rows wider than 32768: a CTA per row, one element at a time, h re-read from residual_out.
template <bool RES>
__global__ void __launch_bounds__(512) add_rmsnorm_wide(Params p) {
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

bool aligned(const void* ptr, long long stride_elems, unsigned bytes) {
    return ((reinterpret_cast<uintptr_t>(ptr) | static_cast<uintptr_t>(stride_elems * 2)) & (bytes - 1)) == 0;
}

int multiprocessors() {
    static int cached[64] = {};
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) return 132;
    if (!cached[device] && cudaDeviceGetAttribute(&cached[device], cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
        return 132;
    return cached[device];
}

template <bool RES, bool ANY>
void launch_vec(const Params& p, int v, bool warp_rows, int threads, cudaStream_t stream) {
    if (warp_rows) {
        const unsigned grid = (p.rows + kWarpRowsPerCta - 1) / kWarpRowsPerCta;
        switch (v) {
            case 1: add_rmsnorm_vec<1, RES, true, ANY><<<grid, 32 * kWarpRowsPerCta, 0, stream>>>(p); break;
            case 2: add_rmsnorm_vec<2, RES, true, ANY><<<grid, 32 * kWarpRowsPerCta, 0, stream>>>(p); break;
            default: add_rmsnorm_vec<4, RES, true, ANY><<<grid, 32 * kWarpRowsPerCta, 0, stream>>>(p); break;
        }
        return;
    }
    switch (v) {
        case 1: add_rmsnorm_vec<1, RES, false, ANY><<<p.rows, threads, 0, stream>>>(p); break;
        case 2: add_rmsnorm_vec<2, RES, false, ANY><<<p.rows, threads, 0, stream>>>(p); break;
        case 4: add_rmsnorm_vec<4, RES, false, ANY><<<p.rows, threads, 0, stream>>>(p); break;
        default: add_rmsnorm_vec<8, RES, false, ANY><<<p.rows, threads, 0, stream>>>(p); break;
    }
}

template <bool RES>
void launch_vec(const Params& p, bool any, int v, bool warp_rows, int threads, cudaStream_t stream) {
    if (any) launch_vec<RES, true>(p, v, warp_rows, threads, stream);
    else launch_vec<RES, false>(p, v, warp_rows, threads, stream);
}

// Decode with wide rows: how many CTAs share a row, 1 for none. A row moves (RES ? 10 : 6) x hidden
// bytes (x, the residual and the weight read; out and the new residual written), through one SM at about
// 64 bytes a clock, 112 GB/s: 0.85 us from kClusterMinRowBytes up. A cluster spreads that over `ranks`
// SMs for the cost of its launch and two barriers, which a judgement on the H100 put at about 0.5 us
// (rows of 40 KB lost 0.45-0.5 us, of 70 KB 0.2, of 160 KB gained 0.5-0.8), so a row takes a cluster
// where the one-SM time saved exceeds that with room. Up to kMaxCluster CTAs, as many as leave every row
// its own SMs (rows x ranks <= SMs), each with >= kClusterMinChunks chunks (two warps at one chunk a thread).
constexpr long long kClusterMinRowBytes = 96 << 10;
constexpr int kClusterMinChunks = 64;
int cluster_ranks(int rows, int vecs, bool res, int sms) {
    const long long row_bytes = (res ? 10LL : 6LL) * 8 * vecs;
    if (rows >= sms || row_bytes < kClusterMinRowBytes) return 1;
    int ranks = sms / rows < kMaxCluster ? sms / rows : kMaxCluster;
    if (vecs / kClusterMinChunks < ranks) ranks = vecs / kClusterMinChunks;
    return ranks > 1 ? ranks : 1;
}

// A cluster of `ranks` CTAs a row: each CTA one chunk a thread (two past 1024 chunks), its share of them.
template <bool RES>
int launch_cluster(const Params& p, int ranks, int vecs, cudaStream_t stream) {
    const int per = (vecs + ranks - 1) / ranks;
    const int v = per <= max_threads(1) ? 1 : 2;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(static_cast<unsigned>(p.rows) * static_cast<unsigned>(ranks));
    config.blockDim = dim3(((per + v - 1) / v + 31) / 32 * 32);
    config.dynamicSmemBytes = 0;
    config.stream = stream;
    cudaLaunchAttribute attribute;
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = static_cast<unsigned>(ranks);
    attribute.val.clusterDim.y = 1;
    attribute.val.clusterDim.z = 1;
    config.attrs = &attribute;
    config.numAttrs = 1;
    const cudaError_t e = v == 1 ? cudaLaunchKernelEx(&config, add_rmsnorm_vec<1, RES, false, false, true>, p)
                                 : cudaLaunchKernelEx(&config, add_rmsnorm_vec<2, RES, false, false, true>, p);
    return e == cudaSuccess ? 0 : 2;
}

}  // namespace

extern "C" int ks_add_rmsnorm(const void* x, const void* residual, const void* weight, void* out, void* residual_out,
                              int rows, int hidden, long long x_row_stride, long long residual_row_stride,
                              long long out_row_stride, long long residual_out_row_stride, float eps,
                              void* stream_ptr) {
    if (rows == 0 && hidden >= 1) return 0;  // nothing to do: an empty tensor may have a NULL pointer
    if (rows < 0 || hidden < 1 || !x || !weight || !out || (residual && !residual_out)) return 1;
    const bool res = residual != nullptr;
    // bf16 elements are 2-byte aligned; anything else is not a bf16 tensor
    if (!aligned(x, 0, 2) || !aligned(weight, 0, 2) || !aligned(out, 0, 2) ||
        (res && (!aligned(residual, 0, 2) || !aligned(residual_out, 0, 2))))
        return 1;
    Params p{static_cast<const __nv_bfloat16*>(x), static_cast<const __nv_bfloat16*>(residual),
             static_cast<const __nv_bfloat16*>(weight), static_cast<__nv_bfloat16*>(out),
             static_cast<__nv_bfloat16*>(residual_out), rows, hidden, x_row_stride,
             res ? residual_row_stride : 0, out_row_stride, res ? residual_out_row_stride : 0, eps};
    cudaStream_t stream = static_cast<cudaStream_t>(stream_ptr);
    const int vecs = hidden / 8;  // chunks a row holds at most
    if (vecs > 8 * max_threads(8)) {
        const int threads = 512;
        if (res) add_rmsnorm_wide<true><<<rows, threads, 0, stream>>>(p);
        else add_rmsnorm_wide<false><<<rows, threads, 0, stream>>>(p);
        return cudaGetLastError() == cudaSuccess ? 0 : 2;
    }
    const bool any = !(hidden % 8 == 0 && aligned(x, x_row_stride, 16) && aligned(weight, 0, 16) &&
                       aligned(out, out_row_stride, 16) &&
                       (!res || (aligned(residual, residual_row_stride, 16) &&
                                 aligned(residual_out, residual_out_row_stride, 16))));
    // the work rule: how many chunks each thread holds (V) and how many threads share a row
    const int sms = multiprocessors();
    int v = 0, threads = 32;
    const bool short_rows = vecs <= 32 * 4;
    const bool warp_rows = kShortRowsToWarps && short_rows && rows >= kWarpRowsPerCta * sms;
    if (warp_rows) {
        v = vecs <= 32 ? 1 : vecs <= 64 ? 2 : 4;
    } else if (short_rows) {
        v = 1;  // too few rows for a CTA of warp rows on every SM: a CTA per row, a chunk a thread
        threads = (vecs + 31) / 32 * 32;
        if (threads == 0) threads = 32;
    } else {
        const bool few_rows = rows < sms;
        const auto limit = [few_rows](int v) { return few_rows ? max_threads(v) : 512; };
        for (v = few_rows ? 1 : 2; v < 8 && (vecs + v - 1) / v > limit(v); v *= 2) {}
        threads = ((vecs + v - 1) / v + 31) / 32 * 32;
        if (threads > max_threads(v)) return 3;  // cannot happen for vecs <= 8 * max_threads(8)
    }
    if (!any && !warp_rows) {
        const int ranks = cluster_ranks(rows, vecs, res, sms);
        if (ranks > 1) return res ? launch_cluster<true>(p, ranks, vecs, stream) : launch_cluster<false>(p, ranks, vecs, stream);
    }
    if (res) launch_vec<true>(p, any, v, warp_rows, threads, stream);
    else launch_vec<false>(p, any, v, warp_rows, threads, stream);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
