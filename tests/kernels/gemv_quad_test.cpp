// The decode GEMV of q8_0 / q4_0 / q5_0 weights (m = 1..4; the quads of gemv_quad.inc) on hand-built blocks at the edges of the integer ranges, every table this CPU
// runs. x is chosen so that its 8-bit quantisation is exact (each block a power of two times
// integers in -127..127 with one +-127), so every table must give the exact sum up to f32
// rounding: a wrong lane order, offset (-8, -16, -128 x sum of x), scale or saturation is an
// error of whole products, far outside the bound.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/quant.h"
#include "kernels/ref/ref_kernels.h"
#include "test_util.h"

namespace duet::kernels {
namespace {

// Row j of n rows of nb blocks, `stride` bytes apart; quants drawn over the whole range, with
// the extremes forced in the first blocks (q8_0 -128 and 127, q4_0 0 and 15, q5_0 0 and 31).
std::vector<uint8_t> edge_weights(DType t, int64_t n, int64_t nb, size_t stride, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> w(stride * size_t(n), 0xCD);
    for (int64_t j = 0; j < n; ++j)
        for (int64_t b = 0; b < nb; ++b) {
            uint8_t* p = &w[size_t(j) * stride];
            const uint16_t d = fp32_to_fp16(std::ldexp(1.0f + float(rng() % 64) / 64.0f, -int(rng() % 6)));
            const int mode = int((j + b) % 3);  // 0: random, 1: all minimum, 2: all maximum
            if (t == DType::Q8_0) {
                BlockQ8_0 q{d, {}};
                for (int l = 0; l < 32; ++l) q.qs[l] = int8_t(mode == 1 ? -128 : mode == 2 ? 127 : int(rng() % 256) - 128);
                std::memcpy(p + b * sizeof q, &q, sizeof q);
            } else if (t == DType::Q4_0) {
                BlockQ4_0 q{d, {}};
                for (int l = 0; l < 16; ++l) q.qs[l] = uint8_t(mode == 1 ? 0x00 : mode == 2 ? 0xFF : rng() % 256);
                std::memcpy(p + b * sizeof q, &q, sizeof q);
            } else {
                BlockQ5_0 q{d, {}, {}};
                const uint32_t qh = mode == 1 ? 0u : mode == 2 ? ~0u : uint32_t(rng());
                std::memcpy(q.qh, &qh, 4);
                for (int l = 0; l < 16; ++l) q.qs[l] = uint8_t(mode == 1 ? 0x00 : mode == 2 ? 0xFF : rng() % 256);
                std::memcpy(p + b * sizeof q, &q, sizeof q);
            }
        }
    return w;
}

TEST(GemvQuad, EdgeQuantsGiveTheExactSum) {
    const auto tables = test::optimised_tables();
    if (tables.empty()) GTEST_SKIP() << "no optimised kernels for this CPU";
    ThreadPool pool(2);
    std::mt19937 rng(5);
    // nb: a partial quad alone, whole quads, whole quads + 1..3 blocks; n odd
    for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q5_0})
        for (int64_t nb : {1, 3, 4, 5, 8, 11, 34})
            for (int64_t m = 1; m <= 4; ++m) {
                const int64_t k = 32 * nb, n = 19, xs = k + 5, ys = n + 3;
                const size_t stride = row_bytes(t, k) + 8;  // padded; even, as the f16 scales of ggml blocks need 2-byte alignment
                const auto w = edge_weights(t, n, nb, stride, uint32_t(nb * 10 + m));
                std::vector<float> x(size_t(m * xs), 0.0f);
                for (int64_t i = 0; i < m; ++i)
                    for (int64_t b = 0; b < nb; ++b) {
                        const float s = std::ldexp(1.0f, int(rng() % 8) - 4);  // the block's step, exact
                        for (int l = 0; l < 32; ++l) {
                            const int q = l == 0 ? ((b + i) % 2 ? 127 : -127) : int(rng() % 255) - 127;
                            x[size_t(i * xs + b * 32 + l)] = float(q) * s;
                        }
                    }
                std::vector<float> y_ref(static_cast<size_t>(m * ys)), wd(static_cast<size_t>(k));
                ref::matmul(x.data(), m, k, xs, w.data(), t, stride, n, y_ref.data(), ys, pool);
                for (const KernelTable* tab : tables) {
                    std::vector<float> y(size_t(m * ys), -7.0f);
                    tab->matmul(x.data(), m, k, xs, w.data(), t, stride, n, y.data(), ys, pool);
                    for (int64_t j = 0; j < n; ++j) {
                        quant::dequantize_row(&w[size_t(j) * stride], t, wd.data(), k);
                        for (int64_t i = 0; i < m; ++i) {
                            double mag = 0;
                            for (int64_t l = 0; l < k; ++l) mag += std::fabs(double(x[size_t(i * xs + l)]) * wd[size_t(l)]);
                            ASSERT_NEAR(y[size_t(i * ys + j)], y_ref[size_t(i * ys + j)], double(k + 8) * FLT_EPSILON * mag)
                                << tab->name << " " << dtype_name(t) << " m=" << m << " nb=" << nb << " y[" << i << "]["
                                << j << "]";
                        }
                    }
                    for (int64_t i = 0; i < m; ++i) ASSERT_EQ(y[size_t(i * ys + n)], -7.0f) << "wrote past the row";
                }
            }
}

}  // namespace
}  // namespace duet::kernels
