// rmsnorm, rope, softmax, swiglu, dequantize_row: closed forms on the reference, and every
// optimised table against the reference on random data and odd lengths.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "kernels/ref/ref_kernels.h"
#include "test_util.h"

namespace duet::kernels {
namespace {

using test::optimised_tables;
using test::random_vec;

const std::vector<const KernelTable*> all_tables() {
    auto t = optimised_tables();
    t.insert(t.begin(), &ref_table());
    return t;
}

TEST(RmsNorm, ClosedForm) {
    // constant input c: mean(x^2) = c^2, y = c / sqrt(c^2 + eps) * w
    for (const KernelTable* t : all_tables()) {
        for (int64_t n : {1, 7, 16, 33, 4096}) {
            std::vector<float> x(size_t(n), -3.0f), w(static_cast<size_t>(n)), y(static_cast<size_t>(n));
            for (int64_t i = 0; i < n; ++i) w[size_t(i)] = float(i % 5) - 2.0f;
            t->rmsnorm(x.data(), w.data(), y.data(), n, 1e-5f);
            const double e = -3.0 / std::sqrt(9.0 + 1e-5);
            for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(y[size_t(i)], e * w[size_t(i)], 1e-6) << t->name << " n=" << n;
        }
    }
}

TEST(RmsNorm, OptimisedMatchesReferenceInPlace) {
    for (const KernelTable* t : optimised_tables()) {
        for (int64_t n : {3, 17, 64, 1000}) {
            auto x = random_vec(size_t(n), 7, -4.0f, 4.0f);
            const auto w = random_vec(size_t(n), 8);
            std::vector<float> ref(static_cast<size_t>(n));
            ref::rmsnorm(x.data(), w.data(), ref.data(), n, 1e-6f);
            t->rmsnorm(x.data(), w.data(), x.data(), n, 1e-6f);  // y aliases x
            // f32 sum of n squares vs double: relative error <= n * 2^-24; 1e-5 covers n = 1000
            for (int64_t i = 0; i < n; ++i)
                ASSERT_NEAR(x[size_t(i)], ref[size_t(i)], 1e-5 * std::fabs(ref[size_t(i)]) + 1e-7);
        }
    }
}

TEST(Rope, NormRotatesAdjacentPairsByThePositionAngle) {
    // head_dim 6, n_rot 4: pairs (0,1) angle pos, (2,3) angle pos * base^(-1/2); dims 4, 5 untouched
    for (const KernelTable* t : all_tables()) {
        std::vector<float> x = {1, 0, 0, 1, 5, 6, /* head 2 */ 2, 0, 1, 1, 7, 8};
        t->rope(x.data(), 2, 6, 4, 3, 100.0f, 1.0f, nullptr, RopeOrder::NORM);
        const double a0 = 3.0, a1 = 3.0 / 10.0;
        EXPECT_NEAR(x[0], std::cos(a0), 1e-6) << t->name;
        EXPECT_NEAR(x[1], std::sin(a0), 1e-6);
        EXPECT_NEAR(x[2], -std::sin(a1), 1e-6);
        EXPECT_NEAR(x[3], std::cos(a1), 1e-6);
        EXPECT_EQ(x[4], 5.0f);
        EXPECT_EQ(x[5], 6.0f);
        EXPECT_NEAR(x[6], 2 * std::cos(a0), 1e-6);
        EXPECT_NEAR(x[8], std::cos(a1) - std::sin(a1), 1e-6);
        EXPECT_NEAR(x[9], std::sin(a1) + std::cos(a1), 1e-6);
        EXPECT_EQ(x[11], 8.0f);
    }
}

TEST(Rope, NeoxRotatesHalvesAndHonoursFreqFactorsAndScale) {
    // n_rot 4: pairs (0,2) and (1,3); angle_i = pos * scale * base^(-2i/4) / factor_i
    for (const KernelTable* t : all_tables()) {
        std::vector<float> x = {1, 1, 0, 0};
        const float factors[2] = {2.0f, 4.0f};
        t->rope(x.data(), 1, 4, 4, 5, 10000.0f, 0.5f, factors, RopeOrder::NEOX);
        const double a0 = 5 * 0.5 / 2.0, a1 = 5 * 0.5 * 0.01 / 4.0;
        EXPECT_NEAR(x[0], std::cos(a0), 1e-6) << t->name;
        EXPECT_NEAR(x[2], std::sin(a0), 1e-6);
        EXPECT_NEAR(x[1], std::cos(a1), 1e-6);
        EXPECT_NEAR(x[3], std::sin(a1), 1e-6);
    }
}

TEST(Rope, PositionZeroIsIdentityAndNormsArePreserved) {
    auto x = random_vec(4 * 64, 3);
    auto y = x;
    ref::rope(y.data(), 4, 64, 64, 0, 10000.0f, 1.0f, nullptr, RopeOrder::NEOX);
    EXPECT_EQ(x, y);
    ref::rope(y.data(), 4, 64, 64, 1234, 500000.0f, 1.0f, nullptr, RopeOrder::NORM);
    for (int p = 0; p < 4 * 32; ++p) {
        const double before = double(x[2 * p]) * x[2 * p] + double(x[2 * p + 1]) * x[2 * p + 1];
        const double after = double(y[2 * p]) * y[2 * p] + double(y[2 * p + 1]) * y[2 * p + 1];
        ASSERT_NEAR(after, before, 1e-5);
    }
}

TEST(Softmax, ClosedForm) {
    for (const KernelTable* t : all_tables()) {
        std::vector<float> x = {0.0f, float(std::numbers::ln2), float(std::log(3.0)), -INFINITY};
        t->softmax(x.data(), 4);
        EXPECT_NEAR(x[0], 1.0 / 6, 1e-6) << t->name;
        EXPECT_NEAR(x[1], 2.0 / 6, 1e-6);
        EXPECT_NEAR(x[2], 3.0 / 6, 1e-6);
        EXPECT_EQ(x[3], 0.0f);
        // large equal values: no overflow, uniform
        std::vector<float> big(37, 1000.0f);
        t->softmax(big.data(), 37);
        for (float v : big) ASSERT_NEAR(v, 1.0 / 37, 1e-7);
    }
}

TEST(Softmax, OptimisedMatchesReference) {
    for (const KernelTable* t : optimised_tables()) {
        for (int64_t n : {1, 5, 16, 31, 1000}) {
            auto x = random_vec(size_t(n), uint32_t(n), -20.0f, 20.0f);
            auto r = x;
            ref::softmax(r.data(), n);
            t->softmax(x.data(), n);
            // the vector exp is within ~2e-7 relative; sums add n * 2^-24
            for (int64_t i = 0; i < n; ++i)
                ASSERT_NEAR(x[size_t(i)], r[size_t(i)], 2e-6 * r[size_t(i)] + 1e-12) << t->name;
        }
    }
}

TEST(SwiGlu, ClosedFormAndReference) {
    for (const KernelTable* t : all_tables()) {
        const float g[3] = {0.0f, 30.0f, -30.0f}, u[3] = {5.0f, 2.0f, 1.0f};
        float o[3];
        t->swiglu(g, u, o, 3);
        EXPECT_EQ(o[0], 0.0f) << t->name;
        EXPECT_NEAR(o[1], 60.0f, 1e-4);
        EXPECT_NEAR(o[2], -30.0 * std::exp(-30.0), 1e-15);
    }
    for (const KernelTable* t : optimised_tables()) {
        for (int64_t n : {1, 9, 64, 1001}) {
            auto gate = random_vec(size_t(n), 11, -10.0f, 10.0f);
            const auto up = random_vec(size_t(n), 12);
            std::vector<float> r(static_cast<size_t>(n));
            ref::swiglu(gate.data(), up.data(), r.data(), n);
            t->swiglu(gate.data(), up.data(), gate.data(), n);  // out aliases gate
            for (int64_t i = 0; i < n; ++i)
                ASSERT_NEAR(gate[size_t(i)], r[size_t(i)], 1e-6 * std::fabs(r[size_t(i)]) + 1e-9);
        }
    }
}

TEST(DequantizeRow, OptimisedMatchesReference) {
    for (const KernelTable* t : optimised_tables()) {
        for (DType type :
             {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q4_K, DType::Q6_K}) {
            const int64_t n = dtype_is_quantized(type) ? 512 : 37;
            const auto x = random_vec(size_t(n), 5);
            std::vector<uint8_t> q(row_bytes(type, n));
            quant::quantize_row(x.data(), type, q.data(), n);
            std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
            ref::dequantize_row(q.data(), type, a.data(), n);
            t->dequantize_row(q.data(), type, b.data(), n);
            EXPECT_EQ(a, b) << t->name << " " << dtype_name(type);
        }
    }
}

}  // namespace
}  // namespace duet::kernels
