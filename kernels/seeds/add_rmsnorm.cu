// Seed kernel for add_rmsnorm (evals/tasks/add_rmsnorm/entry.h): simple, correct, not tuned.
// One block of 256 threads per row, one bf16 element at a time. Pass 1 forms h = x + residual in
// float32, stores it (rounded to bf16) to residual_out and sums its squares; a shared-memory tree
// reduces the sum; pass 2 reads h back from residual_out (so residual_out may be the residual's own
// buffer) and writes out = h * rsqrt(mean + eps) * weight.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace {

constexpr int kThreads = 256;

__global__ void add_rmsnorm_row(const __nv_bfloat16* x, const __nv_bfloat16* residual, const __nv_bfloat16* weight,
                                __nv_bfloat16* out, __nv_bfloat16* residual_out, int hidden, long long xs,
                                long long rs, long long os, long long ros, float eps) {
    __shared__ float partial[kThreads];
    const long long row = blockIdx.x;
    const __nv_bfloat16* xr = x + row * xs;
    __nv_bfloat16* outr = out + row * os;
    float sum = 0.f;
    for (int c = threadIdx.x; c < hidden; c += kThreads) {
        float h = __bfloat162float(xr[c]);
        if (residual) {
            h += __bfloat162float(residual[row * rs + c]);
            __nv_bfloat16 stored = __float2bfloat16(h);
            residual_out[row * ros + c] = stored;
            h = __bfloat162float(stored);
        }
        sum += h * h;
    }
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int step = kThreads / 2; step > 0; step /= 2) {
        if (threadIdx.x < step) partial[threadIdx.x] += partial[threadIdx.x + step];
        __syncthreads();
    }
    const float scale = rsqrtf(partial[0] / hidden + eps);
    for (int c = threadIdx.x; c < hidden; c += kThreads) {
        float h = residual ? __bfloat162float(residual_out[row * ros + c]) : __bfloat162float(xr[c]);
        outr[c] = __float2bfloat16(h * scale * __bfloat162float(weight[c]));
    }
}

}  // namespace

extern "C" int ks_add_rmsnorm(const void* x, const void* residual, const void* weight, void* out, void* residual_out,
                              int rows, int hidden, long long x_row_stride, long long residual_row_stride,
                              long long out_row_stride, long long residual_out_row_stride, float eps,
                              void* stream) {
    if (rows == 0 && hidden >= 1) return 0;  // nothing to do: an empty tensor may have a NULL pointer
    if (rows < 0 || hidden < 1 || !x || !weight || !out || (residual && !residual_out)) return 1;
    add_rmsnorm_row<<<rows, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const __nv_bfloat16*>(x), static_cast<const __nv_bfloat16*>(residual),
        static_cast<const __nv_bfloat16*>(weight), static_cast<__nv_bfloat16*>(out),
        static_cast<__nv_bfloat16*>(residual_out), hidden, x_row_stride, residual_row_stride, out_row_stride,
        residual_out_row_stride, eps);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
