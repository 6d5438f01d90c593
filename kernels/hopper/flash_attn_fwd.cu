// KernelSeek: FlashAttention forward for Hopper (sm_90a), single file, CUDA toolkit headers only.
//
// Main path: one CTA per (128 query rows, head, batch), three warpgroups:
//   WG0  producer: one thread issues TMA (cp.async.bulk.tensor) loads of Q, K, V into 128B-swizzled
//        shared memory, completing on mbarriers; K and V each have their own full/empty barriers.
//   WG1, WG2  consumers, 64 query rows each: S = Q K^T with wgmma (both operands from shared
//        memory), online softmax in registers, O += P V with wgmma (P from registers, V N-major
//        from shared memory). The next block's Q K^T is issued before this block's P V, so the
//        tensor cores work while the softmax runs (intra-warpgroup overlap).
//   setmaxnreg moves registers from the producer to the consumers.
// head_dim 96 and 192 use shared-memory tiles padded to 128 / 192 columns (TMA zero-fills the
// columns past head_dim); the matrix products use exactly head_dim (k-steps of 16, n = head_dim).
// Varlen uses the same TMA path: the last tile of a sequence is shifted back so a box never reads
// past the sequence's end (and never past the tensor); the shifted-in rows are masked.
// Fallback path (same file): a plain CUDA kernel, one warp per query row, for what TMA cannot take
// (misaligned pointers or strides, varlen with fewer total rows than one tile, seqlen_k == 0).
//
// Build: nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -shared -Xcompiler -fPIC -Xptxas -v
// The library links the CUDA runtime only; cuTensorMapEncodeTiled comes through
// cudaGetDriverEntryPointByVersion.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include <math.h>

namespace ks {

// ------------------------------------------------------------------------------------------------
// PTX helpers
// ------------------------------------------------------------------------------------------------
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  do {
    asm volatile(
        "{\n.reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap* map, uint32_t bar,
                                            int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
template <int N>
__device__ __forceinline__ void fence_regs(float* r) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int N>
__device__ __forceinline__ void fence_regs(uint32_t* r) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i])::"memory");
}
__device__ __forceinline__ void named_sync(int id, int n) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int n) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(n) : "memory");
}
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float rcp_approx(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
// tanh(x) = 1 - 2 / (e^{2x} + 1): accurate to ~1e-7 absolute (ex2/rcp approx are ~2^-22 relative).
__device__ __forceinline__ float tanh_acc(float x) {
  return 1.f - 2.f * rcp_approx(ex2(x * 2.8853900817779268f) + 1.f);
}
// One MUFU op instead of tanh_acc's two plus the FMAs around them: softcap is exp-unit bound.
// PTX: max relative error 2^-10.987; the harness bounds the error at twice FA3's.
__device__ __forceinline__ float tanh_fast(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// Shared-memory matrix descriptor, 128-byte swizzle.
__device__ __forceinline__ uint64_t make_desc(uint32_t saddr, uint32_t lbo, uint32_t sbo) {
  uint64_t d = 0;
  d |= static_cast<uint64_t>((saddr & 0x3FFFF) >> 4);
  d |= static_cast<uint64_t>((lbo >> 4) & 0x3FFF) << 16;
  d |= static_cast<uint64_t>((sbo >> 4) & 0x3FFF) << 32;
  d |= static_cast<uint64_t>(1) << 62;
  return d;
}

// ---- GEN BEGIN (kernels/hopper/gen_wgmma.py) ----
template <int N> struct Wgmma;
template <> struct Wgmma<64> {
  // D[64x64] (+)= A[64x16] (smem, K-major) * B[16x64] (smem, K-major); bf16 in, f32 accumulate
  static __device__ __forceinline__ void ss(float* d, uint64_t da, uint64_t db, int acc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(da), "l"(db), "r"(acc));
  }
  // D[64x64] += A[64x16] (registers) * B[16x64] (smem, N-major, i.e. transposed)
  static __device__ __forceinline__ void rs(float* d, const uint32_t* a, uint64_t db, int acc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc));
  }
};

template <> struct Wgmma<80> {
  // D[64x80] (+)= A[64x16] (smem, K-major) * B[16x80] (smem, K-major); bf16 in, f32 accumulate
  static __device__ __forceinline__ void ss(float* d, uint64_t da, uint64_t db, int acc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %42, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n80k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39}, %40, %41, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39])
      : "l"(da), "l"(db), "r"(acc));
  }
};

template <> struct Wgmma<96> {
  // D[64x96] (+)= A[64x16] (smem, K-major) * B[16x96] (smem, K-major); bf16 in, f32 accumulate
  static __device__ __forceinline__ void ss(float* d, uint64_t da, uint64_t db, int acc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %50, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, %48, %49, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
      : "l"(da), "l"(db), "r"(acc));
  }
  // D[64x96] += A[64x16] (registers) * B[16x96] (smem, N-major, i.e. transposed)
  static __device__ __forceinline__ void rs(float* d, const uint32_t* a, uint64_t db, int acc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %53, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, {%48, %49, %50, %51}, %52, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc));
  }
};

template <> struct Wgmma<112> {
  // D[64x112] (+)= A[64x16] (smem, K-major) * B[16x112] (smem, K-major); bf16 in, f32 accumulate
  static __device__ __forceinline__ void ss(float* d, uint64_t da, uint64_t db, int acc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %58, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n112k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55}, %56, %57, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55])
      : "l"(da), "l"(db), "r"(acc));
  }
};

template <> struct Wgmma<128> {
  // D[64x128] (+)= A[64x16] (smem, K-major) * B[16x128] (smem, K-major); bf16 in, f32 accumulate
  static __device__ __forceinline__ void ss(float* d, uint64_t da, uint64_t db, int acc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(acc));
  }
  // D[64x128] += A[64x16] (registers) * B[16x128] (smem, N-major, i.e. transposed)
  static __device__ __forceinline__ void rs(float* d, const uint32_t* a, uint64_t db, int acc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc));
  }
};

template <> struct Wgmma<144> {
  // D[64x144] (+)= A[64x16] (smem, K-major) * B[16x144] (smem, K-major); bf16 in, f32 accumulate
  static __device__ __forceinline__ void ss(float* d, uint64_t da, uint64_t db, int acc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %74, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n144k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71}, %72, %73, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71])
      : "l"(da), "l"(db), "r"(acc));
  }
};

template <> struct Wgmma<160> {
  // D[64x160] (+)= A[64x16] (smem, K-major) * B[16x160] (smem, K-major); bf16 in, f32 accumulate
  static __device__ __forceinline__ void ss(float* d, uint64_t da, uint64_t db, int acc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %82, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n160k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79}, %80, %81, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79])
      : "l"(da), "l"(db), "r"(acc));
  }
};

