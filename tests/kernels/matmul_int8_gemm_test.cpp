// The integer-dot prefill GEMMs (kernels/cpu/gemm_int8_common.inc; q8_0 / q4_0 / q5_0 / q4_k / q6_k)
// against the scalar reference, on each table that has one: the AVX-512 VNNI tiles (gemm_vnni.inc,
// m >= 5, 4 rows x 48 columns) and the AVX2 ones (gemm_int8_avx2.inc, m >= 8, 4 rows x 16 columns).
// Shapes whose m, n are not multiples of either tile, k = 32 x odd (a k chunk of 16 blocks plus a
// remainder), more rows than one row block, and weights and activations at the ends of their
// ranges (q8_0 quants -128 and 127, x quantised to +-127: u8 1 and 255 on VNNI, the i16 pair
// bound of vpmaddubsw on AVX2), where a wrong offset correction, sign or packing shows at once.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/cpu_features.h"
#include "kernels/ref/ref_kernels.h"
#include "test_util.h"

namespace duet::kernels {
namespace {

using test::make_weights;
using test::random_vec;

// The VNNI + BF16 table, or nullptr when this CPU cannot run it.
const KernelTable* vnni_table() {
    const CpuFeatures& f = cpu_features();
    if (!has_vnni_table_extensions(f)) return nullptr;
    return table_for(IsaLevel::AVX512);
}

// The tables with an integer-dot GEMM that this CPU can run: AVX2 (A2Tile), VNNI (VnniTile).
std::vector<const KernelTable*> int8_gemm_tables() {
    std::vector<const KernelTable*> t;
    if (const KernelTable* a = table_for(IsaLevel::AVX2)) t.push_back(a);
    if (const KernelTable* v = vnni_table()) t.push_back(v);
    return t;
}

// x quantised as the kernel does, dequantised again, and each element's step d: 32-value blocks
// (d = amax / 127, round to nearest even) for q8_0/q4_0/q5_0, ggml's Q8_K (256 values) for q4_k and q6_k.
void quantise_like_kernel(const std::vector<float>& x, int64_t m, int64_t k, int64_t xs, DType wtype,
                          std::vector<float>& xq, std::vector<float>& step) {
    xq.assign(x.size(), 0.0f);
    step.assign(x.size(), 0.0f);
    for (int64_t i = 0; i < m; ++i) {
        if (wtype == DType::Q4_K || wtype == DType::Q6_K) {
            std::vector<quant::BlockQ8_K> q(static_cast<size_t>(k / 256));
            quant::quantize_row_q8_K(&x[size_t(i * xs)], q.data(), k);
            for (int64_t l = 0; l < k; ++l) {
                const quant::BlockQ8_K& b = q[size_t(l / 256)];
                xq[size_t(i * xs + l)] = b.d * float(b.qs[l % 256]);
                step[size_t(i * xs + l)] = std::fabs(b.d);
            }
            continue;
        }
        for (int64_t b = 0; b < k / 32; ++b) {
            const float* v = &x[size_t(i * xs + b * 32)];
            float amax = 0;
            for (int l = 0; l < 32; ++l) amax = std::max(amax, std::fabs(v[l]));
            const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
            for (int l = 0; l < 32; ++l) {
                xq[size_t(i * xs + b * 32 + l)] = d * std::nearbyint(v[l] * id);
                step[size_t(i * xs + b * 32 + l)] = d;
            }
        }
    }
}

struct Shape {
    int64_t m, n, k;
};

// y of table t against the reference fed the same 8-bit activations (exact up to f32
// rounding of k products) and against the exact product (within the activation quantisation).
void expect_matches_reference(const KernelTable& t, DType wtype, const Shape& s, const std::vector<float>& x,
                              const std::vector<uint8_t>& w, size_t ws, ThreadPool& pool) {
    const int64_t xs = s.k + 3, ys = s.n + 2;  // strides wider than the rows
    std::vector<float> wd(size_t(s.n * s.k));
    for (int64_t j = 0; j < s.n; ++j) quant::dequantize_row(&w[size_t(j) * ws], wtype, &wd[size_t(j * s.k)], s.k);
    std::vector<float> xq, step;
    quantise_like_kernel(x, s.m, s.k, xs, wtype, xq, step);
    std::vector<float> y_ref(size_t(s.m * ys)), y_refq(size_t(s.m * ys)), y(size_t(s.m * ys), -7.0f);
    ref::matmul(x.data(), s.m, s.k, xs, w.data(), wtype, ws, s.n, y_ref.data(), ys, pool);
    ref::matmul(xq.data(), s.m, s.k, xs, w.data(), wtype, ws, s.n, y_refq.data(), ys, pool);
    t.matmul(x.data(), s.m, s.k, xs, w.data(), wtype, ws, s.n, y.data(), ys, pool);
    for (int64_t i = 0; i < s.m; ++i) {
        for (int64_t j = 0; j < s.n; ++j) {
            const auto [fbound, qbound] =
                test::matmul_error_bounds(&x[size_t(i * xs)], &wd[size_t(j * s.k)], &step[size_t(i * xs)], s.k);
            const float got = y[size_t(i * ys + j)];
            const auto where = ::testing::Message() << dtype_name(wtype) << " m=" << s.m << " n=" << s.n
                                                    << " k=" << s.k << " i=" << i << " j=" << j;
            ASSERT_NEAR(got, y_refq[size_t(i * ys + j)], fbound) << where;
            ASSERT_NEAR(got, y_ref[size_t(i * ys + j)], qbound + 2 * fbound) << where;
        }
        ASSERT_EQ(y[size_t(i * ys + s.n)], -7.0f) << "wrote past row " << i;
    }
}

// m = 5 and 8 are the smallest m the VNNI and AVX2 GEMMs take; 517 rows are two row blocks (512 + 5,
// 5 = 4 + 1 rows of tiles); n = 49, 101, 150 leave partial 8- and 16-column groups and panels;
// k = 544 and 1056 are a 16-block chunk plus 1 block and two chunks plus 1; k = 32 a single block.
const std::vector<Shape> kShapes = {{5, 50, 96},   {16, 49, 544}, {19, 101, 1056}, {37, 1, 96}, {517, 53, 160},
                                    {23, 150, 32}, {64, 48, 608}, {18, 7, 1088},   {8, 21, 96}, {9, 150, 544}};

// q4_k, q6_k: k a multiple of 256 (one 256-block, 3 = a 16-block chunk + 8, 2 = one chunk)
const std::vector<Shape> kSuperShapes = {{5, 50, 256}, {19, 101, 768}, {517, 53, 512}, {23, 150, 256}, {8, 9, 256}};

void check_random(DType wtype, const std::vector<Shape>& shapes = kShapes) {
    const auto tables = int8_gemm_tables();
    if (tables.empty()) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512 VNNI + BF16";
    ThreadPool pool(2);  // both threads take panels (n >= 96)
    for (const KernelTable* t : tables) {
        SCOPED_TRACE(t->name);
        uint32_t seed = 900;
        for (const Shape& s : shapes) {
            const size_t ws = row_bytes(wtype, s.k) + 64;
            const auto x = random_vec(size_t(s.m * (s.k + 3)), ++seed);
            const auto w = make_weights(random_vec(size_t(s.n * s.k), ++seed), s.n, s.k, wtype, ws);
            expect_matches_reference(*t, wtype, s, x, w, ws, pool);
        }
    }
}

TEST(MatmulInt8Gemm, Q8_0MatchesReference) { check_random(DType::Q8_0); }
TEST(MatmulInt8Gemm, Q4_0MatchesReference) { check_random(DType::Q4_0); }
TEST(MatmulInt8Gemm, Q5_0MatchesReference) { check_random(DType::Q5_0); }
TEST(MatmulInt8Gemm, Q4_KMatchesReference) { check_random(DType::Q4_K, kSuperShapes); }
TEST(MatmulInt8Gemm, Q6_KMatchesReference) { check_random(DType::Q6_K, kSuperShapes); }

TEST(MatmulInt8Gemm, ExtremeQuantsAndActivations) {
    const auto tables = int8_gemm_tables();
    if (tables.empty()) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512 VNNI + BF16";
    ThreadPool pool(2);
    const Shape s{21, 67, 544};
    const size_t ws = row_bytes(DType::Q8_0, s.k);
    // q8_0 blocks by hand: column j's quants all -128 (j % 3 == 0), all 127 (j % 3 == 1) or alternating
    std::vector<uint8_t> w(ws * size_t(s.n));
    for (int64_t j = 0; j < s.n; ++j)
        for (int64_t b = 0; b < s.k / 32; ++b) {
            BlockQ8_0 blk;
            blk.d = fp32_to_fp16(0.01f * float(1 + (j + b) % 5));
            for (int l = 0; l < 32; ++l)
                blk.qs[l] = int8_t(j % 3 == 0 ? -128 : j % 3 == 1 ? 127 : (l % 2 ? 127 : -128));
            std::memcpy(&w[size_t(j) * ws + size_t(b) * sizeof(BlockQ8_0)], &blk, sizeof blk);
        }
    // x: per block, +-amax only (quants +-127: u8 255 and 1), sign varying with the row
    std::vector<float> x(size_t(s.m * (s.k + 3)));
    for (int64_t i = 0; i < s.m; ++i)
        for (int64_t l = 0; l < s.k; ++l)
            x[size_t(i * (s.k + 3) + l)] = float(1 + i % 4) * (((l + i) % 3 == 0) ? -1.0f : 1.0f);
    for (const KernelTable* t : tables) {
        SCOPED_TRACE(t->name);
        expect_matches_reference(*t, DType::Q8_0, s, x, w, ws, pool);
    }
}

TEST(MatmulInt8Gemm, VnniTableIsAmongTheTestedOnes) {
    // kernels_test's other matmul tests run optimised_tables(); on a VNNI CPU that must include this one
    const KernelTable* t = vnni_table();
    if (!t) GTEST_SKIP() << "this CPU has no AVX-512 VNNI + BF16";
    bool found = false;
    for (const KernelTable* o : test::optimised_tables()) found = found || o == t;
    EXPECT_TRUE(found);
}

}  // namespace
}  // namespace duet::kernels
