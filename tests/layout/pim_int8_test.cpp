// The int8 PIM layout of Q8_0 ([pim] precision = int8): quants as an int8 matrix whose k-blocks
// are whole 32-quant scale blocks, scales beside it; the round trip Q8_0 -> split -> PIM base ->
// back is the identity.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/error.h"
#include "core/quant.h"
#include "layout/pim_int8.h"
#include "layout/pim_layout.h"

using namespace duet;
using namespace duet::layout;

TEST(PimInt8, SplitLayoutAndJoinRoundTrip) {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> d(-3, 3);
    for (int iter = 0; iter < 60; ++iter) {
        const int64_t n = 1 + rng() % 40, nb = 1 + rng() % 40, k = nb * 32;
        std::vector<float> wf(size_t(n * k));
        for (auto& v : wf) v = d(rng);
        const size_t stride = row_bytes(DType::Q8_0, k) + rng() % 5;
        std::vector<uint8_t> rows(size_t(n) * stride, 0xAB);
        // Quantised into an aligned row, then copied: the odd strides put a block's f16 scale at an
        // odd address, which split_q8_0 must read bytewise but BlockQ8_0 cannot be written through.
        std::vector<BlockQ8_0> row(static_cast<size_t>(nb));
        for (int64_t r = 0; r < n; ++r) {
            quant::quantize_row(&wf[size_t(r * k)], DType::Q8_0, row.data(), k);
            std::memcpy(&rows[size_t(r) * stride], row.data(), row_bytes(DType::Q8_0, k));
        }
        PimLayoutParams prm;
        prm.alignment_bits = rng() % 2 ? 128 : 256;
        prm.block_size_kb = int(1 + rng() % 4);
        // DRAM rows (x2 at 256-bit granules): 16 and 48 B are not whole 32-quant blocks, 96 B is three
        const int64_t row_choices[] = {16, 48, 96, 1024, 2048};
        const MemoryOrganisation org{int(1 + rng() % 4), int(1 + rng() % 4), row_choices[rng() % 5] * (prm.alignment_bits / 128)};
        const PimLayoutPlan p = plan_pim_int8(n, k, prm, org, false);
        EXPECT_EQ(p.dtype, DType::I8);
        EXPECT_EQ(p.k, k);
        EXPECT_EQ(p.elem_bytes, 1);
        EXPECT_EQ(p.atom_elems, 32);
        for (int64_t kb = 0; kb < p.n_k_blocks; ++kb) EXPECT_EQ(p.block_kelems(kb) % 32, 0) << "iter " << iter;
        const Int8Split s = split_q8_0(rows.data(), stride, n, k);
        ASSERT_EQ(s.quants.size(), size_t(n * k));
        ASSERT_EQ(s.scales.size(), size_t(n * nb));
        // independent check of one element: quant (r, c) and scale (r, c / 32) from the ggml block
        const int64_t r = n / 2, c = k - 1;
        BlockQ8_0 blk;
        std::memcpy(&blk, &rows[size_t(r) * stride + size_t(c / 32) * sizeof blk], sizeof blk);
        EXPECT_EQ(s.quants[size_t(r * k + c)], blk.qs[c % 32]);
        EXPECT_EQ(s.scales[size_t(r * nb + c / 32)], blk.d);
        const auto base = to_pim(s.quants.data(), p);
        EXPECT_EQ(base.size(), size_t(n * k));  // k is whole granules: no padding
        const auto nd = from_pim(base.data(), base.size(), p);
        const auto back = join_q8_0(reinterpret_cast<const int8_t*>(nd.data()), s.scales.data(), n, k);
        for (int64_t q = 0; q < n; ++q)
            ASSERT_EQ(std::memcmp(&back[size_t(q) * row_bytes(DType::Q8_0, k)], &rows[size_t(q) * stride],
                                  row_bytes(DType::Q8_0, k)),
                      0)
                << "iter " << iter << " row " << q;
    }
}

TEST(PimInt8, KMustBeWholeScaleBlocks) {
    try {
        plan_pim_int8(4, 48, PimLayoutParams{}, MemoryOrganisation{}, false);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "PIM layout: k = 48 is not a multiple of the 32-quant scale block of an int8 (q8_0) matrix");
    }
    std::vector<uint8_t> rows(34);
    EXPECT_THROW(split_q8_0(rows.data(), 34, 1, 16), Error);
}
