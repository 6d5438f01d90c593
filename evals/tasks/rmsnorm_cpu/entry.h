// The C entry point every rmsnorm_cpu kernel exports.
// x: [rows, cols] float32, row-major, contiguous; w: [cols]; y: [rows, cols].
// y[r, c] = x[r, c] / sqrt(mean over c' of x[r, c']^2 + eps) * w[c]. Returns 0, or non-zero on error.
#pragma once
#ifdef __cplusplus
extern "C" {
#endif
int ks_rmsnorm(const float* x, const float* w, float* y, int rows, int cols, float eps);
#ifdef __cplusplus
}
#endif
