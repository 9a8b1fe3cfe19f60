#include "sim/expert_routing.h"

#include <cmath>

#include "core/error.h"

namespace duet::sim {

std::vector<double> ExpertRouting::layer(int64_t l, int64_t n_expert) const {
    if (l >= 0 && size_t(l) < fractions.size() && !fractions[size_t(l)].empty()) return fractions[size_t(l)];
    return std::vector<double>(size_t(n_expert), 1.0 / double(n_expert));
}

ExpertRouting zipf_routing(double s, int64_t n_layer, int64_t n_expert, int64_t k) {
    if (!std::isfinite(s) || s < 0 || s > 10) fail("--expert-skew = {} is not allowed (allowed: 0 to 10)", s);
    ExpertRouting r;
    r.source = fmt::format("zipf s = {}", s);
    if (s == 0) {
        r.source = "uniform";
        return r;
    }
    std::vector<double> f(static_cast<size_t>(n_expert));
    double sum = 0;
    for (int64_t i = 0; i < n_expert; ++i) sum += f[size_t(i)] = std::pow(double(i + 1), -s);
    for (double& x : f) x /= sum;
    if (double(k) * f[0] > 1 + 1e-9)
        fail("--expert-skew = {} gives expert 0 {:.1f} % of the routed rows, more than 1/k = {:.1f} % (each token picks "
             "{} distinct experts) (allowed: a smaller skew)", s, 100 * f[0], 100.0 / double(k), k);
    r.fractions.assign(size_t(n_layer), f);
    return r;
}

}  // namespace duet::sim
