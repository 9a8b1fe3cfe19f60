// The HBM2-PIM GEMV as SAITPublic/PIMSimulator's PIMKernel::executeGemv issues it, counted by
// hand: park-in (one ACT + RD per bank to a reserved row), SB->HAB (4 reserved-row writes), one
// CRF-program write, then
// per output tile and batch vector HAB->HAB_PIM, GRF_A fills of 8 writes per 128 inputs to a
// reserved row (which closes and re-opens the weight row), 64 MACs per input tile whatever m
// (whole tiles of 8 rows per unit), the 16-lane partial sums of the tile read out (the host
// reduces them), HAB_PIM->HAB (one write each way); finally HAB->SB (2 writes) and park-out.
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
    ASSERT_EQ(s.timing.park_reads, 16);
    ASSERT_TRUE(s.timing.input_in_row);
    ASSERT_TRUE(s.timing.whole_tiles);
    ASSERT_EQ(s.timing.mode_writes_sb_ab, 4);
    ASSERT_EQ(s.timing.mode_writes_ab_pim, 1);
    ASSERT_EQ(s.timing.mode_writes_ab_sb, 2);
    for (int batch : {1, 2}) {
        SCOPED_TRACE(batch);
        // 1024 x 1024: one output tile of 8 rows on each of the 512 units (only 2 hold real
        // rows, the program runs all 8), 8 input tiles of 128 fp16.
        const GemvResult r = simulate_gemv(s, square(1024, batch));
        const uint64_t ch = 64, b = uint64_t(batch);
        EXPECT_EQ(r.n_mode, ch * (1 + 2 * b + 1));
        EXPECT_EQ(r.n_wr, ch * (1 + b * 8 * 8 + 4 + 2 * b + 2));  // CRF + GRF_A fills (8 writes each) + mode writes
        EXPECT_EQ(r.n_mac, ch * b * 8 * 64);                  // 8 rows x 64 columns of 16 fp16
        EXPECT_EQ(r.n_rd, ch * (2 * 16 + b * 8 * 8 * 32 / 32));  // park reads + 8 rows x 8 units x 16 lanes x 2 B
        if (batch == 1) {  // no refresh in the 1-vector run: park 32 + CRF row 1 + 8 x (GRF row + weight row) + mode 4+1+1+2
            EXPECT_EQ(r.n_act, ch * (32 + 1 + 8 * 2 + 8));
        }
        const GemvResult a = estimate_gemv(s, square(1024, batch));
        EXPECT_EQ(a.n_mode, r.n_mode);
        EXPECT_EQ(a.n_mac, r.n_mac);
        EXPECT_NEAR(a.t_ns / r.t_ns, 1.0, 0.03);
    }
}

// A matrix smaller than one output tile costs what a full tile costs: the program's loop
// counts do not depend on m (PIMSimulator: 512 x 512 and 1024 x 1024 differ only by k).
TEST(PimKernelCosts, FimdramTimeDependsOnTilesNotRows) {
    const PimSpec s = load_pim_preset("pim_hbm2_fimdram");
    GemvShape g = square(1024, 1);
    const double t_1024 = estimate_gemv(s, g).t_ns;
    g.m = 4096;  // exactly one tile of 8 rows on each of 512 units
    EXPECT_DOUBLE_EQ(estimate_gemv(s, g).t_ns, t_1024);
    g.m = 4097;  // a second tile
    EXPECT_GT(estimate_gemv(s, g).t_ns, 1.5 * t_1024);
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