template <> struct Wgmma<176> {
  // D[64x176] (+)= A[64x16] (smem, K-major) * B[16x176] (smem, K-major); bf16 in, f32 accumulate
  static __device__ __forceinline__ void ss(float* d, uint64_t da, uint64_t db, int acc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %90, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n176k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}, %88, %89, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
      : "l"(da), "l"(db), "r"(acc));
  }
};

template <> struct Wgmma<192> {
  // D[64x192] (+)= A[64x16] (smem, K-major) * B[16x192] (smem, K-major); bf16 in, f32 accumulate
  static __device__ __forceinline__ void ss(float* d, uint64_t da, uint64_t db, int acc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
      : "l"(da), "l"(db), "r"(acc));
  }
  // D[64x192] += A[64x16] (registers) * B[16x192] (smem, N-major, i.e. transposed)
  static __device__ __forceinline__ void rs(float* d, const uint32_t* a, uint64_t db, int acc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %101, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, {%96, %97, %98, %99}, %100, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc));
  }
};

template <> struct Wgmma<256> {
  // D[64x256] (+)= A[64x16] (smem, K-major) * B[16x256] (smem, K-major); bf16 in, f32 accumulate
  static __device__ __forceinline__ void ss(float* d, uint64_t da, uint64_t db, int acc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(da), "l"(db), "r"(acc));
  }
  // D[64x256] += A[64x16] (registers) * B[16x256] (smem, N-major, i.e. transposed)
  static __device__ __forceinline__ void rs(float* d, const uint32_t* a, uint64_t db, int acc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, {%128, %129, %130, %131}, %132, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc));
  }
};

// ---- GEN END ----

// ------------------------------------------------------------------------------------------------
// Main TMA + wgmma kernel
// ------------------------------------------------------------------------------------------------
// Tile configuration per head dim: key-block width and K/V pipeline depth.
#ifndef KS_D64_BN
#define KS_D64_BN 128
#endif
#ifndef KS_D64_ST
#define KS_D64_ST 2
#endif
// d64 on long sequences: a wider key block and a third stage (measured: +5-11 % from 2048 keys up,
// but -5-15 % at 512-1024, where the wider block's fill costs more than it saves).
#ifndef KS_D64_LONG_BN
#define KS_D64_LONG_BN 192
#endif
#ifndef KS_D64_LONG_ST
#define KS_D64_LONG_ST 3
#endif
#ifndef KS_D64_LONG_MIN
#define KS_D64_LONG_MIN 2048
#endif
#ifndef KS_D96_BN
#define KS_D96_BN 128
#endif
#ifndef KS_D96_ST
#define KS_D96_ST 2
#endif
#ifndef KS_D128_BN
#define KS_D128_BN 128
#endif
#ifndef KS_D128_ST
#define KS_D128_ST 2
#endif
#ifndef KS_D192_BN
#define KS_D192_BN 112
#endif
#ifndef KS_D192_ST
#define KS_D192_ST 2
#endif
#ifndef KS_D256_BN
#define KS_D256_BN 64
#endif
#ifndef KS_D256_ST
#define KS_D256_ST 2
#endif

// Register split after setmaxnreg. The CTA is launched with 168 registers a thread
// (__launch_bounds__(384, 1)), and setmaxnreg only moves registers inside that allocation: what the
// producer warpgroup gives back must cover what the two consumer warpgroups take, or
// setmaxnreg.inc waits forever (seen: producer 32 / consumers 240 hung every launch).
#ifndef KS_PRODUCER_REGS
#define KS_PRODUCER_REGS 24
#endif
#ifndef KS_CONSUMER_REGS
#define KS_CONSUMER_REGS 240
#endif
static_assert(128 * (168 - KS_PRODUCER_REGS) >= 256 * (KS_CONSUMER_REGS - 168), "setmaxnreg split exceeds the CTA's registers");

// Causal pairing pays where per-tile fixed costs matter (short sequences); on long ones the
// hardware's dispatch of one CTA per tile balances more finely than a static schedule can.
#ifndef KS_PAIR_MAX_MBLOCKS
#define KS_PAIR_MAX_MBLOCKS 32
#endif

struct Params {
  __nv_bfloat16* o;
  float* lse;
  const int* cu_q;
  const int* cu_k;
  long long o_sb, o_sr, o_sh;  // elements
  int batch, sq, sk;           // varlen: maxima
  int hq, group;               // group = hq / hkv
  int varlen, causal;
  int pack_g, pack_r;  // GQA packing: pack_g query heads x pack_r rows fill one 128-row tile (1 x 128: off)
  int n_mblocks, n_splits;
  int n_pairs;         // > 0: causal pairing schedule over this many (heavy, light) m-block pairs
  float* o_part;       // split-KV partials: [split][batch][hq][sq][D] fp32 and [split][batch][hq][sq]
  float* lse_part;
  float sl2;      // multiplier taking a (possibly capped) score to log2 units
  float cap_in;   // softcap: scale / softcap (0: no softcap)
  float cap_out;  // softcap
};

constexpr int BM = 128;
constexpr int NTHREADS = 384;

template <int D, int BN, int STAGES>
struct Cfg {
  static constexpr int DP = (D + 63) / 64 * 64;  // padded smem width (multiple of one 128B atom)
  static constexpr int NA = DP / 64;             // atoms across the head dim
  static constexpr int Q_BYTES = BM * DP * 2;
  static constexpr int KV_BYTES = BN * DP * 2;
  static constexpr int BAR_OFF = Q_BYTES + 2 * STAGES * KV_BYTES;
  static constexpr int SMEM = BAR_OFF + 256 + 1024;
  static_assert(SMEM <= 232448, "smem");  // + barriers + alignment slack
  static_assert(BN % 16 == 0, "BN");
  static_assert(D % 16 == 0, "D");
};

// Row (absolute, in the tensor map's row dimension) where the TMA box for a tile starts, and how far
// it was shifted back from the nominal tile start (varlen only: keeps the box inside the sequence's
// end, or inside [0, box) when the sequence ends earlier).
__device__ __forceinline__ int tile_start(int seq_start, int seq_len, int nominal_off, int box,
                                          int varlen, int* shift) {
  if (!varlen) {
    *shift = 0;
    return nominal_off;
  }
  int nominal = seq_start + nominal_off;
  int start = min(nominal, max(seq_start + seq_len - box, 0));
  *shift = nominal - start;
  return start;
}

