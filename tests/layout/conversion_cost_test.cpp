#include <gtest/gtest.h>

#include "core/error.h"
#include "layout/conversion_cost.h"

using namespace duet;
using namespace duet::layout;

namespace {
NpuDataPath path_910b() {
    NpuDataPath p;  // defaults: 1800 MHz, 24 cores, 32 B/cycle read/write, 256 B/cycle vector, 1600 GB/s
    return p;
}
}  // namespace

TEST(ConversionCost, LoadPathIsTheTransferAtTheCoreRate) {
    // 16 x 512 f16 = 16 KiB, rows of 1 KiB (burst aligned), one DMA transfer: (16384 B + 1820 B of
    // set-up) / (32 B * 1.8 GHz).
    const auto c = block_conversion_cost(ConversionKind::ND_TO_NZ, ConversionEngine::LOAD_PATH, 16, 512, DType::F16,
                                         path_910b(), 24);
    EXPECT_EQ(c.bytes_read, 16384u);
    EXPECT_EQ(c.bytes_written, 0u);
    EXPECT_EQ(c.segments, 16);
    EXPECT_EQ(c.dma_transfers, 1);
    EXPECT_NEAR(c.t_ns, (16384.0 + 1820) / (32 * 1.8), 1e-9);
    EXPECT_NEAR(c.setup_ns, 1820 / (32 * 1.8), 1e-9);
    EXPECT_STREQ(c.bound, "gm_read");
}

TEST(ConversionCost, SharedBandwidthBindsWhenEveryCoreConverts) {
    NpuDataPath p = path_910b();
    p.memory_bandwidth_gbps = 800;  // 24 cores share 800 GB/s: 33.3 GB/s each < 57.6
    const auto c = block_conversion_cost(ConversionKind::PIM_TO_NZ, ConversionEngine::LOAD_PATH, 16, 512, DType::F16, p,
                                         24, 88);
    EXPECT_EQ(c.bytes_read, 16384u + 88);
    EXPECT_EQ(c.index_bytes_read, 88u);
    EXPECT_NEAR(c.t_ns, (16384.0 + 88 + 1820) / (800.0 / 24), 1e-6);
    EXPECT_STREQ(c.bound, "memory_bandwidth");
}

TEST(ConversionCost, ShortRowsPayWholeBursts) {
    // 16 rows of 8 f16 = 16 B each: each row costs a 32-byte burst.
    const auto c = block_conversion_cost(ConversionKind::ND_TO_NZ, ConversionEngine::LOAD_PATH, 16, 8, DType::F16,
                                         path_910b());
    EXPECT_EQ(c.bytes_read, 16u * 32);
}

TEST(ConversionCost, VectorEngineTakesTheSlowestStage) {
    // NZ -> PIM of 16 x 512 f16: read 16 KiB (32 fractal columns of 512 B), write 16 KiB + index,
    // vector 16 KiB / 256 B per cycle. Read and write at 57.6 GB/s dominate.
    const auto c = block_conversion_cost(ConversionKind::NZ_TO_PIM, ConversionEngine::VECTOR, 16, 512, DType::F16,
                                         path_910b(), 1, 88);
    EXPECT_EQ(c.segments, 32);
    EXPECT_EQ(c.bytes_read, 16384u);
    EXPECT_EQ(c.bytes_written, 16384u + 88);
    EXPECT_EQ(c.dma_transfers, 2);
    EXPECT_NEAR(c.t_ns, (16384.0 + 88 + 1820) / 57.6, 1e-6);
    EXPECT_STREQ(c.bound, "gm_write");
}

TEST(ConversionCost, MatrixSpreadsBlocksOverCores) {
    const PimLayoutPlan plan = plan_pim_layout(4096, 4096, DType::F16, {}, MemoryOrganisation{16, 16, 1024});
    const auto c = matrix_conversion_cost(ConversionKind::PIM_TO_NZ, ConversionEngine::LOAD_PATH, plan, path_910b());
    // 2048 blocks over 24 cores: the busiest core does 86 blocks of (16384 + 88) bytes plus one
    // set-up each at min(57.6 GB/s, 1600/24 GB/s) = 57.6 GB/s; 5 blocks of 16 KiB fit in L1.
    EXPECT_EQ(c.bytes_read, 2048u * (16384 + 88));
    EXPECT_EQ(c.dma_transfers, 2048);
    EXPECT_DOUBLE_EQ(c.l1_hit_rate, 1.0);
    EXPECT_DOUBLE_EQ(c.spill_ns, 0.0);
    EXPECT_NEAR(c.t_ns, 86 * (16384.0 + 88 + 1820) / 57.6, 1e-3);
    EXPECT_NEAR(c.setup_ns, 2048 * 1820 / 57.6, 1e-3);
}

