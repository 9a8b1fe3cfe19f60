// PIM GEMV timing model: a closed-form case counted by hand, byte conservation, the access-width
// granule decision, batched GEMV, agreement of the two fidelities, the hw::Device interface and error messages.
#include <gtest/gtest.h>

#include "core/error.h"
#include "hw/memory_presets.h"
#include "hw/pim/pim_device.h"
#include "hw/pim/pim_gemv.h"

using namespace duet;
using namespace duet::hw;
using namespace duet::hw::pim;

namespace {

// One LPDDR5 channel, one unit per bank (16), 256-bit units, no refresh.
PimSpec tiny_spec() {
    PimSpec s;
    s.name = "tiny";
    s.mem = load_memory_preset("lpddr5");
    s.mem.org.channels_per_stack = 1;
    s.mem.org.stacks = 1;
    s.mem.timing.nREFI = 0;
    s.unit.banks_per_unit = 1;
    s.unit.access_bits = 256;
    s.unit.lanes_16bit = 16;
    s.unit.fp16 = true;
    s.unit.acc = AccPrecision::FP32;
    s.unit.reduce_in_unit = true;
    s.unit.input_buffer_bytes = 1024;
    s.unit.acc_registers = 1;
    s.timing.nCCD_AB = 4;
    s.timing.nACT_AB = s.mem.timing.nRC;
    s.timing.nMAC_RD_OUT = 3;
    s.timing.mode_switch_cycles = 10;
    return s;
}

GemvShape shape(int64_t m, int64_t k, int align, DType t = DType::F16) {
    GemvShape g;
    g.m = m;
    g.k = k;
    g.alignment_bits = align;
    g.dtype = t;
    return g;
}

}  // namespace

// One row of one bank per unit: MODE, MODE, 8 WR_GB, ACT_AB, 8 MAC_AB, 2 RD_OUT, PREA, MODE, MODE.
TEST(PimGemv, OneRowClosedFormCycleCount) {
    const PimSpec s = tiny_spec();
    const auto& t = s.mem.timing;
    const GemvShape g = shape(16, 128, 256);  // 16 units x 1 row, 8 columns of 16 fp16 each
    const int M = 10, sp = std::max(t.nBL, t.nCCD_S), ccd = 4;
    const int64_t wr_last = 2 * M + 7 * sp;
    const int64_t act = wr_last + 1;
    const int64_t mac1 = std::max<int64_t>(act + t.nRCD, wr_last + t.nCWL + t.nBL + t.nWTR_S);
    const int64_t mac_last = mac1 + 7 * ccd;
    const int64_t rd2 = mac_last + 3 + sp;  // 16 units x 4 B fp32 results = 2 bursts
    const int64_t prea = std::max<int64_t>({rd2 + 1, mac_last + t.nRTP, act + t.nRAS});
    const int64_t mode3 = std::max<int64_t>(prea + 1, prea + t.nRP);
    const int64_t end = std::max<int64_t>(mode3 + M + M, rd2 + t.nCL + t.nBL);
    for (const GemvResult& r : {simulate_gemv(s, g), estimate_gemv(s, g)}) {
        SCOPED_TRACE(r.fidelity);
        EXPECT_DOUBLE_EQ(r.t_ns, double(end) * t.tCK_ns);
        EXPECT_EQ(r.n_act, 1u);
        EXPECT_EQ(r.n_mac, 8u);
        EXPECT_EQ(r.n_wr, 8u);
        EXPECT_EQ(r.n_rd, 2u);
        EXPECT_EQ(r.n_mode, 4u);
        EXPECT_EQ(r.n_pre, 1u);
    }
}