template <int D, int BN, int STAGES>
__global__ void __launch_bounds__(NTHREADS, 1)
    fa_fwd_sm90(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                const __grid_constant__ CUtensorMap tmV, const Params p) {
  using C = Cfg<D, BN, STAGES>;
  constexpr int NA = C::NA;
  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t sQ = base;
  const uint32_t sK0 = base + C::Q_BYTES;
  const uint32_t sV0 = sK0 + STAGES * C::KV_BYTES;
  const uint32_t bar = base + C::BAR_OFF;
  // barriers: q_full, q_empty, k_full[S], v_full[S], k_empty[S], v_empty[S]
  const uint32_t b_qfull = bar, b_qempty = bar + 8;
  auto b_kfull = [&](int s) { return bar + 8u * (2 + s); };
  auto b_vfull = [&](int s) { return bar + 8u * (2 + STAGES + s); };
  auto b_kempty = [&](int s) { return bar + 8u * (2 + 2 * STAGES + s); };
  auto b_vempty = [&](int s) { return bar + 8u * (2 + 3 * STAGES + s); };

  const int tid = threadIdx.x;
  if (tid == 0) {
    mbar_init(b_qfull, 1);
    mbar_init(b_qempty, 8);  // one arrive per consumer warp
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(b_kfull(s), 1);
      mbar_init(b_vfull(s), 1);
      mbar_init(b_kempty(s), 8);
      mbar_init(b_vempty(s), 8);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  // Work units: m_block fastest (CTAs running together share K/V in L2), then split, head, batch.
  // Causal: m_block reversed so the long tiles of each head start first.
  // Causal pairing (p.n_pairs > 0, persistent grid, no split): CTA c takes pair c, c + G, ... and
  // does each pair's heavy tile (m_block n-1-k) in one round and its light one (m_block k) in the
  // next, so every CTA's rounds cost the same and CTAs running together stay on a few heads.
  const int HH = p.hq / p.pack_g;  // head slots: query heads, or KV heads when GQA-packed
  const int G = gridDim.x;
  const int num_tiles = p.n_pairs > 0 ? 2 * G * ((p.n_pairs + G - 1) / G) : p.n_mblocks * p.n_splits * HH * p.batch;
  const int R = p.pack_r;
  struct Tile {
    int b, hq0, hk, q_start, k_start, sq, sk, m0, nb_lo, nb_hi, qshift, q_row0, bq, sp;
  };
  auto decode = [&](int t, Tile& T) -> bool {
    int mb, hh;
    if (p.n_pairs > 0) {
      const int round = t / G, pair = (round / 2) * G + t % G;
      if (pair >= p.n_pairs) return false;
      const int per_head = (p.n_mblocks + 1) / 2;
      const int k = pair % per_head;
      const int heavy = p.n_mblocks - 1 - k;
      if ((round & 1) && heavy == k) return false;  // odd n_mblocks: the middle tile pairs with itself
      mb = (round & 1) ? k : heavy;
      hh = (pair / per_head) % HH;
      T.b = pair / per_head / HH;
      T.sp = 0;
    } else {
      mb = t % p.n_mblocks;
      t /= p.n_mblocks;
      T.sp = t % p.n_splits;
      t /= p.n_splits;
      hh = t % HH;
      T.b = t / HH;
      if (p.causal) mb = p.n_mblocks - 1 - mb;
    }
    T.hq0 = hh * p.pack_g;
    T.hk = T.hq0 / p.group;
    T.q_start = 0;
    T.k_start = 0;
    T.sq = p.sq;
    T.sk = p.sk;
    if (p.varlen) {
      T.q_start = p.cu_q[T.b];
      T.sq = p.cu_q[T.b + 1] - T.q_start;
      T.k_start = p.cu_k[T.b];
      T.sk = p.cu_k[T.b + 1] - T.k_start;
    }
    T.m0 = mb * R;
    if (T.m0 >= T.sq) return false;
    int nbk = (T.sk + BN - 1) / BN;
    if (p.causal) {
      const int lim = min(T.m0 + R, T.sq) + T.sk - T.sq;  // keys [0, lim) visible to the tile's last row
      nbk = min(nbk, lim <= 0 ? 0 : (lim + BN - 1) / BN);
    }
    const int chunk = (nbk + p.n_splits - 1) / p.n_splits;
    T.nb_lo = min(nbk, T.sp * chunk);
    T.nb_hi = min(nbk, T.nb_lo + chunk);
    T.q_row0 = tile_start(T.q_start, T.sq, T.m0, BM, p.varlen, &T.qshift);
    T.bq = p.varlen ? 0 : T.b;
    return true;
  };
  if (p.varlen && (p.cu_q[p.batch] < BM || p.cu_k[p.batch] < BN)) return;  // fallback kernel's job

  const int wg = tid / 128;
  if (wg == 0) {
    // ---------------------------------------------------------------- producer
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(KS_PRODUCER_REGS));
    if (tid == 0) {
      int stage = 0;
      uint32_t phase = 0;
      uint32_t qcount = 0;
      for (int t = blockIdx.x; t < num_tiles; t += gridDim.x) {
        Tile T;
        if (!decode(t, T) || T.nb_hi == T.nb_lo) continue;
        mbar_wait(b_qempty, (qcount & 1) ^ 1);
        ++qcount;
        mbar_expect_tx(b_qfull, C::Q_BYTES);
#pragma unroll
        for (int a = 0; a < NA; ++a) tma_load_4d(sQ + a * BM * 128, &tmQ, b_qfull, a * 64, T.q_row0, T.hq0, T.bq);
        for (int nb = T.nb_hi - 1; nb >= T.nb_lo; --nb) {
          int ksh;
          const int krow = tile_start(T.k_start, T.sk, nb * BN, BN, p.varlen, &ksh);
          mbar_wait(b_kempty(stage), phase ^ 1);
          mbar_expect_tx(b_kfull(stage), C::KV_BYTES);
#pragma unroll
          for (int a = 0; a < NA; ++a)
            tma_load_4d(sK0 + stage * C::KV_BYTES + a * BN * 128, &tmK, b_kfull(stage), a * 64, krow, T.hk, T.bq);
          mbar_wait(b_vempty(stage), phase ^ 1);
          mbar_expect_tx(b_vfull(stage), C::KV_BYTES);
#pragma unroll
          for (int a = 0; a < NA; ++a)
            tma_load_4d(sV0 + stage * C::KV_BYTES + a * BN * 128, &tmV, b_vfull(stage), a * 64, krow, T.hk, T.bq);
          if (++stage == STAGES) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
    }
    return;
  }

  // ------------------------------------------------------------------ consumers
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(KS_CONSUMER_REGS));
  const int w = wg - 1;               // consumer warpgroup: query rows [64w, 64w+64) of the tile
  const int warp = (tid % 128) / 32;  // warp in warpgroup
  const int lane = tid % 32;
  const int qd = lane % 4;
  const int rloc0 = 64 * w + 16 * warp + lane / 4;  // tile rows rloc0 and rloc0 + 8
  const uint32_t sQw = sQ + w * 64 * 128;
  const float sl2 = p.sl2;
#ifndef KS_NO_PINGPONG
  // Warpgroups take turns issuing their matrix products, so one's softmax overlaps the other's
  // products. Barrier 2 + w: "warpgroup w may issue". Warpgroup 0 goes first.
  if (w == 1) named_arrive(2, 256);
  auto turn_begin = [&]() { named_sync(2 + w, 256); };
  auto turn_end = [&]() { named_arrive(2 + (1 - w), 256); };
#else
  auto turn_begin = [&]() {};
  auto turn_end = [&]() {};
#endif

  int stage = 0;
  uint32_t phase = 0;
  uint32_t qcount = 0;
  float o[D / 2];
  uint32_t pr[BN / 4];
  float s[BN / 2];

  for (int t = blockIdx.x; t < num_tiles; t += gridDim.x) {
    Tile T;
    if (!decode(t, T)) continue;
    // This thread's two tile rows (rloc0, rloc0 + 8): query row within the sequence, and query head.
    int rowv[2], headv[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int m = rloc0 + 8 * r;
      const int g = m / R;
      rowv[r] = T.m0 - T.qshift + (m - g * R);
      headv[r] = T.hq0 + g;
    }
    const int diag = T.sk - T.sq;  // causal: key j visible to row i iff j <= i + diag
    const int sk = T.sk;

#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
    float mrow[2] = {-INFINITY, -INFINITY};
    float lrow[2] = {0.f, 0.f};

    auto gemm_qk = [&](int st) {
      const uint32_t sKs = sK0 + st * C::KV_BYTES;
      wg_fence();
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        const int a = kk / 4, ki = kk % 4;
        const uint64_t da = make_desc(sQw + a * BM * 128 + ki * 32, 16, 1024);
        const uint64_t db = make_desc(sKs + a * BN * 128 + ki * 32, 16, 1024);
        Wgmma<BN>::ss(s, da, db, kk > 0 ? 1 : 0);
      }
      wg_commit();
    };
    auto gemm_pv = [&](int st) {
      const uint32_t sVs = sV0 + st * C::KV_BYTES;
      wg_fence();
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
        const uint64_t db = make_desc(sVs + kk * 16 * 128, BN * 128, 1024);
        Wgmma<D>::rs(o, pr + 4 * kk, db, 1);
      }
      wg_commit();
    };
    auto arrive = [&](uint32_t b_) {
      if (lane == 0) mbar_arrive(b_);
    };
    auto softmax = [&](int nb, bool need_mask, float* corr) {
      if (p.cap_in != 0.f) {
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) s[i] = p.cap_out * tanh_fast(s[i] * p.cap_in);
      }
      if (need_mask) {
        int ksh;
        tile_start(T.k_start, sk, nb * BN, BN, p.varlen, &ksh);
        const int key_lo = nb * BN;
        const int key0 = nb * BN - ksh + 2 * qd;
#pragma unroll
        for (int i = 0; i < BN / 8; ++i) {
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const int key = key0 + 8 * i + (j & 1);
            const int row = rowv[j >> 1];
            const bool ok = key >= key_lo && key < sk && (!p.causal || key <= row + diag);
            if (!ok) s[4 * i + j] = -INFINITY;
          }
        }
      }
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float mx = mrow[r];
#pragma unroll
        for (int i = 0; i < BN / 8; ++i) mx = fmaxf(mx, fmaxf(s[4 * i + 2 * r], s[4 * i + 2 * r + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float ms = (mx == -INFINITY) ? 0.f : mx * sl2;
        corr[r] = ex2(mrow[r] * sl2 - ms);
        mrow[r] = mx;
        float sum = 0.f;
#pragma unroll
        for (int i = 0; i < BN / 8; ++i) {
          const float p0 = ex2(fmaf(s[4 * i + 2 * r], sl2, -ms));
          const float p1 = ex2(fmaf(s[4 * i + 2 * r + 1], sl2, -ms));
          s[4 * i + 2 * r] = p0;
          s[4 * i + 2 * r + 1] = p1;
          sum += p0 + p1;
        }
        lrow[r] = lrow[r] * corr[r] + sum;
      }
    };
    auto pack_p = [&]() {
#pragma unroll
      for (int j = 0; j < BN / 4; ++j) pr[j] = pack_bf16(s[2 * j], s[2 * j + 1]);
    };
    auto needs_mask = [&](int nb) {
      if (nb * BN + BN > sk) return true;
      if (p.causal && nb * BN + BN - 1 > (T.m0 - T.qshift) + diag) return true;
      if (p.varlen) {
        int ksh;
        tile_start(T.k_start, sk, nb * BN, BN, p.varlen, &ksh);
        if (ksh != 0) return true;
      }
      return false;
    };
    auto advance = [&](int& st, uint32_t& ph) {
      if (++st == STAGES) {
        st = 0;
        ph ^= 1;
      }
    };

    const int n_it = T.nb_hi - T.nb_lo;
    if (n_it > 0) {
      mbar_wait(b_qfull, qcount & 1);
      ++qcount;
      float corr[2];
      int kst = stage, vst = stage;  // K stage of the block being issued, V stage of the previous block
      uint32_t kph = phase, vph = phase;
      {
        const int nb = T.nb_hi - 1;
        mbar_wait(b_kfull(kst), kph);
        turn_begin();
        gemm_qk(kst);
        turn_end();
        wg_wait<0>();
        fence_regs<BN / 2>(s);
        arrive(b_kempty(kst));
        advance(kst, kph);
        softmax(nb, needs_mask(nb), corr);
        pack_p();
      }
      for (int it = 1; it < n_it; ++it) {
        const int nb = T.nb_hi - 1 - it;
        fence_regs<BN / 4>(pr);
        fence_regs<D / 2>(o);
        mbar_wait(b_kfull(kst), kph);
        turn_begin();
        gemm_qk(kst);
        mbar_wait(b_vfull(vst), vph);
        gemm_pv(vst);
        turn_end();
        wg_wait<1>();
        fence_regs<BN / 2>(s);
        arrive(b_kempty(kst));
        advance(kst, kph);
        softmax(nb, needs_mask(nb), corr);
        wg_wait<0>();
        fence_regs<D / 2>(o);
        fence_regs<BN / 4>(pr);
        arrive(b_vempty(vst));
        advance(vst, vph);
#pragma unroll
        for (int i = 0; i < D / 8; ++i) {
          o[4 * i + 0] *= corr[0];
          o[4 * i + 1] *= corr[0];
          o[4 * i + 2] *= corr[1];
          o[4 * i + 3] *= corr[1];
        }
        pack_p();
      }
      arrive(b_qempty);  // every S product of this tile is complete: Q may be overwritten
      {
        fence_regs<BN / 4>(pr);
        fence_regs<D / 2>(o);
        mbar_wait(b_vfull(vst), vph);
        turn_begin();
        gemm_pv(vst);
        turn_end();
        wg_wait<0>();
        fence_regs<D / 2>(o);
        fence_regs<BN / 4>(pr);
        arrive(b_vempty(vst));
        advance(vst, vph);
      }
      stage = kst;
      phase = kph;
    }

    // ---------------------------------------------------------------- epilogue (registers -> global)
    float inv[2], lse_v[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l = lrow[r];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const bool any = l > 0.f;
      inv[r] = any ? 1.f / l : 0.f;
      lse_v[r] = any ? (mrow[r] * sl2 + __log2f(l)) * 0.69314718055994531f : -INFINITY;
    }
    if (p.n_splits > 1) {
      // split-KV partial: O normalized by this split's own sum, and this split's lse (fp32)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = rowv[r];
        if (row < T.sq) {
          const long long ridx = ((static_cast<long long>(T.sp) * p.batch + T.b) * p.hq + headv[r]) * p.sq + row;
          float* orow = p.o_part + ridx * D + 2 * qd;
#pragma unroll
          for (int i = 0; i < D / 8; ++i)
            *reinterpret_cast<float2*>(orow + 8 * i) = make_float2(o[4 * i + 2 * r] * inv[r], o[4 * i + 2 * r + 1] * inv[r]);
          if (qd == 0) p.lse_part[ridx] = lse_v[r];
        }
      }
      continue;
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = rowv[r];
      if (row >= T.m0 && row < T.sq) {
        const long long obase = p.varlen ? (static_cast<long long>(T.q_start) * p.o_sr + headv[r] * p.o_sh)
                                         : (static_cast<long long>(T.b) * p.o_sb + headv[r] * p.o_sh);
        __nv_bfloat16* orow = p.o + obase + static_cast<long long>(row) * p.o_sr + 2 * qd;
#pragma unroll
        for (int i = 0; i < D / 8; ++i) {
          const uint32_t v = pack_bf16(o[4 * i + 2 * r] * inv[r], o[4 * i + 2 * r + 1] * inv[r]);
          *reinterpret_cast<uint32_t*>(orow + 8 * i) = v;
        }
        if (qd == 0) {
          long long idx;
          if (p.varlen) idx = static_cast<long long>(headv[r]) * p.cu_q[p.batch] + T.q_start + row;
          else idx = (static_cast<long long>(T.b) * p.hq + headv[r]) * p.sq + row;
          p.lse[idx] = lse_v[r];
        }
      }
    }
  }
}

