// Block size and prefetch depth (issue 9 item 2; docs/hardware-model.md section 7): the reorder
// cost of a whole 7B model's weights on the 910B load path, as layout::matrix_conversion_cost
// computes it for the timeline. Trends and closed forms, not figures.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "layout/conversion_cost.h"

using namespace duet;
using namespace duet::layout;

namespace {

struct ModelCost {
    double wall_ns = 0, setup_ns = 0, spill_ns = 0;
    int64_t blocks = 0;
};

// Llama-2-7B: per layer q, k, v, o (4096 x 4096), gate, up (11008 x 4096), down (4096 x 11008).
ModelCost llama7b_reorder(int block_kb, int prefetch_depth) {
    PimLayoutParams lp;
    lp.block_size_kb = block_kb;
    lp.prefetch_depth = prefetch_depth;
    const std::vector<std::pair<int64_t, int64_t>> mats = {{4096, 4096}, {4096, 4096},  {4096, 4096}, {4096, 4096},
                                                           {11008, 4096}, {11008, 4096}, {4096, 11008}};
    ModelCost m;
    for (auto [n, k] : mats) {
        const PimLayoutPlan plan = plan_pim_layout(n, k, DType::F16, lp, MemoryOrganisation{64, 8, 1024});
        const ConversionCost c =
            matrix_conversion_cost(ConversionKind::PIM_TO_NZ, ConversionEngine::LOAD_PATH, plan, NpuDataPath{});
        m.wall_ns += 32 * c.t_ns;
        m.setup_ns += 32 * c.setup_ns;
        m.spill_ns += 32 * c.spill_ns;
        m.blocks += 32 * plan.n_blocks;
    }
    return m;
}

}  // namespace

// Every block is one DMA transfer with a fixed set-up: halving the block doubles the set-up time
// exactly, and the set-up sums to blocks x 1820 B / 57.6 GB/s (core time).
TEST(Sensitivity, BlockSetUpDoublesWhenTheBlockHalves) {
    const ModelCost b16 = llama7b_reorder(16, 4), b8 = llama7b_reorder(8, 4), b4 = llama7b_reorder(4, 4);
    EXPECT_EQ(b8.blocks, 2 * b16.blocks);
    EXPECT_EQ(b4.blocks, 2 * b8.blocks);
    EXPECT_NEAR(b8.setup_ns / b16.setup_ns, 2.0, 1e-9);
    EXPECT_NEAR(b4.setup_ns / b8.setup_ns, 2.0, 1e-9);
    EXPECT_NEAR(b16.setup_ns, double(b16.blocks) * 1820 / 57.6, 1e-6 * b16.setup_ns);
}

// Wall time of the reorder falls with the block while the prefetched blocks fit in L1, then rises
// once (prefetch_depth + 1) blocks overflow the 256 KiB staging budget.
TEST(Sensitivity, ReorderTimeHasAnOptimumBetweenSetUpAndL1Spill) {
    double prev = 1e300;
    for (int kb : {1, 2, 4, 8, 16, 32}) {
        const ModelCost c = llama7b_reorder(kb, 4);
        EXPECT_LE(c.wall_ns, prev) << kb;
        EXPECT_EQ(c.spill_ns, 0) << kb;
        prev = c.wall_ns;
    }
    const ModelCost b32 = llama7b_reorder(32, 4), b64 = llama7b_reorder(64, 4), b128 = llama7b_reorder(128, 4);
    EXPECT_GT(b64.spill_ns, 0);              // 5 x 64 KiB > 256 KiB
    EXPECT_GT(b128.spill_ns, b64.spill_ns);  // hit rate 0.8 -> 0.4
    EXPECT_GT(b128.wall_ns, b32.wall_ns);
    // a shallower prefetch keeps 128 KiB blocks in L1
    EXPECT_EQ(llama7b_reorder(128, 1).spill_ns, 0);
    EXPECT_LT(llama7b_reorder(128, 1).wall_ns, b128.wall_ns);
}