TEST(PimGemv, OperandsAndBytesAreConserved) {
    const PimSpec s = load_pim_preset("pim_hbm2_fimdram");
    for (int align : {128, 256}) {
        const GemvShape g = shape(4096, 4096, align);
        const GemvPlan p = plan_gemv(s, g);
        const GemvResult r = simulate_gemv(s, g);
        // Every weight operand passes a lane exactly once.
        EXPECT_EQ(r.n_mac * uint64_t(p.units_per_channel) * uint64_t(p.elems_per_col), uint64_t(4096) * 4096);
        // The input vector reaches every channel once (GRF chunks), results leave once.
        // (plus per channel one CRF-program burst, 4 + 1 + 1 + 2 mode-change writes, 2 x 16 park reads).
        EXPECT_EQ(r.n_wr * 32, uint64_t(p.channels) * (4096 * 2 + 32 + 8 * 32));
        EXPECT_EQ(r.n_rd * 32, uint64_t(4096) * 16 * 2 + uint64_t(p.channels) * 32 * 32);  // 16 fp16 lane partials per row
        EXPECT_DOUBLE_EQ(r.external_bytes, double(r.n_wr + r.n_rd) * 32);
        EXPECT_DOUBLE_EQ(r.internal_bytes * p.lane_utilisation, 4096.0 * 4096 * 2);
    }
}

// Granule decision (docs/hardware-model.md 3.1): consecutive granules of one matrix row fill a
// column, so the granule only pads rows and shifts where a row segment starts in a column.
TEST(PimGemv, GranuleOnlyPadsRowsAndShiftsSegments) {
    for (const auto& name : pim_preset_names()) {
        SCOPED_TRACE(name);
        const PimSpec s = load_pim_preset(name);
        const DType t = s.unit.fp16 ? DType::F16 : DType::BF16;
        const GemvResult narrow = simulate_gemv(s, shape(4096, 4096, 128, t));
        const GemvResult wide = simulate_gemv(s, shape(4096, 4096, 256, t));
        EXPECT_DOUBLE_EQ(narrow.lane_utilisation, 1.0);
        EXPECT_EQ(narrow.n_mac, wide.n_mac);
        EXPECT_DOUBLE_EQ(narrow.t_ns, wide.t_ns);
    }
    // 4108 fp16 = 8216 B per row: 64-bit granules leave segments at offsets 0, 24, 16, 8 of a
    // 32-byte column, touching 257, 258, 258, 257 columns; 256-bit granules pad to 8224 B = 257.
    const PimSpec s = load_pim_preset("pim_hbm3_bank");
    EXPECT_DOUBLE_EQ(plan_gemv(s, shape(4096, 4108, 64)).cols_per_task_avg, 257.5);
    EXPECT_DOUBLE_EQ(plan_gemv(s, shape(4096, 4108, 256)).cols_per_task_avg, 257.0);
    EXPECT_DOUBLE_EQ(plan_gemv(s, shape(4096, 4108, 128)).cols_per_task_avg, 257.0);  // 8224 B, aligned
    EXPECT_NEAR(plan_gemv(s, shape(4096, 4108, 64)).lane_utilisation, 4108.0 / (257.5 * 16), 1e-12);
}

// B input vectors: the weights are re-read per vector (PIMSimulator executeGemv loops the
// batch inside each output tile; GeniePIM's N = 2 time is twice N = 1).
TEST(PimGemv, BatchedGemvOnEveryPreset) {
    for (const auto& name : pim_preset_names()) {
        const PimSpec s = load_pim_preset(name);
        const DType t = s.unit.fp16 ? DType::F16 : DType::BF16;
        GemvShape g = shape(2048, 2048, 128, t);
        const GemvResult one = estimate_gemv(s, g);
        double prev_t = 0;
        for (int b = 1; b <= 8; ++b) {
            SCOPED_TRACE(name + " batch " + std::to_string(b));
            g.batch = b;
            const GemvResult cmd = simulate_gemv(s, g), ana = estimate_gemv(s, g);
            // A run of a few tREFI can see one refresh per channel more at the command level than
            // the closed form's fixed point (section 2.3): allow that one refresh (tRFC + tRP +
            // tRCD) on top of the 3 %.
            const auto& mt = s.mem.timing;
            const double one_refresh_ns =
                cmd.n_ref != ana.n_ref ? (mt.nRFC + mt.nRP + mt.nRCD) * mt.tCK_ns : 0.0;
            EXPECT_LT(std::fabs(ana.t_ns - cmd.t_ns), 0.03 * cmd.t_ns + one_refresh_ns) << ana.t_ns << " vs " << cmd.t_ns;
            EXPECT_EQ(ana.n_mac, cmd.n_mac);
            EXPECT_EQ(ana.n_wr, cmd.n_wr);
            EXPECT_EQ(ana.n_rd, cmd.n_rd);
            EXPECT_EQ(cmd.n_mac, uint64_t(b) * one.n_mac);
            EXPECT_GT(cmd.t_ns, prev_t);
            EXPECT_DOUBLE_EQ(cmd.host_stream_ns, one.host_stream_ns);  // the host reads the weights once
            prev_t = cmd.t_ns;
        }
    }
}