// Split-KV combine: one warp per (batch, head, row).
struct CombParams {
  const float* o_part;
  const float* lse_part;
  __nv_bfloat16* o;
  float* lse;
  long long o_sb, o_sr, o_sh;
  int batch, hq, sq, n_splits;
};

template <int D>
__global__ void __launch_bounds__(128) fa_combine(const CombParams c) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long long id = static_cast<long long>(blockIdx.x) * 4 + warp;
  const long long nrows = static_cast<long long>(c.batch) * c.hq * c.sq;
  if (id >= nrows) return;
  const int row = static_cast<int>(id % c.sq);
  const int h = static_cast<int>((id / c.sq) % c.hq);
  const int b = static_cast<int>(id / (static_cast<long long>(c.sq) * c.hq));
  const long long split_stride = nrows;
  float lmax = -INFINITY;
  for (int s = 0; s < c.n_splits; ++s) lmax = fmaxf(lmax, c.lse_part[s * split_stride + id]);
  constexpr int E = (D + 31) / 32;
  float acc[E];
#pragma unroll
  for (int i = 0; i < E; ++i) acc[i] = 0.f;
  float lse = -INFINITY;
  if (lmax != -INFINITY) {
    float sum = 0.f;
    for (int s = 0; s < c.n_splits; ++s) sum += __expf(c.lse_part[s * split_stride + id] - lmax);
    lse = lmax + __logf(sum);
    for (int s = 0; s < c.n_splits; ++s) {
      const float wgt = __expf(c.lse_part[s * split_stride + id] - lse);
      const float* op = c.o_part + (s * split_stride + id) * D;
#pragma unroll
      for (int i = 0; i < E; ++i) {
        const int e = lane + 32 * i;
        if (e < D) acc[i] = fmaf(wgt, op[e], acc[i]);
      }
    }
  }
  __nv_bfloat16* orow = c.o + static_cast<long long>(b) * c.o_sb + static_cast<long long>(row) * c.o_sr +
                        static_cast<long long>(h) * c.o_sh;
