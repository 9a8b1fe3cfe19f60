#pragma once
// Helpers shared by the kernel tests: seeded data, quantised weight matrices, the list of
// kernel tables this CPU can run.
#include <cfloat>
#include <cmath>
#include <random>
#include <vector>

#include "core/quant.h"
#include "kernels/kernel_table.h"

namespace duet::kernels::test {

inline std::vector<float> random_vec(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng);
    return v;
}

// n rows of k values quantised row by row to `type`, rows `stride` bytes apart.
inline std::vector<uint8_t> make_weights(const std::vector<float>& wf, int64_t n, int64_t k, DType type,
                                         size_t stride) {
    std::vector<uint8_t> w(stride * size_t(n), 0xCD);  // padding bytes must not be read as data
    for (int64_t j = 0; j < n; ++j) quant::quantize_row(&wf[size_t(j * k)], type, &w[size_t(j) * stride], k);
    return w;
}

// Bounds on |y[i][j] - exact| for one x row and one weight row (dequantised) of k values:
// fbound, the f32 accumulation of k products in any order (first order: (k + 8) * 2^-24 * sum
// |x w|, plus 1e-6), and qbound, the activation quantisation (each x element moves by at most half
// its block's step: sum step / 2 * |w|; 0 when step is null).
struct ErrorBounds {
    double fbound = 0, qbound = 0;
};
inline ErrorBounds matmul_error_bounds(const float* x, const float* w, const float* step, int64_t k) {
    double mag = 0, qbound = 0;
    for (int64_t l = 0; l < k; ++l) {
        const double aw = std::fabs(w[l]);
        mag += std::fabs(x[l]) * aw;
        if (step) qbound += 0.5 * step[l] * aw;
    }
    return {double(k + 8) * FLT_EPSILON * mag + 1e-6, qbound};
}

// Optimised tables this machine can run (not the scalar reference itself).
inline std::vector<const KernelTable*> optimised_tables() {
    std::vector<const KernelTable*> t;
    for (int i = 0; const KernelTable* p = optimised_table(i); ++i) t.push_back(p);
    return t;
}

}  // namespace duet::kernels::test
