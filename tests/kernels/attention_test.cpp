// Attention over the block-table KV view: closed forms on every table, and optimised tables
// against the reference for f32 and f16 caches, GQA, several query tokens, block sizes that
// do not divide the context.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/quant.h"
#include "kernels/ref/ref_kernels.h"
#include "test_util.h"

namespace duet::kernels {
namespace {

using test::optimised_tables;
using test::random_vec;

// A paged cache built from dense [n_ctx][n_head_kv][head_dim] K and V, blocks deliberately
// allocated in reverse order so that a kernel assuming contiguity fails.
struct PagedKv {
    std::vector<std::vector<uint8_t>> k_store, v_store;
    std::vector<const void*> k_ptr, v_ptr;
    KvView view{};

    PagedKv(const std::vector<float>& k, const std::vector<float>& v, int64_t n_ctx, int64_t row, int64_t block_tokens,
            DType type) {
        const int64_t n_blocks = (n_ctx + block_tokens - 1) / block_tokens;
        const size_t es = type == DType::F16 ? 2 : 4;
        k_store.resize(static_cast<size_t>(n_blocks));
        v_store.resize(static_cast<size_t>(n_blocks));
        for (int64_t b = n_blocks - 1; b >= 0; --b) {
            k_store[size_t(b)].assign(size_t(block_tokens * row) * es, 0xFF);  // NaN pattern beyond n_ctx
            v_store[size_t(b)].assign(size_t(block_tokens * row) * es, 0xFF);
        }
        for (int64_t t = 0; t < n_ctx; ++t) {
            for (int64_t i = 0; i < row; ++i) {
                const size_t off = size_t((t % block_tokens) * row + i);
                auto put = [&](std::vector<uint8_t>& dst, float f) {
                    if (type == DType::F16)
                        reinterpret_cast<uint16_t*>(dst.data())[off] = fp32_to_fp16(f);
                    else
                        reinterpret_cast<float*>(dst.data())[off] = f;
                };
                put(k_store[size_t(t / block_tokens)], k[size_t(t * row + i)]);
                put(v_store[size_t(t / block_tokens)], v[size_t(t * row + i)]);
            }
        }
        for (int64_t b = 0; b < n_blocks; ++b) {
            k_ptr.push_back(k_store[size_t(b)].data());
            v_ptr.push_back(v_store[size_t(b)].data());
        }
        view = KvView{k_ptr.data(), v_ptr.data(), block_tokens, type};
    }
};

std::vector<const KernelTable*> all_tables() {
    auto t = optimised_tables();
    t.insert(t.begin(), &ref_table());
    return t;
}

// kv_row must read V rows from the V table and K rows from the K table, in every block.
// Issue 14: GCC 12 + -fsanitize=undefined turned `(is_k ? k : v)[t / block_tokens]` into
// an index read from an unevaluated temporary on the V side (every V row came from block 0).
TEST(Attention, KvRowReadsEachTableAtEveryBlock) {
    const int64_t n_ctx = 10, row = 3, block = 3;
    std::vector<float> k(size_t(n_ctx * row)), v(k.size());
    for (size_t i = 0; i < k.size(); ++i) k[i] = float(i), v[i] = -float(i) - 1000;
    for (DType type : {DType::F32, DType::F16}) {
        PagedKv kv(k, v, n_ctx, row, block, type);
        for (int64_t t = 0; t < n_ctx; ++t) {
            float kr[row], vr[row];
            ref::kv_row(kv.view, true, t, row, kr);
            ref::kv_row(kv.view, false, t, row, vr);
            for (int64_t i = 0; i < row; ++i) {
                EXPECT_EQ(kr[i], k[size_t(t * row + i)]) << dtype_name(type) << " K t=" << t << " i=" << i;
                EXPECT_EQ(vr[i], v[size_t(t * row + i)]) << dtype_name(type) << " V t=" << t << " i=" << i;
            }
        }
    }
}

TEST(Attention, SingleKeyReturnsItsValue) {
    ThreadPool pool(2);
    for (const KernelTable* t : all_tables()) {
        const int64_t hd = 5;
        const std::vector<float> k = {1, 2, 3, 4, 5}, v = {9, -8, 7, -6, 5.5f};
        PagedKv kv(k, v, 1, hd, 4, DType::F32);
        const std::vector<float> q = {0.3f, 0.1f, -2, 4, 1};
        std::vector<float> out(5);
        t->attention(q.data(), 1, 0, 1, 1, hd, kv.view, 0.5f, out.data(), pool);
        for (int i = 0; i < 5; ++i) EXPECT_NEAR(out[size_t(i)], v[size_t(i)], 1e-6) << t->name;
    }
}

TEST(Attention, EqualScoresAverageTheCausalWindow) {
    // all keys equal: softmax is uniform over the keys up to the query's own position, so
    // query token t (position pos0 + t) gets the mean of V rows 0 .. pos0 + t
    ThreadPool pool(2);
    const int64_t n_ctx = 11, pos0 = 8, n_q = 3, hd = 4, n_head = 4, n_kv = 2;
    std::vector<float> k(size_t(n_ctx * n_kv * hd), 0.25f), v(static_cast<size_t>(n_ctx * n_kv * hd));
    for (int64_t s = 0; s < n_ctx; ++s)
        for (int64_t i = 0; i < n_kv * hd; ++i) v[size_t(s * n_kv * hd + i)] = float(s) + 0.5f * float(i);
    for (DType type : {DType::F32, DType::F16}) {
        PagedKv kv(k, v, n_ctx, n_kv * hd, 3, type);
        const auto q = random_vec(size_t(n_q * n_head * hd), 9);
        for (const KernelTable* t : all_tables()) {
            std::vector<float> out(q.size());
            t->attention(q.data(), n_q, pos0, n_head, n_kv, hd, kv.view, 1.0f, out.data(), pool);
            for (int64_t tq = 0; tq < n_q; ++tq)
                for (int64_t h = 0; h < n_head; ++h)
                    for (int64_t i = 0; i < hd; ++i) {
                        const int64_t kvh = h / (n_head / n_kv);
                        const double mean_s = double(pos0 + tq) / 2.0;  // mean of 0 .. pos0 + tq
                        const double e = mean_s + 0.5 * double(kvh * hd + i);
                        ASSERT_NEAR(out[size_t((tq * n_head + h) * hd + i)], e, 1e-4 * (1 + e))
                            << t->name << " " << dtype_name(type) << " t=" << tq << " h=" << h;
                    }
        }
    }
}

TEST(Attention, OptimisedMatchesReference) {
    ThreadPool pool(2);
    struct Case {
        int64_t n_q, pos0, n_head, n_kv, hd, block;
    };
    // head_dim of 4 or 8 vectors (32/64 on AVX2, 64/128 on AVX-512) runs the register path
    // (attend_item_kv) for one query token, also with a group that is not a multiple of its head
    // blocks (6, 3, 5), and the query-block path (attend_block) for several: blocks of 32 / group
    // tokens with a last one shorter (37 = 9 x 4 + 1, 41 = 10 x 4 + 1, 35 = 32 + 3), lanes left
    // empty (group 7: 28 of 32), whole (group 16), and a group over 32 (the per-token path)
    const Case cases[] = {{1, 0, 1, 1, 8, 16},     {1, 40, 8, 2, 64, 16},  {7, 0, 4, 4, 12, 5},
                          {5, 13, 6, 3, 33, 4},    {1, 300, 4, 1, 128, 32}, {16, 17, 2, 2, 16, 7},
                          {3, 20, 6, 1, 64, 16},   {2, 50, 3, 1, 128, 16},  {1, 70, 10, 2, 32, 8},
                          {37, 5, 8, 1, 64, 16},   {41, 0, 7, 1, 64, 5},    {35, 12, 2, 2, 128, 16},
                          {20, 3, 32, 2, 32, 7},   {4, 2, 33, 1, 64, 16}};
    for (const Case& c : cases) {
        const int64_t n_ctx = c.pos0 + c.n_q, row = c.n_kv * c.hd;
        const auto k = random_vec(size_t(n_ctx * row), 21, -2.0f, 2.0f);
        const auto v = random_vec(size_t(n_ctx * row), 22);
        const auto q = random_vec(size_t(c.n_q * c.n_head * c.hd), 23, -2.0f, 2.0f);
        const float scale = 1.0f / std::sqrt(float(c.hd));
        for (DType type : {DType::F32, DType::F16}) {
            PagedKv kv(k, v, n_ctx, row, c.block, type);
            std::vector<float> ref_out(q.size());
            ref::attention(q.data(), c.n_q, c.pos0, c.n_head, c.n_kv, c.hd, kv.view, scale, ref_out.data(), pool);
            for (const KernelTable* t : optimised_tables()) {
                std::vector<float> out(q.size(), NAN);
                t->attention(q.data(), c.n_q, c.pos0, c.n_head, c.n_kv, c.hd, kv.view, scale, out.data(), pool);
                // f32 dot products of hd terms (|q k| <= 4 hd scale) and a weighted mean of
                // values in [-1, 1]: absolute error well below 1e-5 for these sizes
                for (size_t i = 0; i < out.size(); ++i)
                    ASSERT_NEAR(out[i], ref_out[i], 1e-5)
                        << t->name << " " << dtype_name(type) << " hd=" << c.hd << " pos0=" << c.pos0 << " i=" << i;
            }
        }
    }
}

// The int8 KV cache (Q8_0 rows: 32-value blocks, one f16 scale): every optimised table reads it
// like the reference, and the output is within the closed-form bound of the exact (f32 KV)
// attention: a stored value is off by at most half an int8 step, e_j <= d_j / 2 (d_j = the f16
// scale of its block, times 1.001 for the scale's own f16 rounding), so a score is off by at most
// delta = scale * sum_i |q_i| e_K,i, the softmax weights by at most exp(2 delta) - 1 in total
// (L1), and an output by max_s e_V + (exp(2 delta) - 1) * max_s |v|.
// hd = 64 runs the register path on AVX2 and AVX-512, hd = 96 (6 or 12 vectors) the per-head one.
class Int8Kv : public ::testing::TestWithParam<int64_t> {};
TEST_P(Int8Kv, IsReadByEveryTableWithinTheQuantisationBound) {
    ThreadPool pool(2);
    const int64_t hd = GetParam();
    const int64_t n_q = 3, pos0 = 37, n_head = 4, n_kv = 2, bt = 16, n_ctx = pos0 + n_q, row = n_kv * hd;
    const auto k = random_vec(size_t(n_ctx * row), 31, -2.0f, 2.0f);
    const auto v = random_vec(size_t(n_ctx * row), 32);
    const auto q = random_vec(size_t(n_q * n_head * hd), 33, -2.0f, 2.0f);
    const float scale = 1.0f / std::sqrt(float(hd));
    const size_t rb = row_bytes(DType::Q8_0, row);
    const int64_t n_blocks = (n_ctx + bt - 1) / bt;
    std::vector<std::vector<uint8_t>> ks(size_t(n_blocks), std::vector<uint8_t>(size_t(bt) * rb)), vs = ks;
    std::vector<float> kq(k.size()), vq(v.size());  // the dequantised values, for the bound
    for (int64_t t = 0; t < n_ctx; ++t) {
        uint8_t* kd = ks[size_t(t / bt)].data() + size_t(t % bt) * rb;
        uint8_t* vd = vs[size_t(t / bt)].data() + size_t(t % bt) * rb;
        quant::quantize_row(&k[size_t(t * row)], DType::Q8_0, kd, row);
        quant::quantize_row(&v[size_t(t * row)], DType::Q8_0, vd, row);
        quant::dequantize_row(kd, DType::Q8_0, &kq[size_t(t * row)], row);
        quant::dequantize_row(vd, DType::Q8_0, &vq[size_t(t * row)], row);
    }
    std::vector<const void*> kp, vp;
    for (int64_t b = 0; b < n_blocks; ++b) kp.push_back(ks[size_t(b)].data()), vp.push_back(vs[size_t(b)].data());
    const KvView int8{kp.data(), vp.data(), bt, DType::Q8_0};
    std::vector<const void*> kf, vf;  // the exact f32 cache: one block holding every position
    kf.push_back(k.data());
    vf.push_back(v.data());
    const KvView exact{kf.data(), vf.data(), n_ctx, DType::F32};
    std::vector<float> ref_out(q.size()), exact_out(q.size());
    ref::attention(q.data(), n_q, pos0, n_head, n_kv, hd, int8, scale, ref_out.data(), pool);
    ref::attention(q.data(), n_q, pos0, n_head, n_kv, hd, exact, scale, exact_out.data(), pool);
    for (const KernelTable* t : optimised_tables()) {
        std::vector<float> out(q.size(), NAN);
        t->attention(q.data(), n_q, pos0, n_head, n_kv, hd, int8, scale, out.data(), pool);
        for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], ref_out[i], 1e-5) << t->name << " hd=" << hd << " i=" << i;
    }
    // the bound, per (query token, head, output element)
    auto half_step = [&](const std::vector<float>& x, int64_t t, int64_t i) {
        const int64_t b0 = (i / 32) * 32;
        float amax = 0;
        for (int64_t j = b0; j < b0 + 32; ++j) amax = std::max(amax, std::fabs(x[size_t(t * row + j)]));
        return 0.5 * double(amax) / 127.0 * 1.001 + 1e-7;
    };
    for (int64_t t = 0; t < n_q; ++t)
        for (int64_t h = 0; h < n_head; ++h) {
            const int64_t kvh = h / (n_head / n_kv), ctx = pos0 + t + 1;
            double delta = 0, ev = 0, vmax = 0;
            for (int64_t s2 = 0; s2 < ctx; ++s2) {
                double d = 0;
                for (int64_t i = 0; i < hd; ++i)
                    d += std::fabs(double(q[size_t((t * n_head + h) * hd + i)])) * half_step(k, s2, kvh * hd + i);
                delta = std::max(delta, double(scale) * d);
                for (int64_t i = 0; i < hd; ++i) {
                    ev = std::max(ev, half_step(v, s2, kvh * hd + i));
                    vmax = std::max(vmax, double(std::fabs(v[size_t(s2 * row + kvh * hd + i)])));
                }
            }
            const double bound = ev + (std::exp(2 * delta) - 1) * vmax + 1e-5;
            for (int64_t i = 0; i < hd; ++i) {
                const size_t at = size_t((t * n_head + h) * hd + i);
                EXPECT_LE(std::fabs(double(ref_out[at]) - double(exact_out[at])), bound) << "t=" << t << " h=" << h;
            }
        }
    EXPECT_NE(ref_out, exact_out);  // the int8 cache did round
}
INSTANTIATE_TEST_SUITE_P(Attention, Int8Kv, ::testing::Values(int64_t(64), int64_t(96)));