#pragma unroll
  for (int i = 0; i < E; ++i) {
    const int e = lane + 32 * i;
    if (e < D) orow[e] = __float2bfloat16(acc[i]);
  }
  if (lane == 0) c.lse[id] = lse;
}

// ------------------------------------------------------------------------------------------------
// Fallback kernel: one warp per query row; any strides, any alignment.
// ------------------------------------------------------------------------------------------------
struct FbParams {
  const __nv_bfloat16 *q, *k, *v;
  __nv_bfloat16* o;
  float* lse;
  const int* cu_q;
  const int* cu_k;
  long long q_sb, q_sr, q_sh, k_sb, k_sr, k_sh, v_sb, v_sr, v_sh, o_sb, o_sr, o_sh;
  int batch, sq, sk, hq, group, d, varlen, causal;
  int only_small;  // varlen: run only when the TMA kernel declined (too few total rows)
  int bn_main;     // that kernel's key tile
  float scale, cap_in, cap_out;
};

template <int D>
__global__ void __launch_bounds__(128) fa_fwd_fallback(const FbParams p) {
  __shared__ float qs[4][256];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int h = blockIdx.y, b = blockIdx.z, hk = h / p.group;
  const int row = blockIdx.x * 4 + warp;
  int q_start = 0, k_start = 0, sq = p.sq, sk = p.sk;
  if (p.varlen) {
    if (p.only_small && p.cu_q[p.batch] >= BM && p.cu_k[p.batch] >= p.bn_main) return;
    q_start = p.cu_q[b];
    sq = p.cu_q[b + 1] - q_start;
    k_start = p.cu_k[b];
    sk = p.cu_k[b + 1] - k_start;
  }
  if (row >= sq) return;
  const long long qoff = p.varlen ? (static_cast<long long>(q_start + row) * p.q_sr)
                                  : (static_cast<long long>(b) * p.q_sb + static_cast<long long>(row) * p.q_sr);
  const long long koff = p.varlen ? static_cast<long long>(k_start) * p.k_sr : static_cast<long long>(b) * p.k_sb;
  const long long voff = p.varlen ? static_cast<long long>(k_start) * p.v_sr : static_cast<long long>(b) * p.v_sb;
  const long long ooff = p.varlen ? (static_cast<long long>(q_start + row) * p.o_sr)
                                  : (static_cast<long long>(b) * p.o_sb + static_cast<long long>(row) * p.o_sr);
  const __nv_bfloat16* qp = p.q + qoff + static_cast<long long>(h) * p.q_sh;
  const __nv_bfloat16* kp = p.k + koff + static_cast<long long>(hk) * p.k_sh;
  const __nv_bfloat16* vp = p.v + voff + static_cast<long long>(hk) * p.v_sh;
  for (int e = lane; e < D; e += 32) qs[warp][e] = __bfloat162float(qp[e]);
  __syncwarp();
  const float LOG2E = 1.4426950408889634f;
  constexpr int E = (D + 31) / 32;
  float acc[E];
#pragma unroll
  for (int i = 0; i < E; ++i) acc[i] = 0.f;
  float m = -INFINITY, l = 0.f;  // m in log2 units
  int kmax = sk;
  if (p.causal) kmax = min(sk, row + sk - sq + 1);
  for (int k0 = 0; k0 < kmax; k0 += 32) {
    const int key = k0 + lane;
    float s2 = -INFINITY;
    if (key < kmax) {
      const __nv_bfloat16* kr = kp + static_cast<long long>(key) * p.k_sr;
      float dot = 0.f;
#pragma unroll 16
      for (int e = 0; e < D; ++e) dot = fmaf(qs[warp][e], __bfloat162float(kr[e]), dot);
      float sc = (p.cap_in != 0.f) ? p.cap_out * tanh_acc(dot * p.cap_in) : dot * p.scale;
      s2 = sc * LOG2E;
    }
    float mx = s2;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
    const float mn = fmaxf(m, mx);
    const float corr = exp2f(m - mn);
    const float pv = (key < kmax) ? exp2f(s2 - mn) : 0.f;
    float sum = pv;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    l = l * corr + sum;
#pragma unroll
    for (int i = 0; i < E; ++i) acc[i] *= corr;
    const int nk = min(32, kmax - k0);
#pragma unroll 1
    for (int t = 0; t < nk; ++t) {
      const float pt = __shfl_sync(0xffffffffu, pv, t);
      const __nv_bfloat16* vr = vp + static_cast<long long>(k0 + t) * p.v_sr;
#pragma unroll
      for (int i = 0; i < E; ++i) {
        const int e = lane + 32 * i;
        if (e < D) acc[i] = fmaf(pt, __bfloat162float(vr[e]), acc[i]);
      }
    }
    m = mn;
  }
  const float inv = l > 0.f ? 1.f / l : 0.f;
  __nv_bfloat16* op = p.o + ooff + static_cast<long long>(h) * p.o_sh;
#pragma unroll
  for (int i = 0; i < E; ++i) {
    const int e = lane + 32 * i;
    if (e < D) op[e] = __float2bfloat16(acc[i] * inv);
  }
  if (lane == 0) {
    const float lse = l > 0.f ? (m + log2f(l)) * 0.69314718055994531f : -INFINITY;
    long long idx;
    if (p.varlen) idx = static_cast<long long>(h) * p.cu_q[p.batch] + q_start + row;
    else idx = (static_cast<long long>(b) * p.hq + h) * p.sq + row;
    p.lse[idx] = lse;
  }
}

