// The HBM2-PIM GEMV as SAITPublic/PIMSimulator's PIMKernel::executeGemv issues it, counted by
// hand: SB->HAB, one CRF-program burst, then per output tile and batch vector HAB->HAB_PIM,
// GRF_A fills of 8 bursts per 128 inputs, 64 MACs per input tile, the 16-lane partial sums of
// the tile read out (the host reduces them), HAB_PIM->HAB; finally HAB->SB.
#include <gtest/gtest.h>

#include "hw/memory_presets.h"
#include "hw/pim/pim_gemv.h"

using namespace duet;
using namespace duet::hw;
using namespace duet::hw::pim;

namespace {

GemvShape square(int64_t n, int batch) {
    GemvShape g;
    g.m = g.k = n;
    g.dtype = DType::F16;
    g.alignment_bits = 128;
    g.batch = batch;
    return g;
}

}  // namespace

TEST(PimKernelCosts, FimdramCommandCountsMatchPimSimulatorsKernel) {
    const PimSpec s = load_pim_preset("pim_hbm2_fimdram");
    ASSERT_EQ(s.timing.crf_bursts, 1);
    ASSERT_TRUE(s.timing.mode_switch_per_tile);
    for (int batch : {1, 2}) {
        SCOPED_TRACE(batch);
        // 1024 x 1024: 512 units, 2 rows each (one tile of <= 8), 8 input tiles of 128 fp16.
        const GemvResult r = simulate_gemv(s, square(1024, batch));
        const uint64_t ch = 64;
        EXPECT_EQ(r.n_mode, ch * (1 + 2 * uint64_t(batch) + 1));
        EXPECT_EQ(r.n_wr, ch * (1 + uint64_t(batch) * 8 * 8));     // CRF + GRF_A fills (8 bursts each)
        EXPECT_EQ(r.n_mac, ch * uint64_t(batch) * 2 * 64);          // 2 rows x 64 columns of 16 fp16
        EXPECT_EQ(r.n_rd, ch * uint64_t(batch) * 2 * 8 * 32 / 32);  // 2 rows x 8 units x 16 lanes x 2 B
        const GemvResult a = estimate_gemv(s, square(1024, batch));
        EXPECT_EQ(a.n_mode, r.n_mode);
        EXPECT_NEAR(a.t_ns / r.t_ns, 1.0, 0.03);
    }
}

// Fixed per-kernel costs weigh most on small GEMVs: the share of the time the units spend on
// MACs grows with the matrix, so the speedup over streaming does too.
TEST(PimKernelCosts, FixedCostsShrinkWithSize) {
    const PimSpec s = load_pim_preset("pim_hbm2_fimdram");
    double prev_util = 0, prev_speedup = 0;
    for (int64_t n : {1024, 2048, 4096}) {
        SCOPED_TRACE(n);
        const GemvResult r = estimate_gemv(s, square(n, 1));
        EXPECT_GT(r.unit_utilisation, prev_util);
        EXPECT_GT(r.speedup, prev_speedup);
        prev_util = r.unit_utilisation;
        prev_speedup = r.speedup;
    }
}
