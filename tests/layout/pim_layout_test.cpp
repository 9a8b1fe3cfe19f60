// Property and closed-form tests of the PIM layout and its block index.
#include <gtest/gtest.h>

#include <numeric>

#include <random>
#include <set>
#include <tuple>

#include "core/error.h"
#include "layout/nz_format.h"
#include "layout/pim_layout.h"
#include "layout/pim_to_nz.h"

using namespace duet;
using namespace duet::layout;

namespace {

std::vector<uint8_t> random_nonzero_bytes(size_t n, std::mt19937& rng) {
    std::uniform_int_distribution<int> d(1, 255);  // never 0, so zero bytes in the base are padding
    std::vector<uint8_t> v(n);
    for (auto& b : v) b = uint8_t(d(rng));
    return v;
}

struct Case {
    int64_t n_rows, k;
    DType dtype;
    PimLayoutParams params;
    MemoryOrganisation org;
};

Case random_case(std::mt19937& rng) {
    const DType dtypes[] = {DType::F16, DType::BF16, DType::I8, DType::F32};
    Case c;
    c.n_rows = std::uniform_int_distribution<int64_t>(1, 70)(rng);
    c.k = std::uniform_int_distribution<int64_t>(1, 700)(rng);  // mostly not multiples of 16 or of a granule
    c.dtype = dtypes[rng() % 4];
    c.params.alignment_bits = rng() % 2 ? 128 : 256;
    c.params.block_size_kb = int(1 + rng() % 4);
    c.params.index_granularity = int(1 + rng() % 80);
    c.params.index_ratio_limit = 1.0;
    const int64_t row_bytes[] = {256, 512, 1024, 2048};
    c.org.channels = int(1 + rng() % 5);
    c.org.banks = int(1 + rng() % 6);
    c.org.row_bytes = row_bytes[rng() % 4];
    c.org.base_address_bytes = uint64_t(rng() % 7) * uint64_t(c.org.row_bytes);
    return c;
}

int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

}  // namespace

TEST(PimLayout, RoundTripIsExactAndPaddingIsCountedExactly) {
    std::mt19937 rng(1234);
    for (int iter = 0; iter < 300; ++iter) {
        const Case c = random_case(rng);
        const PimLayoutPlan p = plan_pim_layout(c.n_rows, c.k, c.dtype, c.params, c.org, false);
        const int e = c.dtype == DType::I8 ? 1 : c.dtype == DType::F32 ? 4 : 2;
        const int64_t ge = c.params.alignment_bits / 8 / e;
        // Independent expectations.
        ASSERT_EQ(p.k_pad, round_up(c.k, ge));
        ASSERT_EQ(p.weight_bytes, uint64_t(c.n_rows * c.k * e));
        ASSERT_EQ(p.padding_bytes, uint64_t(c.n_rows * (round_up(c.k, ge) - c.k) * e));
        const auto nd = random_nonzero_bytes(p.weight_bytes, rng);
        const auto base = to_pim(nd.data(), p);
        ASSERT_EQ(base.size(), p.base_bytes);
        uint64_t zeros = 0;
        for (uint8_t b : base) zeros += b == 0;
        EXPECT_EQ(zeros, p.padding_bytes) << "iter " << iter;
        EXPECT_EQ(from_pim(base.data(), base.size(), p), nd) << "iter " << iter;
    }
}

// Quantised rows are laid out as bytes and every k-block holds whole ggml blocks (rule 0), so a
// kernel can run the quantised dot product on each block in place; the round trip stays exact.
TEST(PimLayout, QuantisedRowsKeepWholeBlocks) {
    std::mt19937 rng(11);
    for (DType dt : {DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q4_K, DType::Q6_K}) {
        const DTypeInfo& q = dtype_info(dt);
        for (int64_t nb : {1, 3, 9}) {
            PimLayoutParams prm;
            prm.block_size_kb = 1;
            prm.index_ratio_limit = 1.0;
            const MemoryOrganisation org{3, 2, 256};
            const int64_t n = 7, k = nb * q.block_elems;
            const PimLayoutPlan p = plan_pim_layout(n, k, dt, prm, org);
            EXPECT_EQ(p.k, nb * q.block_bytes) << dtype_name(dt);
            EXPECT_EQ(p.k_dtype_elems, k);
            EXPECT_EQ(p.elem_bytes, 1);
            EXPECT_EQ(p.atom_elems, q.block_bytes);
            EXPECT_EQ(p.kb_elems % p.granule_elems, 0);
            // every k-block but the last (which ends in the row's granule padding) is whole blocks
            for (int64_t kb = 0; kb < p.n_k_blocks; ++kb)
                EXPECT_EQ(std::min(p.block_kelems(kb), p.k - p.block_k0(kb)) % q.block_bytes, 0) << dtype_name(dt);
            // below 1 KiB of row bytes a k-block is the largest multiple of lcm(16, block) in 256 B, or one lcm
            const int64_t step = std::lcm(int64_t(16), int64_t(q.block_bytes));
            EXPECT_EQ(p.kb_elems, std::min(p.k_pad, std::max(step, 256 / step * step)));
            std::vector<uint8_t> nd(size_t(n * p.k));
            for (auto& b : nd) b = uint8_t(rng());
            const auto base = to_pim(nd.data(), p);
            EXPECT_EQ(from_pim(base.data(), base.size(), p), nd);
        }
    }
}