// ------------------------------------------------------------------------------------------------
// Host side
// ------------------------------------------------------------------------------------------------
typedef CUresult (*EncodeTiledFn)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                  const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                  CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

static EncodeTiledFn get_encode() {
  static EncodeTiledFn fn = nullptr;
  if (!fn) {
    void* ptr = nullptr;
    cudaDriverEntryPointQueryResult qres;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &ptr, 12000, cudaEnableDefault, &qres) !=
            cudaSuccess ||
        qres != cudaDriverEntryPointSuccess)
      return nullptr;
    fn = reinterpret_cast<EncodeTiledFn>(ptr);
  }
  return fn;
}

// 4-D map over [batch][rows][heads][head_dim] with a {64, box_rows, 1, 1} box, 128B swizzle.
static bool make_map(CUtensorMap* map, const void* ptr, int d, long long rows, int heads, int batch,
                     const long long* strides /*{batch,row,head} elements*/, int varlen, int box_rows,
                     int box_heads) {
  EncodeTiledFn enc = get_encode();
  if (!enc) return false;
  cuuint64_t dims[4] = {static_cast<cuuint64_t>(d), static_cast<cuuint64_t>(rows), static_cast<cuuint64_t>(heads),
                        static_cast<cuuint64_t>(varlen ? 1 : batch)};
  long long bstride = varlen ? strides[1] * rows : strides[0];
  cuuint64_t gstr[3] = {static_cast<cuuint64_t>(strides[1]) * 2, static_cast<cuuint64_t>(strides[2]) * 2,
                        static_cast<cuuint64_t>(bstride) * 2};
  cuuint32_t box[4] = {64, static_cast<cuuint32_t>(box_rows), static_cast<cuuint32_t>(box_heads), 1};
  cuuint32_t estr[4] = {1, 1, 1, 1};
  CUresult r = enc(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, const_cast<void*>(ptr), dims, gstr, box, estr,
                   CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS;
}

// Split-KV workspace: allocated once (the first call that wants it, outside stream capture), never
// freed or grown, so later calls allocate nothing.
static constexpr size_t kWorkspaceBytes = size_t(64) << 20;
static void* workspace(int dev, cudaStream_t stream) {
  static void* ws[64] = {nullptr};
  if (dev < 0 || dev >= 64) return nullptr;
  if (!ws[dev]) {
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &cs) != cudaSuccess || cs != cudaStreamCaptureStatusNone) return nullptr;
    void* p = nullptr;
    if (cudaMalloc(&p, kWorkspaceBytes) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    ws[dev] = p;
  }
  return ws[dev];
}

