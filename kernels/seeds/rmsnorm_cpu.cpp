// Seed kernel for the rmsnorm_cpu task: correct, plain and slow (double accumulation, a division
// per element, one pass for the mean and one for the output).
#include <cmath>

extern "C" int ks_rmsnorm(const float* x, const float* w, float* y, int rows, int cols, float eps) {
    if (rows < 0 || cols <= 0) return 1;
    for (int r = 0; r < rows; ++r) {
        const float* row = x + (long long)r * cols;
        double sum = 0.0;
        for (int c = 0; c < cols; ++c) sum += (double)row[c] * (double)row[c];
        double rms = std::sqrt(sum / cols + eps);
        for (int c = 0; c < cols; ++c) y[(long long)r * cols + c] = (float)(row[c] / rms * w[c]);
    }
    return 0;
}