TEST(PimLayout, EveryGranuleHasItsOwnDramSlot) {
    std::mt19937 rng(99);
    for (int iter = 0; iter < 100; ++iter) {
        const Case c = random_case(rng);
        const PimLayoutPlan p = plan_pim_layout(c.n_rows, c.k, c.dtype, c.params, c.org, false);
        std::set<std::tuple<int, int, int64_t, int64_t>> seen;
        for (int64_t r = 0; r < p.n_rows; ++r)
            for (int64_t g = 0; g < p.granules_per_row; ++g) {
                const DramSlot s = slot_of_granule(p, r, g);
                ASSERT_GE(s.channel, 0);
                ASSERT_LT(s.channel, c.org.channels);
                ASSERT_GE(s.bank, 0);
                ASSERT_LT(s.bank, c.org.banks);
                ASSERT_LT(s.row - int64_t(c.org.base_address_bytes / uint64_t(c.org.row_bytes)) /
                              (c.org.channels * c.org.banks),
                          p.dram_rows_per_bank);
                ASSERT_EQ(s.column_bytes % p.granule_bytes, 0);  // a granule never straddles a DRAM row
                ASSERT_LE(s.column_bytes + p.granule_bytes, c.org.row_bytes);
                ASSERT_TRUE(seen.insert({s.channel, s.bank, s.row, s.column_bytes}).second)
                    << "collision at row " << r << " granule " << g;
                ASSERT_EQ(channel_of(p, r, g), s.channel);
                ASSERT_EQ(bank_of(p, r, g), s.bank);
            }
        // Granules fill the base densely: count * granule size is the base.
        EXPECT_EQ(seen.size() * uint64_t(p.granule_bytes), p.base_bytes);
    }
}

TEST(PimLayout, InverseMapsAgree) {
    std::mt19937 rng(5);
    for (int iter = 0; iter < 100; ++iter) {
        const Case c = random_case(rng);
        const PimLayoutPlan p = plan_pim_layout(c.n_rows, c.k, c.dtype, c.params, c.org, false);
        // Every element offset maps back to its (row, col), padding flagged exactly when col >= k.
        for (int64_t r = 0; r < p.n_rows; ++r)
            for (int64_t col = 0; col < p.k_pad; ++col) {
                const PimElement el = element_of_offset(p, pim_offset(p, r, col));
                ASSERT_EQ(el.row, r);
                ASSERT_EQ(el.col, col);
                ASSERT_EQ(el.padding, col >= c.k);
            }
        // slot_base_offset inverts slot_of_offset at every DRAM-row start inside the base.
        for (uint64_t off = 0; off < p.base_bytes; off += uint64_t(c.org.row_bytes)) {  // base is row aligned
            const DramSlot s = slot_of_offset(p, off);
            ASSERT_EQ(s.column_bytes, 0);
            ASSERT_EQ(slot_base_offset(p, s.channel, s.bank, s.row), off);
        }
    }
}

TEST(PimLayout, InterleaveGoesOverChannelsThenBanks) {
    // 4 channels x 2 banks, 1 KiB rows, f16, k = 512 (one DRAM row per matrix row and block).
    PimLayoutParams prm;
    const MemoryOrganisation org{4, 2, 1024};
    const PimLayoutPlan p = plan_pim_layout(64, 512, DType::F16, prm, org);
    EXPECT_EQ(p.kb_elems, 512);
    EXPECT_EQ(p.rows_per_block, 16);
    // Matrix row r occupies slot r: channel r % 4, bank (r / 4) % 2, DRAM row r / 8.
    for (int64_t r = 0; r < 64; ++r) {
        const DramSlot s = slot_of_granule(p, r, 5);
        EXPECT_EQ(s.channel, r % 4);
        EXPECT_EQ(s.bank, (r / 4) % 2);
        EXPECT_EQ(s.row, r / 8);
        EXPECT_EQ(s.column_bytes, 5 * 16);
    }
    EXPECT_EQ(p.dram_rows_per_bank, 8);
}