TEST(Attention, BadShapesAreErrors) {
    ThreadPool pool(1);
    const std::vector<float> k(8, 0.0f), v(8, 0.0f);
    PagedKv kv(k, v, 1, 8, 4, DType::F32);
    std::vector<float> q(24), out(24);
    for (const KernelTable* t : all_tables()) {
        try {
            t->attention(q.data(), 1, 0, 3, 2, 4, kv.view, 1.0f, out.data(), pool);
            FAIL() << t->name;
        } catch (const Error& e) {
            EXPECT_STREQ(e.what(), "attention: n_head = 3 must be a positive multiple of n_head_kv = 2");
        }
        KvView bad = kv.view;
        bad.kv_type = DType::Q8_0;
        EXPECT_THROW(t->attention(q.data(), 1, 0, 2, 2, 4, bad, 1.0f, out.data(), pool), Error) << t->name;
    }
}

TEST(Rope, BadRotationCountIsAnError) {
    std::vector<float> x(8);
    for (const KernelTable* t : all_tables()) {
        try {
            t->rope(x.data(), 1, 8, 5, 1, 10000.0f, 1.0f, nullptr, RopeOrder::NORM);
            FAIL() << t->name;
        } catch (const Error& e) {
            EXPECT_STREQ(e.what(), "rope: n_rot = 5 must be even and within 0 .. head_dim = 8");
        }
    }
}

}  // namespace
}  // namespace duet::kernels