static bool tma_ok(const void* ptr, const long long* st, int varlen) {
  if (reinterpret_cast<uintptr_t>(ptr) % 16) return false;
  for (int i = varlen ? 1 : 0; i < 3; ++i) {
    if (st[i] % 8 || st[i] <= 0 || st[i] * 2 >= (1LL << 40)) return false;
  }
  return true;
}

template <int D, int BN, int STAGES>
static int launch_main(const void* q, const void* k, const void* v, const Params& prm, int total_q_ub,
                       int total_k_ub, int hkv, const long long* qs, const long long* ks_, const long long* vs,
                       cudaStream_t stream) {
  using C = Cfg<D, BN, STAGES>;
  CUtensorMap mq, mk, mv;
  const long long rq = prm.varlen ? total_q_ub : prm.sq;
  const long long rk = prm.varlen ? total_k_ub : prm.sk;
  if (!make_map(&mq, q, D, rq, prm.hq, prm.batch, qs, prm.varlen, prm.pack_r, prm.pack_g)) return 3;
  if (!make_map(&mk, k, D, rk, hkv, prm.batch, ks_, prm.varlen, BN, 1)) return 3;
  if (!make_map(&mv, v, D, rk, hkv, prm.batch, vs, prm.varlen, BN, 1)) return 3;
  auto kern = fa_fwd_sm90<D, BN, STAGES>;
  if (cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM) != cudaSuccess) return 4;
  int dev = 0, nsm = 132;
  if (cudaGetDevice(&dev) != cudaSuccess) return 4;
  if (cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) return 4;
  const long long tiles = static_cast<long long>(prm.n_mblocks) * prm.n_splits * (prm.hq / prm.pack_g) * prm.batch;
  if (tiles >= (1LL << 31)) return 2;
  // Persistent CTAs when every tile costs the same, or when causal tiles can be paired heavy with
  // light (equal-cost pairs); one CTA per tile otherwise (varlen, split causal), so the hardware's
  // in-order block dispatch balances the uneven tiles and keeps neighbours on one head.
  Params pk = prm;
  pk.n_pairs = 0;
  const bool uniform = !prm.causal && !prm.varlen;
  int grid = static_cast<int>((!uniform || tiles < nsm) ? tiles : nsm);
  if (prm.causal && !prm.varlen && prm.n_splits == 1 && tiles > nsm && prm.n_mblocks <= KS_PAIR_MAX_MBLOCKS) {
    const long long pairs = static_cast<long long>((prm.n_mblocks + 1) / 2) * (prm.hq / prm.pack_g) * prm.batch;
    pk.n_pairs = static_cast<int>(pairs);
    grid = static_cast<int>(pairs < nsm ? pairs : nsm);
  }
  kern<<<grid, NTHREADS, C::SMEM, stream>>>(mq, mk, mv, pk);
  return cudaGetLastError() == cudaSuccess ? 0 : 5;
}

}  // namespace ks