TEST(PimGemv, DeviceAnswersSmallGemmAsBatchedGemv) {
    PimDevice d(load_pim_preset("pim_lpddr5x_bank"), 128);
    OpShape op;
    op.cls = OpClass::GEMM;
    op.n = 2048;
    op.k = 2048;
    op.weight_dtype = DType::I8;
    for (int64_t m : {2, 4, 8}) {
        op.m = m;
        ASSERT_TRUE(d.supports(op));
        EXPECT_DOUBLE_EQ(d.estimate(op).t_ns, d.estimate_gemv(2048, 2048, DType::I8, int(m)).t_ns);
    }
    op.m = PimDevice::kMaxBatch + 1;
    EXPECT_FALSE(d.supports(op));
}

TEST(PimGemv, AnalyticalAgreesWithCommandLevel) {
    struct Case {
        int64_t m, k;
        int align;
    };
    for (const auto& name : pim_preset_names()) {
        const PimSpec s = load_pim_preset(name);
        const DType t = s.unit.fp16 ? DType::F16 : DType::BF16;
        for (const Case c : {Case{4096, 4096, 128}, Case{4096, 4096, 256}, Case{1000, 3000, 128}, Case{7, 4096, 256},
                             Case{11008, 4096, 128}}) {
            SCOPED_TRACE(name + " " + std::to_string(c.m) + "x" + std::to_string(c.k));
            const GemvShape g = shape(c.m, c.k, c.align, t);
            const GemvResult cmd = simulate_gemv(s, g), ana = estimate_gemv(s, g);
            // A run of a few tREFI can see one refresh per channel more at the command level than
            // the closed form's fixed point (section 2.3): allow that one refresh (tRFC + tRP +
            // tRCD) on top of the 3 %.
            const auto& mt = s.mem.timing;
            const double one_refresh_ns =
                cmd.n_ref != ana.n_ref ? (mt.nRFC + mt.nRP + mt.nRCD) * mt.tCK_ns : 0.0;
            EXPECT_LT(std::fabs(ana.t_ns - cmd.t_ns), 0.03 * cmd.t_ns + one_refresh_ns) << ana.t_ns << " vs " << cmd.t_ns;
            EXPECT_EQ(ana.n_mac, cmd.n_mac);
            EXPECT_EQ(ana.n_wr, cmd.n_wr);
            EXPECT_EQ(ana.n_rd, cmd.n_rd);
        }
    }
}

TEST(PimGemv, FewerRowsThanUnitsSplitK) {
    const PimSpec s = load_pim_preset("pim_hbm3_bank");  // 32 channels x 16 units
    const GemvPlan p = plan_gemv(s, shape(8, 4096, 256));
    EXPECT_EQ(p.units, 512);
    EXPECT_EQ(p.k_split, 64);
    EXPECT_EQ(p.k_slice, 64);
    EXPECT_EQ(p.tasks_per_unit, 1);
}

TEST(PimGemv, BeatsTheHostOnlyWhenInternalBandwidthIsUsed) {
    const PimSpec s = load_pim_preset("pim_lpddr5x_bank");
    const GemvResult r = simulate_gemv(s, shape(4096, 4096, 256));
    EXPECT_GT(r.speedup, 1.0);
    EXPECT_DOUBLE_EQ(r.speedup, r.host_stream_ns / r.t_ns);
    EXPECT_GT(r.internal_gbps, s.mem.channel_peak_gbps() * 8);  // above the external peak
}

TEST(PimGemv, ErrorsNameTheParameter) {
    try {
        load_pim_preset("pim_magic");
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(),
                     "unknown PIM preset 'pim_magic' (known: pim_hbm2_fimdram, pim_gddr6_aim, pim_lpddr5x_bank, "
                     "pim_hbm3_bank, pim_cxl_aim)");
    }
    const PimSpec s = load_pim_preset("pim_hbm2_fimdram");
    try {
        plan_gemv(s, shape(64, 64, 128, DType::I8));
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "PIM preset 'pim_hbm2_fimdram' does not support dtype i8 (supported: fp16)");
    }
    try {
        plan_gemv(s, shape(64, 64, 96));
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "alignment 96 bits is not allowed (allowed: a power of two from 8 to 4096, e.g. 128 or 256)");
    }
}

