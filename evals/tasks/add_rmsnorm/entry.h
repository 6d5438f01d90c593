// The C entry point every add_rmsnorm kernel exports: fused residual add + RMSNorm, bf16 in and out.
//   h = x + residual                                  (written to residual_out: the new residual)
//   out = h * rsqrt(mean over the row of h^2 + eps) * weight
// with the sum of squares accumulated in float32. x, residual, out and residual_out are [rows, hidden]
// bf16; row r of a tensor starts at ptr + r * row_stride (strides in elements, >= hidden; the last
// dimension is contiguous; a row need not start 16-byte aligned). weight is [hidden] bf16, contiguous.
// residual == NULL: no residual, h = x (plain RMSNorm); residual_out is then NULL and not written.
// residual_out may be the same buffer as residual (in place, residual_row_stride ==
// residual_out_row_stride), as inference engines call it: every h must be computed from the residual
// as it was before the call. rows may be 0 (nothing to do); hidden is any size from 1 up.
// Returns 0, or non-zero for an error or an unsupported case. The launcher must be capture-safe
// after its first call: no allocation, synchronization or host-device copy on later calls.
#pragma once
#ifdef __cplusplus
extern "C" {
#endif
int ks_add_rmsnorm(
    const void* x, const void* residual, const void* weight,
    void* out, void* residual_out,
    int rows, int hidden,
    long long x_row_stride, long long residual_row_stride,
    long long out_row_stride, long long residual_out_row_stride,
    float eps, void* stream);
#ifdef __cplusplus
}
#endif