TEST(PimLayout, TwoMatricesShareTheChannelsWithoutOverlap) {
    // A second matrix placed right after the first (rounded up to a DRAM row) uses other slots.
    MemoryOrganisation org{4, 4, 1024};
    const PimLayoutPlan a = plan_pim_layout(100, 300, DType::F16, {}, org, false);
    org.base_address_bytes = (a.base_bytes + 1023) / 1024 * 1024;
    const PimLayoutPlan b = plan_pim_layout(50, 200, DType::I8, {}, org, false);
    std::set<std::tuple<int, int, int64_t, int64_t>> seen;
    for (const PimLayoutPlan* p : {&a, &b})
        for (int64_t r = 0; r < p->n_rows; ++r)
            for (int64_t g = 0; g < p->granules_per_row; ++g) {
                const DramSlot s = slot_of_granule(*p, r, g);
                ASSERT_TRUE(seen.insert({s.channel, s.bank, s.row, s.column_bytes}).second);
            }
    // The first granule of b opens the slot right after a's last one.
    const DramSlot first = slot_of_granule(b, 0, 0);
    EXPECT_EQ(first.column_bytes, 0);
    EXPECT_EQ(slot_base_offset(b, first.channel, first.bank, first.row), 0u);
}

TEST(PimLayout, IndexReadsEveryTile) {
    std::mt19937 rng(7);
    for (int iter = 0; iter < 120; ++iter) {
        const Case c = random_case(rng);
        const PimLayoutPlan p = plan_pim_layout(c.n_rows, c.k, c.dtype, c.params, c.org, false);
        const PimBlockIndex idx = build_block_index(p);
        EXPECT_EQ(idx.bytes(), p.index_bytes);
        const auto nd = random_nonzero_bytes(p.weight_bytes, rng);
        const auto base = to_pim(nd.data(), p);
        const int e = p.elem_bytes;
        // The whole matrix as one tile equals ND.
        std::vector<uint8_t> all(p.weight_bytes);
        read_tile_via_index(base.data(), base.size(), idx, 0, p.n_rows, 0, p.k, all.data());
        ASSERT_EQ(all, nd) << "iter " << iter;
        for (int t = 0; t < 10; ++t) {
            const int64_t r0 = rng() % p.n_rows, c0 = rng() % p.k;
            const int64_t rows = 1 + rng() % (p.n_rows - r0), cols = 1 + rng() % (p.k - c0);
            std::vector<uint8_t> tile(size_t(rows * cols * e));
            read_tile_via_index(base.data(), base.size(), idx, r0, rows, c0, cols, tile.data());
            for (int64_t i = 0; i < rows; ++i)
                ASSERT_EQ(0, std::memcmp(tile.data() + i * cols * e, nd.data() + ((r0 + i) * p.k + c0) * e, size_t(cols * e)))
                    << "iter " << iter << " tile row " << i;
        }
    }
}

TEST(PimLayout, TileSegmentsFollowBlocks) {
    // f16, k = 1024 with 1 KiB rows: two k-blocks of 512; a full-width tile of 3 rows reads 6 runs.
    const PimLayoutPlan p = plan_pim_layout(40, 1024, DType::F16, {}, MemoryOrganisation{2, 2, 1024});
    const auto idx = build_block_index(p);
    std::vector<uint8_t> nd(p.weight_bytes, 1), base = to_pim(nd.data(), p), tile(3 * 1024 * 2);
    EXPECT_EQ(read_tile_via_index(base.data(), base.size(), idx, 5, 3, 0, 1024, tile.data()), 6);
    EXPECT_EQ(read_tile_via_index(base.data(), base.size(), idx, 5, 3, 100, 200, tile.data()), 3);
}

TEST(PimLayout, DefaultIndexSizeClosedForm) {
    // 4096 x 4096 f16, 16 KiB blocks, 1 KiB rows: 512-element k-blocks, 16 rows per block,
    // 256 x 8 blocks of 1024 granules; 16 anchors each: (24 + 16 * 4) bytes per 16 KiB.
    const PimLayoutPlan p = plan_pim_layout(4096, 4096, DType::F16, {}, MemoryOrganisation{16, 16, 1024});
    EXPECT_EQ(p.n_blocks, 2048);
    EXPECT_EQ(p.index_bytes, 2048u * (24 + 64));
    EXPECT_DOUBLE_EQ(p.index_ratio, 2048.0 * 88 / (4096.0 * 4096 * 2));
    EXPECT_EQ(p.padding_bytes, 0u);
    EXPECT_EQ(p.dram_rows_per_bank, 4096 * 8 / 256);
}

