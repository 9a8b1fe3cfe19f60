// Every optimised matmul against the scalar reference, for every ISA this CPU runs, every
// weight type, and odd shapes (k not a multiple of the vector width, n and m not multiples of
// the register tiles, strides larger than the rows).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "kernels/ref/ref_kernels.h"
#include "test_util.h"

namespace duet::kernels {
namespace {

using test::make_weights;
using test::optimised_tables;
using test::random_vec;

// The quantisation the optimised kernels apply to x for integer dot products: blocks of 32
// (f32 scale amax/127, round to nearest even) for q8_0/q4_0/q5_0, ggml's Q8_K (256) for K-quants.
// Returns the dequantised activations and, per element, the block's quantisation step d.
void emulate_activation_quant(const std::vector<float>& x, int64_t m, int64_t k, int64_t xs, DType wtype,
                              std::vector<float>& xq, std::vector<float>& step) {
    xq.assign(x.size(), 0.0f);
    step.assign(x.size(), 0.0f);
    const bool kquant = wtype == DType::Q4_K || wtype == DType::Q6_K;
    for (int64_t i = 0; i < m; ++i) {
        const float* v = &x[size_t(i * xs)];
        if (kquant) {
            std::vector<quant::BlockQ8_K> b(static_cast<size_t>(k / 256));
            quant::quantize_row_q8_K(v, b.data(), k);
            for (int64_t l = 0; l < k; ++l) {
                xq[size_t(i * xs + l)] = b[size_t(l / 256)].d * float(b[size_t(l / 256)].qs[l % 256]);
                step[size_t(i * xs + l)] = std::fabs(b[size_t(l / 256)].d);
            }
        } else {
            for (int64_t b = 0; b < k / 32; ++b) {
                float amax = 0;
                for (int l = 0; l < 32; ++l) amax = std::max(amax, std::fabs(v[b * 32 + l]));
                const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
                for (int l = 0; l < 32; ++l) {
                    xq[size_t(i * xs + b * 32 + l)] = d * std::nearbyint(v[b * 32 + l] * id);
                    step[size_t(i * xs + b * 32 + l)] = d;
                }
            }
        }
    }
}

struct Shape {
    int64_t m, n, k;
};

void check_type(DType wtype, const std::vector<Shape>& shapes) {
    const auto tables = optimised_tables();
    if (tables.empty()) GTEST_SKIP() << "no optimised kernels for this CPU";
    ThreadPool pool(2);
    uint32_t seed = 100;
    for (const Shape& s : shapes) {
        const int64_t xs = s.k + 3, ys = s.n + 2;  // strides wider than the rows
        const size_t ws = row_bytes(wtype, s.k) + 64;
        const auto x = random_vec(size_t(s.m * xs), ++seed);
        const auto wf = random_vec(size_t(s.n * s.k), ++seed);
        const auto w = make_weights(wf, s.n, s.k, wtype, ws);
        // the weights as the kernels see them (after quantisation)
        std::vector<float> wd(wf.size());
        for (int64_t j = 0; j < s.n; ++j) quant::dequantize_row(&w[size_t(j) * ws], wtype, &wd[size_t(j * s.k)], s.k);

        std::vector<float> y_ref(static_cast<size_t>(s.m * ys)), y_refq(static_cast<size_t>(s.m * ys));
        ref::matmul(x.data(), s.m, s.k, xs, w.data(), wtype, ws, s.n, y_ref.data(), ys, pool);
        const bool quantised = dtype_is_quantized(wtype);
        std::vector<float> xq, step;
        if (quantised) {
            emulate_activation_quant(x, s.m, s.k, xs, wtype, xq, step);
            ref::matmul(xq.data(), s.m, s.k, xs, w.data(), wtype, ws, s.n, y_refq.data(), ys, pool);
        }
        for (const KernelTable* t : tables) {
            std::vector<float> y(size_t(s.m * ys), -7.0f);
            t->matmul(x.data(), s.m, s.k, xs, w.data(), wtype, ws, s.n, y.data(), ys, pool);
            for (int64_t i = 0; i < s.m; ++i) {
                for (int64_t j = 0; j < s.n; ++j) {
                    const auto [fbound, qbound] = test::matmul_error_bounds(
                        &x[size_t(i * xs)], &wd[size_t(j * s.k)], quantised ? &step[size_t(i * xs)] : nullptr, s.k);
                    const float got = y[size_t(i * ys + j)];
                    const auto where = ::testing::Message() << t->name << " " << dtype_name(wtype) << " m=" << s.m
                                                            << " n=" << s.n << " k=" << s.k << " i=" << i << " j=" << j;
                    if (!quantised) {
                        ASSERT_NEAR(got, y_ref[size_t(i * ys + j)], fbound) << where;
                    } else {
                        // exact up to rounding against the reference fed the same 8-bit activations ...
                        ASSERT_NEAR(got, y_refq[size_t(i * ys + j)], fbound) << where;
                        // ... and within the activation quantisation bound of the exact product
                        ASSERT_NEAR(got, y_ref[size_t(i * ys + j)], qbound + 2 * fbound) << where;
                    }
                }
                ASSERT_EQ(y[size_t(i * ys + s.n)], -7.0f) << "wrote past the row";
            }
        }
    }
}

// m <= 4 is the decode GEMV (gemv_rows.inc): m = 3 and n large enough for a range per thread of
// the 2-thread pool (at least 2^16 multiply-adds each) are included.
const std::vector<Shape> kFloatShapes = {{1, 1, 1},    {1, 3, 17},  {2, 17, 63},    {5, 7, 100},  {33, 17, 64},
                                         {4, 6, 129},  {1, 64, 1000}, {9, 13, 33}, {17, 9, 70},  {3, 11, 100},
                                         {1, 301, 520}, {3, 97, 530},
                                         // prefill (m >= 64, gemm_float_packed.inc): several k-blocks (512
                                         // steps at m = 65, 320 at m = 200) with a tail of 76 / 13 steps,
                                         // partial x panels of 6 / 8 rows, W panels of 16 (AVX2) or 32
                                         // (AVX-512) outputs, partial and (n = 45) whole; m = 530 two row
                                         // blocks (512 + 18 rows on AVX-512, 510 + 20 on AVX2)
                                         {65, 19, 1100}, {200, 21, 333}, {64, 16, 8}, {70, 45, 300}, {530, 37, 200}};
// m >= 16 takes the packed q8_0 GEMM on AVX-512 (gemm_q8_packed.inc): 513 rows span two x-row
// blocks and a 3-row tile remainder, k = 1088 (34 blocks) two k chunks, n = 7 a half-empty panel.
const std::vector<Shape> kBlock32Shapes = {{1, 1, 32},    {1, 3, 96},    {2, 17, 160},  {5, 7, 64},
                                           {33, 17, 32},  {4, 8, 1056},  {1, 65, 320},  {16, 5, 64},
                                           {17, 9, 1056}, {513, 7, 1088}, {18, 1, 32},   {3, 5, 288},
                                           {1, 301, 544}, {3, 101, 544}, {2, 33, 512}, {4, 37, 1024}, {3, 11, 640}};
const std::vector<Shape> kSuperShapes = {{1, 1, 256},  {1, 3, 512},  {2, 17, 256}, {5, 7, 768},
                                         {33, 9, 256}, {17, 5, 512}, {3, 6, 512},  {1, 301, 512}};

TEST(Matmul, F32MatchesReference) { check_type(DType::F32, kFloatShapes); }
TEST(Matmul, F16MatchesReference) { check_type(DType::F16, kFloatShapes); }
TEST(Matmul, BF16MatchesReference) { check_type(DType::BF16, kFloatShapes); }
TEST(Matmul, Q8_0MatchesReferenceWithinActivationQuantisation) { check_type(DType::Q8_0, kBlock32Shapes); }
TEST(Matmul, Q4_0MatchesReferenceWithinActivationQuantisation) { check_type(DType::Q4_0, kBlock32Shapes); }
TEST(Matmul, Q5_0MatchesReferenceWithinActivationQuantisation) { check_type(DType::Q5_0, kBlock32Shapes); }
TEST(Matmul, Q4_KMatchesReferenceWithinActivationQuantisation) { check_type(DType::Q4_K, kSuperShapes); }
TEST(Matmul, Q6_KMatchesReferenceWithinActivationQuantisation) { check_type(DType::Q6_K, kSuperShapes); }

TEST(Matmul, ReferenceIsTheDefinition) {
    // y = x W^T by hand: x = [1 2 3], W = [[1 0 0], [0.5 -1 2]]
    const float x[3] = {1, 2, 3};
    const float w[6] = {1, 0, 0, 0.5f, -1, 2};
    float y[2];
    ThreadPool pool(1);
    ref::matmul(x, 1, 3, 3, w, DType::F32, 12, 2, y, 2, pool);
    EXPECT_EQ(y[0], 1.0f);
    EXPECT_EQ(y[1], 4.5f);
}

TEST(Matmul, ActiveTableFollowsIsaLevel) { EXPECT_STREQ(kernel_isa(), isa_name(isa_level())); }

TEST(Matmul, BadArgumentsAreErrors) {
    ThreadPool pool(1);
    std::vector<float> x(64), y(4);
    std::vector<uint8_t> w(1024);
    try {
        matmul(x.data(), 1, 48, 48, w.data(), DType::Q8_0, 64, 1, y.data(), 1, pool);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "matmul: k = 48 must be a positive multiple of the q8_0 block size 32");
    }
    try {
        matmul(x.data(), 1, 32, 32, w.data(), DType::Q8_0, 20, 1, y.data(), 1, pool);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "matmul: w_row_stride_bytes = 20 is smaller than a q8_0 row of 32 elements (34 bytes)");
    }
    EXPECT_THROW(matmul(x.data(), 1, 8, 4, w.data(), DType::F32, 32, 1, y.data(), 1, pool), Error);
    EXPECT_THROW(matmul(x.data(), 1, 8, 8, w.data(), DType::I32, 32, 1, y.data(), 1, pool), Error);
}

}  // namespace
}  // namespace duet::kernels