TEST(PimDeviceTest, AnswersGemvAndDecodeAttention) {
    const PimDevice dev(load_pim_preset("pim_hbm3_bank"), 128);
    EXPECT_EQ(dev.name(), "pim:pim_hbm3_bank");
    OpShape op;
    op.cls = OpClass::GEMV;
    op.m = 1;
    op.n = 4096;
    op.k = 4096;
    EXPECT_TRUE(dev.supports(op));
    const Cost c = dev.estimate(op);
    EXPECT_DOUBLE_EQ(c.t_ns, dev.estimate_gemv(4096, 4096, DType::F16).t_ns);
    EXPECT_GT(c.t_ns, 0);
    op.cls = OpClass::GEMM;
    op.m = PimDevice::kMaxBatch + 1;  // larger GEMMs are not PIM operators (batched GEMV up to 8)
    EXPECT_FALSE(dev.supports(op));
    op.weight_dtype = DType::I8;
    op.cls = OpClass::GEMV;
    op.m = 1;
    EXPECT_FALSE(dev.supports(op));
    op.weight_dtype = DType::F16;
    op.cls = OpClass::ATTENTION;
    op.n = 2048;
    op.k = 128;
    op.n_head = 32;
    op.n_head_kv = 8;
    EXPECT_TRUE(dev.supports(op));
    EXPECT_NEAR(dev.estimate(op).t_ns,
                dev.estimate_gemv(32 * 2048, 128, DType::F16).t_ns + dev.estimate_gemv(32 * 128, 2048, DType::F16).t_ns,
                1e-6);
}

TEST(PimGemv, RefreshAndPowerPacingCostTime) {
    PimSpec s = load_pim_preset("pim_hbm3_bank");
    const GemvShape g = shape(4096, 4096, 256);
    const GemvResult base = simulate_gemv(s, g);
    EXPECT_GT(base.n_ref, 0u);
    PimSpec no_ref = s;
    no_ref.mem.timing.nREFI = 0;
    const GemvResult nr = simulate_gemv(no_ref, g);
    EXPECT_EQ(nr.n_ref, 0u);
    // Each refresh of a channel costs at least tRFC of that channel's time.
    EXPECT_GT(base.t_ns - nr.t_ns, double(base.n_ref / 32) * s.mem.timing.nRFC * s.mem.timing.tCK_ns * 0.9);
    // AttAcc's unconstrained pacing (nCCDAB 4 instead of 7): the time per activated row,
    // max(nRCD + (c-1) nCCD_AB + nRTP, nRAS) + nRP with c = 32 columns, sets the ratio.
    PimSpec npc = no_ref;
    npc.timing.nCCD_AB = 4;
    const GemvResult fast = simulate_gemv(npc, g);
    const auto& t = s.mem.timing;
    auto row = [&](int ccd) { return double(std::max(t.nRCD + 31 * ccd + t.nRTP, t.nRAS) + t.nRP); };
    EXPECT_EQ(plan_gemv(s, g).cols_per_act, 32);
    EXPECT_NEAR(nr.t_ns / fast.t_ns, row(7) / row(4), 0.03 * row(7) / row(4));
}

