#include <cmath>
#include <vector>

#include "core/error.h"
#include "kernels/ref/ref_kernels.h"

namespace duet::kernels::ref {

void rmsnorm(const float* x, const float* weight, float* y, int64_t n, float eps) {
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += double(x[i]) * double(x[i]);
    const double inv = 1.0 / std::sqrt(ss / double(n) + double(eps));
    for (int64_t i = 0; i < n; ++i) y[i] = float(double(x[i]) * inv * double(weight[i]));
}

void rope(float* x, int64_t n_head, int64_t head_dim, int64_t n_rot, int64_t pos, float freq_base, float freq_scale,
          const float* freq_factors, RopeOrder order) {
    if (n_rot < 0 || n_rot % 2 != 0 || n_rot > head_dim)
        fail("rope: n_rot = {} must be even and within 0 .. head_dim = {}", n_rot, head_dim);
    const int64_t half = n_rot / 2;
    // The angles depend on the pair index only, not on the head: compute them once.
    std::vector<double> c(static_cast<size_t>(half)), s(static_cast<size_t>(half));
    for (int64_t i = 0; i < half; ++i) {
        double theta = double(pos) * double(freq_scale) * std::pow(double(freq_base), -2.0 * double(i) / double(n_rot));
        if (freq_factors) theta /= double(freq_factors[i]);
        c[size_t(i)] = std::cos(theta);
        s[size_t(i)] = std::sin(theta);
    }
    for (int64_t h = 0; h < n_head; ++h) {
        float* v = x + h * head_dim;
        for (int64_t i = 0; i < half; ++i) {
            const int64_t a = order == RopeOrder::NORM ? 2 * i : i;
            const int64_t b = order == RopeOrder::NORM ? 2 * i + 1 : i + half;
            const double x0 = v[a], x1 = v[b];
            v[a] = float(x0 * c[size_t(i)] - x1 * s[size_t(i)]);
            v[b] = float(x0 * s[size_t(i)] + x1 * c[size_t(i)]);
        }
    }
}

void softmax(float* x, int64_t n) {
    if (n <= 0) return;
    float mx = x[0];
    for (int64_t i = 1; i < n; ++i) mx = std::max(mx, x[i]);
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += std::exp(double(x[i]) - double(mx));
    for (int64_t i = 0; i < n; ++i) x[i] = float(std::exp(double(x[i]) - double(mx)) / sum);
}

void swiglu(const float* gate, const float* up, float* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const double g = gate[i];
        out[i] = float(g / (1.0 + std::exp(-g)) * double(up[i]));
    }
}

}  // namespace duet::kernels::ref