TEST(PimLayout, IndexRatioErrorNamesTheKnobs) {
    PimLayoutParams prm;
    prm.index_granularity = 1;  // (24 + 1024 * 4) / 16384 = 25.1 %
    try {
        plan_pim_layout(4096, 4096, DType::F16, prm, MemoryOrganisation{16, 16, 1024});
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(),
                     "block index is 25.1 % of the weights, above [reorder] index_ratio_limit = 0.05: raise "
                     "[memory] index_granularity (now 1) or [reorder] block_size_kb (now 16)");
    }
    // Raising the knob the message names fixes it.
    prm.index_granularity = 64;
    EXPECT_NO_THROW(plan_pim_layout(4096, 4096, DType::F16, prm, MemoryOrganisation{16, 16, 1024}));
    // check_ratio = false leaves the decision to a model-wide check.
    prm.index_granularity = 1;
    EXPECT_NO_THROW(plan_pim_layout(4096, 4096, DType::F16, prm, MemoryOrganisation{16, 16, 1024}, false));
}

TEST(PimLayout, BadParametersNameTheKey) {
    PimLayoutParams prm;
    prm.alignment_bits = 64;
    EXPECT_THROW(
        {
            try {
                plan_pim_layout(8, 8, DType::F16, prm, {});
            } catch (const Error& e) {
                EXPECT_STREQ(e.what(), "[pim] alignment = 64 is not allowed (allowed: 128, 256)");
                throw;
            }
        },
        Error);
    try {
        plan_pim_layout(8, 8, DType::I32, {}, {});
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "PIM layout: dtype i32 is not supported by the PIM layout (allowed: f32, f16, bf16, i8, "
                               "q8_0, q4_0, q5_0, q4_k, q6_k)");
    }
    try {
        plan_pim_layout(8, 48, DType::Q8_0, {}, {});
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "PIM layout: k = 48 is not a multiple of the q8_0 block of 32 elements");
    }
    try {
        plan_pim_layout(8, 8, DType::F16, {}, MemoryOrganisation{1, 1, 24});
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "memory organisation: row_bytes = 24 is not a positive multiple of the 16-byte "
                               "granule ([pim] alignment = 128)");
    }
    try {
        plan_pim_layout(8, 8, DType::F16, {}, {});
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "PIM layout: matrix [8][8] f16 (128 bytes) is too small for its own block index (at "
                               "least 28 bytes, above [reorder] index_ratio_limit = 0.05); check the limit on the "
                               "model's totals instead");
    }
    const PimLayoutPlan p = plan_pim_layout(8, 8, DType::F16, {}, {}, /*check_ratio=*/false);
    std::vector<uint8_t> base(p.base_bytes), out(4);
    EXPECT_THROW(read_tile_via_index(base.data(), base.size(), build_block_index(p), 7, 2, 0, 1, out.data()), Error);
    EXPECT_THROW(from_pim(base.data(), base.size() - 1, p), Error);
}

TEST(PimLayout, TilesGatheredStraightIntoNzMatchTheNdTile) {
    // The NPU prefill path: PIM base -> index gather -> FRACTAL_NZ equals ND tile -> nd_to_nz.
    std::mt19937 rng(11);
    for (int iter = 0; iter < 80; ++iter) {
        const Case c = random_case(rng);
        const PimLayoutPlan p = plan_pim_layout(c.n_rows, c.k, c.dtype, c.params, c.org, false);
        const PimBlockIndex idx = build_block_index(p);
        const auto nd = random_nonzero_bytes(p.weight_bytes, rng);
        const auto base = to_pim(nd.data(), p);
        const int e = p.elem_bytes;
        for (int t = 0; t < 5; ++t) {
            const int64_t r0 = rng() % p.n_rows, c0 = rng() % p.k;
            const int64_t rows = 1 + rng() % (p.n_rows - r0), cols = 1 + rng() % (p.k - c0);
            std::vector<uint8_t> tile(size_t(rows * cols * e));
            for (int64_t i = 0; i < rows; ++i)
                std::memcpy(tile.data() + i * cols * e, nd.data() + ((r0 + i) * p.k + c0) * e, size_t(cols * e));
            const auto expect = nd_to_nz(tile.data(), nz_shape(rows, cols, c.dtype));
            ASSERT_EQ(pim_tile_to_nz(base.data(), base.size(), idx, c.dtype, r0, rows, c0, cols), expect)
                << "iter " << iter << " tile " << t;
        }
    }
    const PimLayoutPlan p = plan_pim_layout(4, 40, DType::F16, {}, {}, false);
    std::vector<uint8_t> base(p.base_bytes);
    try {
        pim_tile_to_nz(base.data(), base.size(), build_block_index(p), DType::I8, 0, 1, 0, 1);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "pim_tile_to_nz: dtype i8 has 1-byte elements but the index was built for 2-byte "
                               "elements");
    }
}
