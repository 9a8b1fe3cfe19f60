#include "sim/timeline_conversion.h"

#include <algorithm>
#include <cmath>

namespace duet::sim {

ConvertedMatmul convert_on_load_path(double T0, double op_ns, double to_nz_ns, int64_t n_blocks, int64_t D,
                                     ConverterState& conv) {
    const double N = double(std::max<int64_t>(1, n_blocks));
    const double cb = to_nz_ns / N, pb = op_ns / N;
    const double S = std::max(conv.free_ns, conv.gate_ns);
    double end, conv_end;
    if (D == 0) {
        end = std::max(T0, S + cb) + pb + (N - 1) * (cb + pb);
        conv_end = end - pb;
    } else {
        // blocks the converter got ahead before compute could start (at most D + 1 buffers)
        double k0 = T0 > S ? std::min({std::floor((T0 - S) / cb), double(D + 1), N}) : 0;
        if (k0 <= 0) {
            end = std::max({T0 + N * pb, S + cb + N * pb, S + N * cb + pb});
            conv_end = S + N * cb;
        } else {
            double resume = S + k0 * cb;
            if (k0 == double(D + 1) && k0 < N) resume = std::max(resume, T0 + pb);
            end = std::max(T0 + N * pb, resume + (N - k0) * cb + pb);
            conv_end = k0 < N ? resume + (N - k0) * cb : S + k0 * cb;
        }
    }
    conv.free_ns = conv_end;
    conv.gate_ns = std::max(T0, end - double(std::min<int64_t>(D, int64_t(N) - 1)) * pb);
    return {end, S, conv_end};
}

}  // namespace duet::sim
