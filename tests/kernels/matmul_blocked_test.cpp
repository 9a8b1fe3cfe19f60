// matmul_blocked (weights read in place as a grid of dense blocks, the PIM layout) against the
// row-major matmul of the same kernel table, for the scalar reference and every optimised table
// this CPU runs, every weight dtype, odd shapes and block grids: bit-identical when each row range
// is one block, or on the SIMD tables when the k-blocks are whole 16-element vectors and m <= 4
// (the carried accumulators: the same sums in the same order) or the weights f32 (one tile over
// all k-blocks), else within the bound of a reordered f32 sum. Split Q8_0 (int8 quants in the
// blocks, f16 scales beside: the int8 PIM layout) is bit-identical to matmul of the Q8_0 rows on
// every table.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "test_util.h"

namespace duet::kernels {
namespace {

using test::make_weights;
using test::optimised_tables;
using test::random_vec;

// W (row-major, rows `stride` bytes apart) copied into blocks of rows_per_block x kb elements,
// stored one after another row-range-major, each dense with a row stride of its width plus
// `pad` bytes.
struct Blocked {
    std::vector<uint8_t> bytes;
    std::vector<WeightBlock> blocks;
    BlockedWeights view(DType t, int64_t n, int64_t k) const {
        return BlockedWeights{t, n, k, blocks.data(), int64_t(blocks.size())};
    }
};

Blocked make_blocked(const std::vector<uint8_t>& w, size_t stride, DType t, int64_t n, int64_t k,
                     int64_t rows_per_block, int64_t kb, size_t pad) {
    Blocked b;
    std::vector<size_t> offs;
    for (int64_t r0 = 0; r0 < n; r0 += rows_per_block)
        for (int64_t k0 = 0; k0 < k; k0 += kb) {
            WeightBlock blk;
            blk.row0 = r0;
            blk.rows = std::min(rows_per_block, n - r0);
            blk.k0 = k0;
            blk.kelems = std::min(kb, k - k0);
            blk.row_stride_bytes = row_bytes(t, blk.kelems) + pad;
            offs.push_back(b.bytes.size());
            const size_t at = b.bytes.size(), skip = row_bytes(t, k0), len = row_bytes(t, blk.kelems);
            b.bytes.resize(at + size_t(blk.rows) * blk.row_stride_bytes, 0xEE);
            for (int64_t r = 0; r < blk.rows; ++r)
                std::memcpy(&b.bytes[at + size_t(r) * blk.row_stride_bytes], &w[size_t(r0 + r) * stride + skip], len);
            b.blocks.push_back(blk);
        }
    for (size_t i = 0; i < offs.size(); ++i) b.blocks[i].data = b.bytes.data() + offs[i];
    return b;
}

struct Case {
    int64_t m, n, k, rows_per_block, kb;
};

void check_type(DType t, const std::vector<Case>& cases) {
    std::vector<const KernelTable*> tables = optimised_tables();
    tables.insert(tables.begin(), &ref_table());
    ThreadPool pool(2);
    uint32_t seed = 7;
    for (const Case& c : cases) {
        const size_t stride = row_bytes(t, c.k) + 6;
        const auto wf = random_vec(size_t(c.n * c.k), seed++);
        const auto w = make_weights(wf, c.n, c.k, t, stride);
        const int64_t xs = c.k + 3, ys = c.n + 2;
        const auto x = random_vec(size_t(c.m * xs), seed++);
        const Blocked b = make_blocked(w, stride, t, c.n, c.k, c.rows_per_block, c.kb, 4);
        // |x| . |w| per output, for the bound of a reordered sum
        std::vector<float> wrow(size_t(c.k));
        std::vector<double> mag(size_t(c.m * c.n), 0.0);
        for (int64_t j = 0; j < c.n; ++j) {
            ref_table().dequantize_row(&w[size_t(j) * stride], t, wrow.data(), c.k);
            for (int64_t i = 0; i < c.m; ++i)
                for (int64_t l = 0; l < c.k; ++l)
                    mag[size_t(i * c.n + j)] += std::fabs(double(x[size_t(i * xs + l)]) * wrow[size_t(l)]);
        }
        for (const KernelTable* tab : tables) {
            std::vector<float> y_rm(size_t(c.m * ys), -1.0f), y_bl(size_t(c.m * ys), -1.0f);
            tab->matmul(x.data(), c.m, c.k, xs, w.data(), t, stride, c.n, y_rm.data(), ys, pool);
            matmul_blocked_with(*tab, x.data(), c.m, c.k, xs, b.view(t, c.n, c.k), y_bl.data(), ys, pool);
            // one block per row range; k-blocks of whole 16-element vectors on an optimised table,
            // decode-sized m (matmul_blocked_carry) or f32 (matmul_blocked_f32: one tile over all
            // k-blocks): the same sums in the same order
            const bool simd_whole = tab != &ref_table() && c.kb % 16 == 0;
            const bool one_block = c.kb >= c.k || (simd_whole && (c.m <= 4 || t == DType::F32));
            for (int64_t i = 0; i < c.m; ++i)
                for (int64_t j = 0; j < ys; ++j) {
                    const float a = y_rm[size_t(i * ys + j)], bl = y_bl[size_t(i * ys + j)];
                    if (j >= c.n || one_block) {  // same summation (or untouched stride padding): same bits
                        EXPECT_EQ(std::memcmp(&a, &bl, 4), 0) << tab->name << " " << dtype_name(t) << " m=" << c.m
                                                              << " n=" << c.n << " k=" << c.k << " y[" << i << "][" << j
                                                              << "] " << a << " vs " << bl;
                        continue;
                    }
                    const double tol = 2.0 * double(c.k) * FLT_EPSILON * mag[size_t(i * c.n + j)] + 1e-30;
                    EXPECT_NEAR(a, bl, tol) << tab->name << " " << dtype_name(t) << " m=" << c.m << " n=" << c.n
                                            << " k=" << c.k << " kb=" << c.kb << " y[" << i << "][" << j << "]";
                }
        }
    }
}

// m = 1 (GEMV), 3 (register tile tail), 17 (blocked GEMM, the packed q8 path on AVX-512);
// rows_per_block not a multiple of the register tiles; the last k-block narrower.
TEST(MatmulBlocked, FloatTypes) {
    for (DType t : {DType::F32, DType::F16, DType::BF16})
        check_type(t, {{1, 37, 67, 5, 24}, {3, 19, 131, 4, 64}, {17, 23, 45, 7, 16}, {1, 29, 67, 6, 67},
                       {5, 13, 99, 16, 128},
                       // decode reads every row of a range per k-block: k-blocks of an odd number of vectors
                       // (AVX-512: 3 and 1), a scalar tail in the last
                       {2, 13, 149, 5, 48}, {4, 9, 100, 3, 16}, {1, 21, 1030, 6, 512},
                       // prefill (m >= 64: gemm_float_packed.inc's packed GEMM, f32 on the PIM layout too):
                       // several of its k-blocks (512 steps at m = 64, 320 at m = 200, a tail of 13) over
                       // PIM k-blocks of whole vectors, and over k-blocks of 36 that cut its 8-step groups;
                       // ranges of 40 rows hold a whole 32-output AVX-512 panel; 530 rows: two row blocks
                       {64, 23, 600, 7, 64}, {200, 21, 333, 16, 48}, {66, 9, 300, 5, 36}, {72, 80, 200, 40, 64},
                       {530, 19, 200, 8, 64}});
}

TEST(MatmulBlocked, ThirtyTwoBlockTypes) {
    for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q5_0})
        check_type(t, {{1, 37, 32 * 7, 5, 64}, {3, 19, 32 * 5, 4, 96}, {17, 23, 32 * 9, 7, 32}, {1, 29, 32 * 3, 6, 96},
                       {2, 11, 32 * 4, 16, 256},
                       // the decode runs quads of 4 blocks (gemv_quad.inc): k-blocks of whole quads with
                       // a partial last quad, one quad per k-block, quads straddling k-blocks of 6 blocks,
                       // 2.5 k-blocks of 16, every m of 1..4
                       {1, 37, 32 * 26, 6, 256}, {4, 21, 32 * 20, 5, 128}, {2, 13, 32 * 22, 3, 192},
                       {3, 9, 32 * 40, 7, 512}, {4, 11, 32 * 9, 4, 96}});
}