extern "C" int ks_flash_attn_fwd(const void* q, const void* k, const void* v, void* out, float* lse,
                                 const int* cu_seqlens_q, const int* cu_seqlens_k, int batch, int seqlen_q,
                                 int seqlen_k, int heads_q, int heads_kv, int head_dim, const long long* q_strides,
                                 const long long* k_strides, const long long* v_strides,
                                 const long long* o_strides, float softmax_scale, float softcap, int causal,
                                 void* stream_) {
  using namespace ks;
  cudaStream_t stream = static_cast<cudaStream_t>(stream_);
  if (!q || !k || !v || !out || !lse || !q_strides || !k_strides || !v_strides || !o_strides) return 1;
  if (batch <= 0 || seqlen_q < 0 || seqlen_k < 0 || heads_q <= 0 || heads_kv <= 0) return 1;
  if (heads_q % heads_kv) return 1;
  if (head_dim != 64 && head_dim != 96 && head_dim != 128 && head_dim != 192 && head_dim != 256) return 2;
  const int varlen = (cu_seqlens_q != nullptr) ? 1 : 0;
  if (varlen != (cu_seqlens_k != nullptr ? 1 : 0)) return 1;
  if (seqlen_q == 0) return 0;
  if (!(softcap >= 0.f)) return 1;

  const float LOG2E = 1.4426950408889634f;
  Params prm;
  prm.o = static_cast<__nv_bfloat16*>(out);
  prm.lse = lse;
  prm.cu_q = cu_seqlens_q;
  prm.cu_k = cu_seqlens_k;
  prm.o_sb = o_strides[0];
  prm.o_sr = o_strides[1];
  prm.o_sh = o_strides[2];
  prm.batch = batch;
  prm.sq = seqlen_q;
  prm.sk = seqlen_k;
  prm.hq = heads_q;
  prm.group = heads_q / heads_kv;
  prm.varlen = varlen;
  prm.causal = causal ? 1 : 0;
  if (softcap > 0.f) {
    prm.cap_in = softmax_scale / softcap;
    prm.cap_out = softcap;
    prm.sl2 = LOG2E;
  } else {
    prm.cap_in = 0.f;
    prm.cap_out = 0.f;
    prm.sl2 = softmax_scale * LOG2E;
  }

  // Which key tile the main kernel uses for this head dim (the fallback's varlen check needs it).
  const bool d64_long = head_dim == 64 && !varlen && seqlen_q >= KS_D64_LONG_MIN && seqlen_k >= KS_D64_LONG_MIN;
  const int bn_main = head_dim == 64 ? (d64_long ? KS_D64_LONG_BN : KS_D64_BN) : head_dim == 96 ? KS_D96_BN : head_dim == 128 ? KS_D128_BN
                      : head_dim == 192 ? KS_D192_BN : KS_D256_BN;
  bool use_main = seqlen_k > 0;
  use_main = use_main && tma_ok(q, q_strides, varlen) && tma_ok(k, k_strides, varlen) && tma_ok(v, v_strides, varlen);
  use_main = use_main && (reinterpret_cast<uintptr_t>(out) % 16 == 0) && o_strides[1] % 8 == 0 &&
             o_strides[2] % 8 == 0 && (varlen || o_strides[0] % 8 == 0);
  // Varlen: the main kernel needs >= one box of rows per packed tensor; when the maxima cannot prove
  // it, launch both and let each decide on the device from cu_seqlens[batch].
  bool also_fallback = false;
  if (use_main && varlen && (seqlen_q < BM || seqlen_k < bn_main)) also_fallback = true;

  int rc = 0;
  // Defaults: no GQA packing, no split.
  prm.pack_g = 1;
  prm.pack_r = BM;
  prm.n_mblocks = (seqlen_q + BM - 1) / BM;
  prm.n_splits = 1;
  prm.o_part = nullptr;
  prm.lse_part = nullptr;
  if (use_main && !varlen) {
    int dev = 0, nsm = 132;
    if (cudaGetDevice(&dev) != cudaSuccess) return 4;
    if (cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) return 4;
    // GQA packing: the query heads sharing a KV head fill the tile's rows together when that
    // needs fewer tiles (decode and chunked prefill).
    const int g = prm.group;
    if (g > 1 && BM % g == 0) {
      const int r = BM / g;
      const long long packed = static_cast<long long>((seqlen_q + r - 1) / r) * heads_kv;
      const long long plain = static_cast<long long>(prm.n_mblocks) * heads_q;
      if (packed < plain) {
        prm.pack_g = g;
        prm.pack_r = r;
        prm.n_mblocks = (seqlen_q + r - 1) / r;
      }
    }
    // Split-KV when there are too few tiles to fill the GPU and enough key blocks to share.
    const long long tiles = static_cast<long long>(prm.n_mblocks) * (heads_q / prm.pack_g) * batch;
    const int nbk = (seqlen_k + bn_main - 1) / bn_main;
    if (2 * tiles <= nsm && nbk >= 4) {  // from half the SMs up, the combine costs more than the split gains
      int ns = static_cast<int>((2 * nsm) / tiles);
      ns = ns < nbk / 2 ? ns : nbk / 2;
      ns = ns < 16 ? ns : 16;
      const size_t need = static_cast<size_t>(ns) * batch * heads_q * seqlen_q * (head_dim + 1) * sizeof(float);
      if (ns >= 2) {
        void* ws = workspace(dev, stream);
        if (ws && need <= kWorkspaceBytes) {
          prm.n_splits = ns;
          prm.lse_part = static_cast<float*>(ws);
          prm.o_part = prm.lse_part + static_cast<size_t>(ns) * batch * heads_q * seqlen_q;
        }
      }
    }
  }
  if (use_main) {
    const long long tq = static_cast<long long>(batch) * seqlen_q, tk = static_cast<long long>(batch) * seqlen_k;
    if (tq >= (1LL << 31) || tk >= (1LL << 31)) return 2;
    const int tqi = static_cast<int>(tq), tki = static_cast<int>(tk);
    switch (head_dim) {
      case 64:
        rc = d64_long ? launch_main<64, KS_D64_LONG_BN, KS_D64_LONG_ST>(q, k, v, prm, tqi, tki, heads_kv, q_strides, k_strides, v_strides, stream)
                      : launch_main<64, KS_D64_BN, KS_D64_ST>(q, k, v, prm, tqi, tki, heads_kv, q_strides, k_strides, v_strides, stream);
        break;
      case 96: rc = launch_main<96, KS_D96_BN, KS_D96_ST>(q, k, v, prm, tqi, tki, heads_kv, q_strides, k_strides, v_strides, stream); break;
      case 128: rc = launch_main<128, KS_D128_BN, KS_D128_ST>(q, k, v, prm, tqi, tki, heads_kv, q_strides, k_strides, v_strides, stream); break;
      case 192: rc = launch_main<192, KS_D192_BN, KS_D192_ST>(q, k, v, prm, tqi, tki, heads_kv, q_strides, k_strides, v_strides, stream); break;
      default: rc = launch_main<256, KS_D256_BN, KS_D256_ST>(q, k, v, prm, tqi, tki, heads_kv, q_strides, k_strides, v_strides, stream); break;
    }
    if (rc) return rc;
    if (prm.n_splits > 1) {
      CombParams c;
      c.o_part = prm.o_part;
      c.lse_part = prm.lse_part;
      c.o = prm.o;
      c.lse = lse;
      c.o_sb = o_strides[0];
      c.o_sr = o_strides[1];
      c.o_sh = o_strides[2];
      c.batch = batch;
      c.hq = heads_q;
      c.sq = seqlen_q;
      c.n_splits = prm.n_splits;
      const long long rows = static_cast<long long>(batch) * heads_q * seqlen_q;
      const unsigned blocks = static_cast<unsigned>((rows + 3) / 4);
      switch (head_dim) {
        case 64: fa_combine<64><<<blocks, 128, 0, stream>>>(c); break;
        case 96: fa_combine<96><<<blocks, 128, 0, stream>>>(c); break;
        case 128: fa_combine<128><<<blocks, 128, 0, stream>>>(c); break;
        case 192: fa_combine<192><<<blocks, 128, 0, stream>>>(c); break;
        default: fa_combine<256><<<blocks, 128, 0, stream>>>(c); break;
      }
      if (cudaGetLastError() != cudaSuccess) return 5;
    }
  }
  if (!use_main || also_fallback) {
    FbParams f;
    f.q = static_cast<const __nv_bfloat16*>(q);
    f.k = static_cast<const __nv_bfloat16*>(k);
    f.v = static_cast<const __nv_bfloat16*>(v);
    f.o = static_cast<__nv_bfloat16*>(out);
    f.lse = lse;
    f.cu_q = cu_seqlens_q;
    f.cu_k = cu_seqlens_k;
    f.q_sb = q_strides[0]; f.q_sr = q_strides[1]; f.q_sh = q_strides[2];
    f.k_sb = k_strides[0]; f.k_sr = k_strides[1]; f.k_sh = k_strides[2];
    f.v_sb = v_strides[0]; f.v_sr = v_strides[1]; f.v_sh = v_strides[2];
    f.o_sb = o_strides[0]; f.o_sr = o_strides[1]; f.o_sh = o_strides[2];
    f.batch = batch; f.sq = seqlen_q; f.sk = seqlen_k; f.hq = heads_q; f.group = heads_q / heads_kv;
    f.d = head_dim; f.varlen = varlen; f.causal = prm.causal;
    f.only_small = also_fallback ? 1 : 0;
    f.bn_main = bn_main;
    f.scale = softmax_scale; f.cap_in = prm.cap_in; f.cap_out = prm.cap_out;
    dim3 grid((seqlen_q + 3) / 4, heads_q, batch);
    switch (head_dim) {
      case 64: fa_fwd_fallback<64><<<grid, 128, 0, stream>>>(f); break;
      case 96: fa_fwd_fallback<96><<<grid, 128, 0, stream>>>(f); break;
      case 128: fa_fwd_fallback<128><<<grid, 128, 0, stream>>>(f); break;
      case 192: fa_fwd_fallback<192><<<grid, 128, 0, stream>>>(f); break;
      default: fa_fwd_fallback<256><<<grid, 128, 0, stream>>>(f); break;
    }
    if (cudaGetLastError() != cudaSuccess) return 5;
  }
  return 0;
}
