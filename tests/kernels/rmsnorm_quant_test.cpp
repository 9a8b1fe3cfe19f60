// RMSNorm fused into the matmul's activation quantisation (kernels.h rmsnorm_quantize +
// matmul_quantized) against the unfused path of the same table — rmsnorm() into f32 rows, then
// matmul() — bit for bit: the scalar reference and every optimised table this CPU runs, every
// weight type, odd shapes (the packed prefill GEMM's m >= 16, k past one k chunk, n off the
// tiles), strided and gathered x rows. The quantised blocks themselves are checked against a
// scalar twin of each quantiser (the llama.cpp 32-block rule and core/quant's Q8_K).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "../error_message.h"
#include "core/quant.h"
#include "kernels/ref/ref_kernels.h"
#include "test_util.h"

namespace duet::kernels {
namespace {

using test::make_weights;
using test::optimised_tables;
using test::random_vec;

constexpr float kEps = 1e-5f;

std::vector<const KernelTable*> all_tables() {
    std::vector<const KernelTable*> t{&ref_table()};
    for (const KernelTable* p : optimised_tables()) t.push_back(p);
    return t;
}

// Row i of the fused input: x row rows[i] (or i).
int64_t src_row(const std::vector<int64_t>& rows, int64_t i) { return rows.empty() ? i : rows[size_t(i)]; }

TEST(RmsNormQuantize, FormatPerTableAndWeightType) {
    for (DType w :
         {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q4_K, DType::Q6_K})
        EXPECT_EQ(ref_table().act_format(w), ActFormat::F32) << dtype_name(w);
    for (const KernelTable* t : optimised_tables()) {
        for (DType w : {DType::F32, DType::F16, DType::BF16}) EXPECT_EQ(t->act_format(w), ActFormat::F32) << t->name;
        for (DType w : {DType::Q8_0, DType::Q4_0, DType::Q5_0})
            EXPECT_EQ(t->act_format(w), ActFormat::Q8_32) << t->name;
        for (DType w : {DType::Q4_K, DType::Q6_K}) EXPECT_EQ(t->act_format(w), ActFormat::Q8_K) << t->name;
    }
    // 1 + 8/32 bytes per value for 32-blocks, 292/256 for Q8_K, 4 for f32
    EXPECT_EQ(act_bytes(ActFormat::Q8_32, 3, 64), size_t(3 * 64 + 3 * 2 * 8));
    EXPECT_EQ(act_bytes(ActFormat::Q8_K, 3, 512), size_t(3 * 2 * 292));
    EXPECT_EQ(act_bytes(ActFormat::F32, 3, 10), size_t(120));
}

struct Case {
    int64_t m, n, k;
    bool gather;  // x rows picked out of a larger x in another order (the output norm's rows)
};

// y of rmsnorm() then matmul() vs rmsnorm_quantize() then matmul_quantized(), on table t.
void expect_bit_identical(const KernelTable& t, DType wtype, const Case& c, uint32_t seed) {
    ThreadPool pool(2);
    const int64_t xs = c.k + 5, ys = c.n + 3, m_x = c.gather ? c.m + 4 : c.m;
    const size_t ws = row_bytes(wtype, c.k) + 32;
    std::vector<float> x = random_vec(size_t(m_x * xs), seed, -3.0f, 3.0f);
    x[1] = 0;  // a zero, and one row far larger than the others
    for (int64_t l = 2; l < c.k; ++l) x[size_t(l)] *= 40.0f;
    const std::vector<float> nw = random_vec(size_t(c.k), seed + 1, 0.5f, 1.5f);
    const auto w = make_weights(random_vec(size_t(c.n * c.k), seed + 2), c.n, c.k, wtype, ws);
    std::vector<int64_t> rows;
    if (c.gather)
        for (int64_t i = 0; i < c.m; ++i) rows.push_back((c.m - 1 - i) * (m_x - 1) / std::max<int64_t>(1, c.m - 1));

    std::vector<float> xn(size_t(c.m * c.k)), y0(size_t(c.m * ys), -9.0f), y1(size_t(c.m * ys), -9.0f);
    for (int64_t i = 0; i < c.m; ++i)
        t.rmsnorm(&x[size_t(src_row(rows, i) * xs)], nw.data(), &xn[size_t(i * c.k)], c.k, kEps);
    t.matmul(xn.data(), c.m, c.k, c.k, w.data(), wtype, ws, c.n, y0.data(), ys, pool);

    const ActFormat f = t.act_format(wtype);
    std::vector<uint8_t> xq(act_bytes(f, c.m, c.k), 0xAB);
    t.rmsnorm_quantize(x.data(), xs, rows.empty() ? nullptr : rows.data(), c.m, c.k, nw.data(), kEps, f, xq.data(),
                       pool);
    t.matmul_quantized(xq.data(), f, c.m, c.k, w.data(), wtype, ws, c.n, y1.data(), ys, pool);
    size_t differ = 0;
    for (size_t i = 0; i < y0.size(); ++i) differ += std::memcmp(&y0[i], &y1[i], sizeof(float)) != 0;
    EXPECT_EQ(differ, 0u) << t.name << " " << dtype_name(wtype) << " m " << c.m << " n " << c.n << " k " << c.k
                          << (c.gather ? " gathered" : "") << ": " << differ << " outputs differ";
}

TEST(RmsNormQuantize, MatmulBitIdenticalToRmsNormThenMatmulOnEveryTable) {
    uint32_t seed = 7;
    for (const KernelTable* t : all_tables()) {
        for (DType w : {DType::Q8_0, DType::Q4_0, DType::Q5_0}) {
            // 33 blocks: past one 32-block k chunk of the packed GEMM; m 16, 17, 33: the packed path
            for (const Case& c :
                 {Case{1, 37, 224, false}, Case{1, 8, 1056, true}, Case{2, 7, 224, false}, Case{4, 9, 96, true},
                  Case{5, 33, 1056, false}, Case{16, 13, 224, false}, Case{17, 5, 1056, true}, Case{33, 19, 96, false}})
                expect_bit_identical(*t, w, c, ++seed);
        }
        for (DType w : {DType::Q4_K, DType::Q6_K})
            for (const Case& c :
                 {Case{1, 37, 768, false}, Case{2, 6, 256, true}, Case{5, 11, 512, false}, Case{17, 3, 768, true}})
                expect_bit_identical(*t, w, c, ++seed);
        // float weights take f32 rows: the fused path is rmsnorm into rows + matmul, exact too
        for (DType w : {DType::F32, DType::F16, DType::BF16})
            for (const Case& c : {Case{1, 9, 200, false}, Case{6, 5, 72, true}}) expect_bit_identical(*t, w, c, ++seed);
    }
}

// The quantised blocks against scalar twins of the quantisers on the table's own normed rows:
// 32-blocks as llama.cpp quantises activations (f32 scale amax/127, round to nearest even, the
// sum of quants) in the layout kernels.h states; Q8_K blocks as core/quant's quantize_row_q8_K.
TEST(RmsNormQuantize, BlocksEqualAScalarTwinOfTheQuantiser) {
    const auto tables = optimised_tables();
    if (tables.empty()) GTEST_SKIP() << "no optimised kernels for this CPU";
    ThreadPool pool(2);
    const int64_t m = 3, k = 512, xs = k + 1;
    const std::vector<float> x = random_vec(size_t(m * xs), 31, -2.0f, 2.0f),
                             nw = random_vec(size_t(k), 32, 0.2f, 2.0f);
    for (const KernelTable* t : tables) {
        std::vector<float> xn(static_cast<size_t>(k));
        {
            std::vector<uint8_t> xq(act_bytes(ActFormat::Q8_32, m, k));
            t->rmsnorm_quantize(x.data(), xs, nullptr, m, k, nw.data(), kEps, ActFormat::Q8_32, xq.data(), pool);
            const int64_t nb = k / 32;
            const auto* qs = reinterpret_cast<const int8_t*>(xq.data());
            const auto* d = reinterpret_cast<const float*>(xq.data() + m * k);
            const auto* sum = reinterpret_cast<const int32_t*>(xq.data() + m * k + m * nb * 4);
            for (int64_t i = 0; i < m; ++i) {
                t->rmsnorm(&x[size_t(i * xs)], nw.data(), xn.data(), k, kEps);
                for (int64_t b = 0; b < nb; ++b) {
                    float amax = 0;
                    for (int l = 0; l < 32; ++l) amax = std::max(amax, std::fabs(xn[size_t(b * 32 + l)]));
                    const float dd = amax / 127.0f, id = dd != 0.0f ? 1.0f / dd : 0.0f;
                    int32_t s = 0;
                    for (int l = 0; l < 32; ++l) {
                        const int q = int(std::nearbyint(xn[size_t(b * 32 + l)] * id));
                        ASSERT_EQ(qs[i * k + b * 32 + l], q) << t->name << " row " << i << " block " << b;
                        s += q;
                    }
                    ASSERT_EQ(d[i * nb + b], dd) << t->name;
                    ASSERT_EQ(sum[i * nb + b], s) << t->name;
                }
            }
        }
        {
            std::vector<quant::BlockQ8_K> xq(size_t(m * k / 256)), twin(size_t(k / 256));
            t->rmsnorm_quantize(x.data(), xs, nullptr, m, k, nw.data(), kEps, ActFormat::Q8_K, xq.data(), pool);
            for (int64_t i = 0; i < m; ++i) {
                t->rmsnorm(&x[size_t(i * xs)], nw.data(), xn.data(), k, kEps);
                quant::quantize_row_q8_K(xn.data(), twin.data(), k);
                EXPECT_EQ(std::memcmp(&xq[size_t(i * k / 256)], twin.data(), twin.size() * sizeof(twin[0])), 0)
                    << t->name << " row " << i;
            }
        }
    }
}

// Q8_K's scale is -127 / (the first value of the largest magnitude): with +a and -a both in a
// block, which comes first sets the sign of every quant (and of d). Rows with such ties, normed
// with unit weights so the tie survives the norm exactly, against core/quant's quantize_row_q8_K.
TEST(RmsNormQuantize, Q8KScaleComesFromTheFirstValueOfTheLargestMagnitude) {
    const auto tables = optimised_tables();
    if (tables.empty()) GTEST_SKIP() << "no optimised kernels for this CPU";
    ThreadPool pool(1);
    const int64_t m = 2, k = 512;
    std::vector<float> x = random_vec(size_t(m * k), 41, -2.0f, 2.0f);
    const std::vector<float> ones(size_t(k), 1.0f);
    x[5] = -3.5f, x[200] = 3.5f;                       // row 0, block 0: the negative one first
    x[256 + 3] = -3.5f, x[256 + 12] = 3.5f;            // row 0, block 1: the same, 9 values apart
    x[k + 256 + 17] = 3.5f, x[k + 256 + 250] = -3.5f;  // row 1, block 1: the positive one first
    std::vector<float> xn(static_cast<size_t>(k));
    for (const KernelTable* t : tables) {
        std::vector<quant::BlockQ8_K> xq(size_t(m * k / 256)), twin(size_t(k / 256));
        t->rmsnorm_quantize(x.data(), k, nullptr, m, k, ones.data(), kEps, ActFormat::Q8_K, xq.data(), pool);
        for (int64_t i = 0; i < m; ++i) {
            t->rmsnorm(&x[size_t(i * k)], ones.data(), xn.data(), k, kEps);
            ASSERT_EQ(i == 0 ? xn[5] : xn[256 + 17], i == 0 ? -xn[200] : -xn[256 + 250]) << t->name;
            quant::quantize_row_q8_K(xn.data(), twin.data(), k);
            EXPECT_EQ(std::memcmp(&xq[size_t(i * k / 256)], twin.data(), twin.size() * sizeof(twin[0])), 0)
                << t->name << " row " << i;
        }
        EXPECT_GT(xq[0].d, 0.0f) << t->name;  // -127 / (a negative value)
        EXPECT_GT(xq[1].d, 0.0f) << t->name;
        EXPECT_LT(xq[3].d, 0.0f) << t->name;
    }
}

TEST(RmsNormQuantize, ErrorsNameTheFormatAndTheTable) {
    ThreadPool pool(1);
    std::vector<float> x(512, 1.0f), w(512, 1.0f), y(8);
    std::vector<uint8_t> buf(4096);
    EXPECT_EQ(duet::test::error_of([&] {
                  ref_table().rmsnorm_quantize(x.data(), 512, nullptr, 1, 512, w.data(), kEps, ActFormat::Q8_32,
                                               buf.data(), pool);
              }),
              "rmsnorm_quantize: the scalar kernels' matmul takes no activations in q8_32 (it takes f32 for q8_0, f32 "
              "for q4_k)");
    for (const KernelTable* t : optimised_tables()) {
        EXPECT_EQ(duet::test::error_of([&] {
                      t->rmsnorm_quantize(x.data(), 512, nullptr, 1, 224, w.data(), kEps, ActFormat::Q8_K, buf.data(),
                                          pool);
                  }),
                  "rmsnorm_quantize: k = 224 must be a positive multiple of the q8_k block size 256");
        const auto wq = make_weights(std::vector<float>(512, 0.5f), 1, 512, DType::Q4_K, row_bytes(DType::Q4_K, 512));
        EXPECT_EQ(duet::test::error_of([&] {
                      t->matmul_quantized(buf.data(), ActFormat::Q8_32, 1, 512, wq.data(), DType::Q4_K,
                                          row_bytes(DType::Q4_K, 512), 1, y.data(), 1, pool);
                  }),
                  std::string("matmul_quantized: activations in q8_32 do not feed q4_k weights on the ") + t->name +
                      " kernels (they take q8_k)");
    }
}

}  // namespace
}  // namespace duet::kernels