TEST(MatmulBlocked, KQuants) {
    for (DType t : {DType::Q4_K, DType::Q6_K})
        check_type(t, {{1, 37, 256 * 3, 5, 256}, {3, 19, 256 * 2, 4, 256}, {17, 13, 256 * 3, 7, 512},
                       {1, 9, 256 * 2, 3, 512}});
}

// Split Q8_0: the quants of each block copied out as int8 (kelems bytes per row, row stride
// padded) and the f16 scales into a [n][k / 32 + spad] array. Against matmul of the Q8_0 rows on
// the same table: every table computes the same numbers (the scalar one dequantises and sums in
// f64 as ref::matmul; the SIMD ones run Q8_0's tile steps on the same values), so equal bits.
TEST(MatmulBlocked, SplitQ8_0IsQ8_0) {
    std::vector<const KernelTable*> tables = optimised_tables();
    tables.insert(tables.begin(), &ref_table());
    ThreadPool pool(2);
    uint32_t seed = 11;
    // m = 1, 2, 3 (decode tiles), 5 and 17 (prefill: the carried tiles for every m); rows per
    // block not a multiple of the register tiles; a narrower last k-block; one k-block
    // the decode's quads of 4 blocks (gemv_quad.inc): whole in a k-block, straddling two, a partial last
    const std::vector<Case> cases = {{1, 37, 32 * 7, 5, 64},  {2, 23, 32 * 9, 7, 96}, {3, 19, 32 * 5, 4, 32},
                                     {5, 13, 32 * 4, 16, 64}, {17, 29, 32 * 3, 6, 96}, {1, 9, 32 * 2, 20, 256},
                                     {1, 21, 32 * 26, 6, 256}, {4, 15, 32 * 20, 5, 128}, {2, 13, 32 * 22, 3, 192}};
    for (const Case& c : cases) {
        const size_t stride = row_bytes(DType::Q8_0, c.k) + 2;
        const auto w = make_weights(random_vec(size_t(c.n * c.k), seed++), c.n, c.k, DType::Q8_0, stride);
        const int64_t nb = c.k / 32, sstride = nb + 3, xs = c.k + 1, ys = c.n + 2;
        const auto x = random_vec(size_t(c.m * xs), seed++);
        std::vector<uint16_t> scales(size_t(c.n * sstride), 0x7C00);  // padding: +inf, must not be read
        Blocked b;
        std::vector<size_t> offs;
        for (int64_t r0 = 0; r0 < c.n; r0 += c.rows_per_block)
            for (int64_t k0 = 0; k0 < c.k; k0 += c.kb) {
                WeightBlock blk;
                blk.row0 = r0;
                blk.rows = std::min(c.rows_per_block, c.n - r0);
                blk.k0 = k0;
                blk.kelems = std::min(c.kb, c.k - k0);
                blk.row_stride_bytes = size_t(blk.kelems) + 5;
                offs.push_back(b.bytes.size());
                b.bytes.resize(b.bytes.size() + size_t(blk.rows) * blk.row_stride_bytes, 0x7F);
                for (int64_t r = 0; r < blk.rows; ++r)
                    for (int64_t l = 0; l < blk.kelems; ++l) {
                        BlockQ8_0 q;
                        std::memcpy(&q, &w[size_t(r0 + r) * stride + size_t((k0 + l) / 32) * sizeof q], sizeof q);
                        b.bytes[offs.back() + size_t(r) * blk.row_stride_bytes + size_t(l)] = uint8_t(q.qs[(k0 + l) % 32]);
                    }
                b.blocks.push_back(blk);
            }
        for (size_t i = 0; i < offs.size(); ++i) b.blocks[i].data = b.bytes.data() + offs[i];
        for (int64_t j = 0; j < c.n; ++j)
            for (int64_t q = 0; q < nb; ++q) {
                BlockQ8_0 blk;
                std::memcpy(&blk, &w[size_t(j) * stride + size_t(q) * sizeof blk], sizeof blk);
                scales[size_t(j * sstride + q)] = blk.d;
            }
        BlockedWeights view = b.view(DType::Q8_0, c.n, c.k);
        view.scales = scales.data();
        view.scale_stride = sstride;
        for (const KernelTable* tab : tables) {
            std::vector<float> y_rm(size_t(c.m * ys), -1.0f), y_bl(size_t(c.m * ys), -1.0f);
            tab->matmul(x.data(), c.m, c.k, xs, w.data(), DType::Q8_0, stride, c.n, y_rm.data(), ys, pool);
            matmul_blocked_with(*tab, x.data(), c.m, c.k, xs, view, y_bl.data(), ys, pool);
            for (size_t i = 0; i < y_rm.size(); ++i)
                EXPECT_EQ(std::memcmp(&y_rm[i], &y_bl[i], 4), 0)
                    << tab->name << " m=" << c.m << " n=" << c.n << " k=" << c.k << " kb=" << c.kb << " y["
                    << i / size_t(ys) << "][" << i % size_t(ys) << "] " << y_rm[i] << " vs " << y_bl[i];
        }
    }
}

