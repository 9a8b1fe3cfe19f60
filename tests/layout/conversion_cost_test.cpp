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
    // 16 x 512 f16 = 16 KiB, rows of 1 KiB (burst aligned): 16384 B / (32 B * 1.8 GHz).
    const auto c = block_conversion_cost(ConversionKind::ND_TO_NZ, ConversionEngine::LOAD_PATH, 16, 512, DType::F16,
                                         path_910b(), 24);
    EXPECT_EQ(c.bytes_read, 16384u);
    EXPECT_EQ(c.bytes_written, 0u);
    EXPECT_EQ(c.segments, 16);
    EXPECT_NEAR(c.t_ns, 16384.0 / (32 * 1.8), 1e-9);
    EXPECT_STREQ(c.bound, "gm_read");
}

TEST(ConversionCost, SharedBandwidthBindsWhenEveryCoreConverts) {
    NpuDataPath p = path_910b();
    p.memory_bandwidth_gbps = 800;  // 24 cores share 800 GB/s: 33.3 GB/s each < 57.6
    const auto c = block_conversion_cost(ConversionKind::PIM_TO_NZ, ConversionEngine::LOAD_PATH, 16, 512, DType::F16, p,
                                         24, 88);
    EXPECT_EQ(c.bytes_read, 16384u + 88);
    EXPECT_EQ(c.index_bytes_read, 88u);
    EXPECT_NEAR(c.t_ns, (16384.0 + 88) / (800.0 / 24), 1e-6);
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
    EXPECT_NEAR(c.t_ns, (16384.0 + 88) / 57.6, 1e-6);
    EXPECT_STREQ(c.bound, "gm_write");
}

TEST(ConversionCost, MatrixSpreadsBlocksOverCores) {
    const PimLayoutPlan plan = plan_pim_layout(4096, 4096, DType::F16, {}, MemoryOrganisation{16, 16, 1024});
    const auto c = matrix_conversion_cost(ConversionKind::PIM_TO_NZ, ConversionEngine::LOAD_PATH, plan, path_910b());
    // 2048 blocks over 24 cores: the busiest core does 86 blocks of (16384 + 88) bytes each at
    // min(57.6 GB/s, 1600/24 GB/s) = 57.6 GB/s.
    EXPECT_EQ(c.bytes_read, 2048u * (16384 + 88));
    EXPECT_NEAR(c.t_ns, 86 * (16384.0 + 88) / 57.6, 1e-3);
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