// Issue 9 item 2: the reorder overhead over an ideal transfer is set-up / block bytes, so it
// doubles each time the block halves (closed form), and it never grows with the block.
TEST(ConversionCost, ReorderOverheadDoublesWhenTheBlockHalves) {
    double prev = 0;
    for (int64_t kb : {64, 32, 16, 8, 4, 2, 1}) {
        SCOPED_TRACE(kb);
        // kb rows of 512 f16 (1 KiB rows): a block of kb KiB
        const auto c = block_conversion_cost(ConversionKind::PIM_TO_NZ, ConversionEngine::LOAD_PATH, kb, 512,
                                             DType::F16, path_910b(), 24);
        const double overhead = c.setup_ns / (c.t_ns - c.setup_ns);
        EXPECT_NEAR(overhead, 1820.0 / (kb * 1024.0), 1e-12);
        if (prev > 0) EXPECT_NEAR(overhead / prev, 2.0, 1e-12);
        prev = overhead;
    }
}

TEST(ConversionCost, L1StagingHitRateClosedForm) {
    const NpuDataPath p = path_910b();  // budget: 512 KiB L1 - 2 x (64 + 64) KiB = 256 KiB
    EXPECT_DOUBLE_EQ(l1_staging_hit_rate(16 << 10, 4, p), 1.0);   // 80 KiB
    EXPECT_DOUBLE_EQ(l1_staging_hit_rate(64 << 10, 3, p), 1.0);   // 256 KiB: just fits
    EXPECT_DOUBLE_EQ(l1_staging_hit_rate(64 << 10, 4, p), 256.0 / 320);
    EXPECT_DOUBLE_EQ(l1_staging_hit_rate(128 << 10, 4, p), 256.0 / 640);
    EXPECT_DOUBLE_EQ(l1_staging_hit_rate(128 << 10, 0, p), 1.0);
    // never rises with the block or the prefetch depth
    for (int64_t d : {0, 1, 2, 4, 8, 16}) {
        double prev = 2;
        for (uint64_t kb : {1, 4, 16, 64, 256, 1024}) {
            const double h = l1_staging_hit_rate(kb << 10, d, p);
            EXPECT_LE(h, prev) << d << " " << kb;
            EXPECT_GT(h, 0);
            prev = h;
        }
    }
    try {
        l1_staging_hit_rate(16 << 10, -1, p);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "conversion cost: prefetch_depth = -1 (allowed: 0 or more)");
    }
}

// What does not fit in L1 is written to L2 and read back: (1 - hit) x NZ bytes per block at the
// core's L2 write (86 B/cycle) and read (110 B/cycle) rates.
TEST(ConversionCost, BlocksThatDoNotFitInL1SpillToL2) {
    PimLayoutParams lp;
    lp.block_size_kb = 128;
    lp.prefetch_depth = 4;
    const PimLayoutPlan plan = plan_pim_layout(4096, 4096, DType::F16, lp, MemoryOrganisation{16, 16, 1024});
    const auto c = matrix_conversion_cost(ConversionKind::PIM_TO_NZ, ConversionEngine::LOAD_PATH, plan, path_910b());
    EXPECT_DOUBLE_EQ(c.l1_hit_rate, 0.4);
    const double per_byte_ns = 1 / (86 * 1.8) + 1 / (110 * 1.8);
    EXPECT_NEAR(c.spill_ns, 0.6 * 4096.0 * 4096 * 2 * per_byte_ns, 1e-3 * c.spill_ns);
    lp.prefetch_depth = 1;  // 2 x 128 KiB fit: no spill
    const auto fit = matrix_conversion_cost(ConversionKind::PIM_TO_NZ, ConversionEngine::LOAD_PATH,
                                            plan_pim_layout(4096, 4096, DType::F16, lp, MemoryOrganisation{16, 16, 1024}),
                                            path_910b());
    EXPECT_DOUBLE_EQ(fit.spill_ns, 0.0);
    EXPECT_LT(fit.t_ns, c.t_ns);
}

TEST(ConversionCost, LoadPathOnlyProducesNz) {
    try {
        block_conversion_cost(ConversionKind::NZ_TO_PIM, ConversionEngine::LOAD_PATH, 16, 16, DType::F16, path_910b());
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "conversion cost: nz_to_pim cannot run on the load path (the GM->L1 DMA only produces "
                               "NZ; use the vector engine)");
    }
}