// Scales with weights other than q8_0, or too few per row, are refused.
TEST(MatmulBlocked, SplitScalesNeedQ8_0) {
    const int64_t n = 4, k = 64;
    const auto w = make_weights(random_vec(size_t(n * k), 1), n, k, DType::F16, size_t(k) * 2);
    Blocked b = make_blocked(w, size_t(k) * 2, DType::F16, n, k, 2, 32, 0);
    std::vector<uint16_t> scales(size_t(n * 2), 0);
    std::vector<float> x(size_t(k), 1.0f), y(static_cast<size_t>(n));
    ThreadPool pool(1);
    BlockedWeights v = b.view(DType::F16, n, k);
    v.scales = scales.data();
    v.scale_stride = 2;
    try {
        matmul_blocked(x.data(), 1, k, k, v, y.data(), n, pool);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "matmul_blocked: block scales are given with f16 weights (allowed: q8_0 split into int8 "
                               "quants and scales)");
    }
    v.wtype = DType::Q8_0;
    v.scale_stride = 1;
    try {
        matmul_blocked(x.data(), 1, k, k, v, y.data(), n, pool);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "matmul_blocked: scale_stride = 1 is smaller than the 2 scales of a row");
    }
}

// The blocked driver quantises x once per k-block (act_reuse_token); the reuse must end with
// the call: a later matmul on the same x pointer with new contents sees the new values.
TEST(MatmulBlocked, ActivationReuseEndsWithTheCall) {
    const int64_t n = 9, k = 64;
    ThreadPool pool(1);
    for (DType t : {DType::Q8_0, DType::Q4_0}) {
        const auto w = make_weights(random_vec(size_t(n * k), 3), n, k, t, row_bytes(t, k));
        const Blocked b = make_blocked(w, row_bytes(t, k), t, n, k, 4, 64, 0);
        for (const KernelTable* tab : optimised_tables()) {
            std::vector<float> x = random_vec(size_t(k), 4), y(static_cast<size_t>(n)), y2(static_cast<size_t>(n)),
                               y_new(static_cast<size_t>(n));
            matmul_blocked_with(*tab, x.data(), 1, k, k, b.view(t, n, k), y.data(), n, pool);
            for (auto& v : x) v = -2.0f * v;  // same pointer, new contents
            tab->matmul(x.data(), 1, k, k, w.data(), t, row_bytes(t, k), n, y2.data(), n, pool);
            std::vector<float> fresh = x;  // a different pointer: certainly quantised anew
            tab->matmul(fresh.data(), 1, k, k, w.data(), t, row_bytes(t, k), n, y_new.data(), n, pool);
            EXPECT_EQ(y2, y_new) << tab->name << " " << dtype_name(t);
        }
    }
}