// [pim] precision = int8 (docs/hardware-model.md 3.5): Q8_0 weights run as int8 MACs where the
// preset has int8 lanes (GeniePIM's LPDDR5X: 32 per 256-bit column, half the MAC commands of
// fp16); on a preset without them they are unsupported unless widened, and widened they cost
// the preset's 16-bit GEMV of the same shape (fp16 on HBM2-PIM, bf16 on AiM).
TEST(PimDeviceTest, Int8NativeOrWidened) {
    OpShape op;
    op.cls = OpClass::GEMV;
    op.m = 1;
    op.n = 4096;
    op.k = 4096;
    op.weight_dtype = DType::Q8_0;
    const PimDevice genie(load_pim_preset("pim_lpddr5x_bank"), 128, 0, true);
    ASSERT_TRUE(genie.supports(op));
    EXPECT_EQ(genie.operand_dtype(DType::Q8_0), DType::I8);
    EXPECT_EQ(genie.quantised_operands(), "int8 MACs (32 lanes)");
    // Q8_0 carries its block scales (one f16 per 32 quants), plain int8 does not.
    GemvShape q8 = shape(4096, 4096, 128, DType::I8);
    q8.scale_block = 32;
    EXPECT_DOUBLE_EQ(genie.estimate(op).t_ns, pim::estimate_gemv(genie.spec(), q8).t_ns);
    EXPECT_GT(genie.estimate(op).t_ns, genie.estimate_gemv(4096, 4096, DType::I8).t_ns);
    EXPECT_LT(genie.estimate(op).t_ns, 0.7 * genie.estimate_gemv(4096, 4096, DType::F16).t_ns);
    const PimDevice hbm2(load_pim_preset("pim_hbm2_fimdram"), 128);
    EXPECT_FALSE(hbm2.supports(op));
    EXPECT_EQ(hbm2.quantised_operands(), "not supported (the preset has no int8 MACs)");
    const PimDevice hbm2_wide(load_pim_preset("pim_hbm2_fimdram"), 128, 0, true);
    ASSERT_TRUE(hbm2_wide.supports(op));
    EXPECT_EQ(hbm2_wide.operand_dtype(DType::Q4_K), DType::F16);
    GemvShape wide = shape(4096, 4096, 128, DType::F16);
    wide.scale_block = 32;
    EXPECT_DOUBLE_EQ(hbm2_wide.estimate(op).t_ns, pim::estimate_gemv(hbm2_wide.spec(), wide).t_ns);
    EXPECT_EQ(hbm2_wide.quantised_operands(),
              "widened to f16 MACs (the preset has no int8 MACs: costed as a 16-bit GEMV of the same shape)");
    const PimDevice aim(load_pim_preset("pim_gddr6_aim"), 128, 0, true);
    EXPECT_EQ(aim.operand_dtype(DType::Q8_0), DType::BF16);
    EXPECT_EQ(aim.operand_dtype(DType::F16), DType::F16);  // float weights are not touched
}

// Blocked formats (docs/hardware-model.md 3.5): each task's block scales (one f16 per 32 int8
// quants: 4096 / 32 x 2 B = 256 B = 8 columns of 256 bits) are loaded by column commands beside
// the quants, in both fidelities; the host baseline streams the scales too (34 B per 32 values).
TEST(PimGemv, BlockScalesCostColumnLoads) {
    const PimSpec s = load_pim_preset("pim_lpddr5x_bank");
    GemvShape plain = shape(4096, 4096, 256, DType::I8);
    GemvShape blocked = plain;
    blocked.scale_block = 32;
    const GemvPlan p = plan_gemv(s, blocked);
    ASSERT_EQ(p.k_split, 1);
    EXPECT_EQ(p.scale_cols_per_task, 8);
    EXPECT_EQ(plan_gemv(s, plain).scale_cols_per_task, 0);
    for (bool command : {true, false}) {
        SCOPED_TRACE(command ? "command" : "analytical");
        const GemvResult a = command ? simulate_gemv(s, plain) : estimate_gemv(s, plain);
        const GemvResult b = command ? simulate_gemv(s, blocked) : estimate_gemv(s, blocked);
        // Every row's 8 scale columns, issued all-bank to the channel's units at once.
        EXPECT_EQ((b.n_mac - a.n_mac) * uint64_t(p.units_per_channel), uint64_t(4096) * 8);
        EXPECT_GT(b.t_ns, a.t_ns);
        EXPECT_LT(b.t_ns, a.t_ns * (1.0 + 2 * 8.0 / 128.0));  // the columns, plus the rows they open
        EXPECT_NEAR(b.host_stream_ns / a.host_stream_ns, 34.0 / 32.0, 0.01);
    }
    blocked.scale_block = 24;
    try {
        plan_gemv(s, blocked);
        FAIL() << "scale_block 24 accepted";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "--scale-block 24 is not allowed (allowed: 0 for none, or a power of two from 8 to 4096, e.g. 32)");
    }
}