TEST(MatmulBlocked, BlocksThatDoNotTileAreRejected) {
    const int64_t n = 4, k = 64;
    const auto w = make_weights(random_vec(size_t(n * k), 1), n, k, DType::F16, size_t(k) * 2);
    Blocked b = make_blocked(w, size_t(k) * 2, DType::F16, n, k, 2, 32, 0);
    b.blocks[1].k0 = 16;  // the second k-block of the first row range starts too early
    std::vector<float> x(size_t(k), 1.0f), y(static_cast<size_t>(n));
    ThreadPool pool(1);
    try {
        matmul_blocked(x.data(), 1, k, k, b.view(DType::F16, n, k), y.data(), n, pool);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "matmul_blocked: block 1 (rows [0, 2) x k [16, 48)) does not continue the tiling at row "
                               "0, k 32 of [4][64] f16 (k-blocks in order, whole 1-element blocks, rows fitting their "
                               "stride)");
    }
    b = make_blocked(w, size_t(k) * 2, DType::F16, n, k, 2, 32, 0);
    b.blocks.pop_back();
    b.blocks.pop_back();
    try {
        matmul_blocked(x.data(), 1, k, k, b.view(DType::F16, n, k), y.data(), n, pool);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "matmul_blocked: the blocks cover 2 of the 4 rows of the matrix");
    }
    try {
        matmul_blocked(x.data(), 1, 32, k, b.view(DType::F16, n, k), y.data(), n, pool);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "matmul_blocked: the blocked matrix has k = 64, the call k = 32");
    }
}

}  // namespace
}  // namespace duet::kernels
