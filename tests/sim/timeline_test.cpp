// Every config knob moves the report in the direction physics says; closed forms where the
// fake devices allow them.
#include <gtest/gtest.h>

#include "core/error.h"
#include "fake_hw.h"
#include "sim/op_shape.h"
#include "sim/report.h"

using namespace duet;
using namespace duet::sim;

namespace {

struct Case {
    fake::Rig rig;
    ModelShape shape = fake::small_shape();
    int64_t seq = 64, gen = 8;
    int32_t batch = 1;
    RunReport run(const RunOptions& o) {
        Plan p = plan_generation(shape, seq, gen, batch);
        return simulate_run(shape, p, seq + gen, batch, o, rig.hw());
    }
};

RunOptions coop() {
    RunOptions o;
    o.placement.policy = Policy::NPU_PIM_COOP;
    return o;
}
RunOptions baseline() {
    RunOptions o;
    o.placement.policy = Policy::NPU_ONLY;
    return o;
}

}  // namespace

TEST(Timeline, BaselineIsTheSumOfNpuEstimates) {
    Case c;
    RunReport r = c.run(baseline());
    Plan p = plan_generation(c.shape, c.seq, c.gen, 1);
    double prefill = 0, decode = 0;
    for (const auto& rec : p.ops) (rec.phase == Phase::PREFILL ? prefill : decode) += c.rig.npu.estimate(to_op_shape(rec)).t_ns;
    EXPECT_NEAR(r.timeline.ttft_ns, prefill, 1e-6 * prefill);
    EXPECT_EQ(r.timeline.tbt_ns.size(), size_t(c.gen - 1));
    EXPECT_NEAR(r.tbt_mean_ns * double(c.gen - 1), decode, 1e-6 * decode);
    EXPECT_EQ(r.timeline.conversions, 0);
    EXPECT_EQ(r.timeline.decode.pim().ops, 0);
}

TEST(Timeline, CoopMovesDecodeGemvsToPimAndCutsTbt) {
    Case c;
    RunReport b = c.run(baseline()), t = c.run(coop());
    EXPECT_GT(t.timeline.decode.pim().ops, 0);
    EXPECT_EQ(t.timeline.prefill.pim().ops, 0);  // prefill GEMMs stay on the NPU
    EXPECT_LT(t.tbt_mean_ns, b.tbt_mean_ns);
    // PIM reads weights at 4x the external bandwidth: TBT ratio cannot go below 1/4
    EXPECT_GT(t.tbt_mean_ns / b.tbt_mean_ns, 0.25);
}

TEST(Timeline, ConversionHiddenWhenFasterThanCompute) {
    Case c;
    c.seq = 2048;
    c.gen = 2;
    c.rig.layout.conv_bytes_per_ns = 1e6;  // effectively free
    RunReport b = c.run(baseline()), t = c.run(coop());
    EXPECT_NEAR(t.timeline.conversion_exposed_ns, 0, 1.0);
    EXPECT_NEAR(t.timeline.prefill_ns, b.timeline.prefill_ns, 1.0);
    EXPECT_NEAR(t.timeline.ttft_ns - b.timeline.ttft_ns, c.rig.hw().pointer_switch_ns, 1.0);
}

TEST(Timeline, ConversionVisibleWhenSlowerThanCompute) {
    Case c;
    c.seq = 1;  // GEMV-sized prefill: conversion at 100 B/ns is far slower than the 1.6 TB/s load
    c.gen = 1;
    c.rig.layout.conv_bytes_per_ns = 100;
    RunReport t = c.run(coop());
    EXPECT_GT(t.timeline.conversion_exposed_ns, 0.5 * t.timeline.conversion_ns * 3 / 4);
}

TEST(Timeline, SerialConversionClosedForm) {
    // one layer, no preconversion, depth 0: every converted matmul takes N(c + p)
    Case c;
    c.shape.n_layer = 1;
    c.seq = 16;
    c.gen = 1;
    RunOptions o = coop();
    o.prefetch_depth = 0;
    o.preconvert_first_token = false;
    RunReport t = c.run(o), b = c.run(baseline());
    double extra = 0;
    Plan p = plan_generation(c.shape, c.seq, c.gen, 1);
    for (const auto& r : p.ops)
        if (r.kind == OpKind::MATMUL) extra += c.rig.layout.pim(r.n, r.k, r.weight_dtype).to_nz_ns;
    // the single buffer may take each matmul's first block while the op before it runs
    const double first_blocks = 7 * (16 * 1024 + 24) / c.rig.layout.conv_bytes_per_ns;
    EXPECT_NEAR(t.timeline.prefill_ns - b.timeline.prefill_ns, extra, first_blocks);
    EXPECT_LT(t.timeline.prefill_ns - b.timeline.prefill_ns, extra + 1e-6);
    EXPECT_NEAR(t.timeline.conversion_exposed_ns, t.timeline.prefill_ns - b.timeline.prefill_ns, 1e-6);
}

TEST(Timeline, PrefetchDepthNeverHurtsAndHelpsWhenConversionIsClose) {
    Case c;
    c.seq = 32;
    c.gen = 1;
    c.rig.layout.conv_bytes_per_ns = 800;
    double prev = 1e300;
    std::vector<double> ttft;
    for (int64_t d : {0, 1, 4, 16}) {
        RunOptions o = coop();
        o.prefetch_depth = d;
        o.preconvert_first_token = false;
        double v = c.run(o).timeline.ttft_ns;
        EXPECT_LE(v, prev + 1e-6) << "depth " << d;
        prev = v;
        ttft.push_back(v);
    }
    EXPECT_LT(ttft[1], ttft[0]);  // overlapping beats serial
}

TEST(Timeline, ZeroCopySwitchOffAddsFullConversionToTtft) {
    Case c;
    RunOptions off = coop();
    off.zero_copy_switch = false;
    RunReport on_r = c.run(coop()), off_r = c.run(off);
    double full = 0;
    const int64_t q = 16 * 64, kv = 4 * 64;
    for (int l = 0; l < 4; ++l)
        for (auto [n, k] : {std::pair<int64_t, int64_t>{q, 1024}, {kv, 1024}, {kv, 1024}, {1024, q}, {2816, 1024},
                            {2816, 1024}, {1024, 2816}})
            full += c.rig.layout.nz_to_pim_ns(n, k, DType::F16);
    full += c.rig.layout.nz_to_pim_ns(32000, 1024, DType::F16);
    EXPECT_NEAR(off_r.timeline.switch_ns, full, 1e-6 * full);
    EXPECT_NEAR(on_r.timeline.switch_ns, 2000, 1e-9);
    EXPECT_GT(off_r.timeline.ttft_ns, on_r.timeline.ttft_ns);
    EXPECT_GT(off_r.memory.conversion_bytes, on_r.memory.conversion_bytes);  // staging buffer
}

TEST(Timeline, PreconvertFirstTokenTradesMemoryForTtft) {
    Case c;
    c.seq = 8;
    c.rig.layout.conv_bytes_per_ns = 400;
    RunOptions off = coop();
    off.preconvert_first_token = false;
    RunReport on_r = c.run(coop()), off_r = c.run(off);
    EXPECT_LT(on_r.timeline.ttft_ns, off_r.timeline.ttft_ns);
    const uint64_t layer0 = c.rig.layout.nz_bytes(1024, 1024, DType::F16) * 0 + [&] {
        uint64_t s = 0;
        for (auto [n, k] : {std::pair<int64_t, int64_t>{1024, 1024}, {256, 1024}, {256, 1024}, {1024, 1024},
                            {2816, 1024}, {2816, 1024}, {1024, 2816}})
            s += c.rig.layout.nz_bytes(n, k, DType::F16);
        return s;
    }();
    EXPECT_EQ(on_r.memory.conversion_bytes - off_r.memory.conversion_bytes, layer0);
}

TEST(Timeline, UnsharedWeightStreamsSaturateBandwidth) {
    Case c;
    c.batch = 4;
    c.rig.npu.launch_ns = 0;
    RunOptions base = baseline();
    RunOptions unshared = baseline();
    unshared.weight_base_shared = false;
    RunReport s = c.run(base), u = c.run(unshared);
    EXPECT_GT(u.tbt_mean_ns, 3 * s.tbt_mean_ns);  // each of 4 requests streams the weights again
    EXPECT_GT(u.decode_ext_bw_util, 0.9);
    ASSERT_FALSE(u.warnings.empty());
    EXPECT_NE(u.warnings[0].find("weight_base_shared = false"), std::string::npos) << u.warnings[0];
}

TEST(Timeline, NpuOnlyLayersOverride) {
    Case c;
    RunOptions o = coop();
    o.placement.npu_only_layers = {0, 1};
    RunReport all = c.run(coop()), some = c.run(o);
    EXPECT_LT(some.timeline.decode.pim().ops, all.timeline.decode.pim().ops);
    EXPECT_GT(some.tbt_mean_ns, all.tbt_mean_ns);
    EXPECT_LT(some.memory.block_index_bytes, all.memory.block_index_bytes);
    EXPECT_LT(some.memory.weights_pim_base_bytes, all.memory.weights_pim_base_bytes);
    EXPECT_EQ(c.run(baseline()).memory.weights_pim_base_bytes, 0u);
}

TEST(Timeline, AttentionOnPimByConfig) {
    Case c;
    RunOptions o = coop();
    o.placement.attention_on_pim = true;
    RunReport g = c.run(coop()), a = c.run(o);
    const int64_t steps = c.gen - 1;
    EXPECT_EQ(a.timeline.decode.pim().ops - g.timeline.decode.pim().ops, steps * c.shape.n_layer);
}

TEST(Timeline, DecodeEngineNpuKeepsDecodeOffPim) {
    Case c;
    RunOptions o = coop();
    o.placement.decode_on_pim = false;
    RunReport r = c.run(o), b = c.run(baseline());
    EXPECT_EQ(r.timeline.decode.pim().ops, 0);
    EXPECT_GE(r.tbt_mean_ns, b.tbt_mean_ns - 1e-6);  // reading the PIM base through conversion costs more
}

TEST(Timeline, PrefillEngineOnPim) {
    Case c;
    c.seq = 4;  // the fake PIM takes up to 8 rows
    RunOptions o = coop();
    o.placement.prefill_on_npu = false;
    RunReport npu = c.run(coop()), pim = c.run(o);
    EXPECT_EQ(npu.timeline.prefill.pim().ops, 0);
    EXPECT_EQ(pim.timeline.prefill.pim().ops, 7 * c.shape.n_layer + 1);  // every matmul incl. the LM head
    EXPECT_EQ(pim.timeline.conversions, 0);  // nothing converted for the NPU in prefill
}

TEST(Timeline, AutoPicksTheFasterUnit) {
    Case c;
    RunOptions o;
    o.placement.policy = Policy::AUTO;
    RunReport a = c.run(o), t = c.run(coop());
    EXPECT_LE(a.tbt_mean_ns, t.tbt_mean_ns + 1e-6);
    EXPECT_GT(a.timeline.decode.pim().ops, 0);
}

TEST(Memory, BreakdownSumsAndCacheLimit) {
    Case c;
    RunReport b = c.run(baseline());
    const MemoryBreakdown& m = b.memory;
    EXPECT_EQ(m.total_bytes(), m.weights_bytes + m.block_index_bytes + m.kv_cache_bytes + m.activations_bytes +
                                   m.conversion_bytes + m.workspace_bytes);
    // KV: one 128-token block per sequence (72 tokens), K and V, 4 layers, 4 kv heads of 64, f16
    EXPECT_EQ(m.kv_cache_bytes, uint64_t(128) * 2 * 4 * 256 * 2);
    EXPECT_EQ(m.block_index_bytes, 0u);
    RunOptions o = coop();
    o.cache_limit_mb = 1;
    try {
        c.run(o);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(),
                     "config.toml: memory.cache_limit_mb = 1 is too small for the conversion cache of 22 MiB (layer 0 "
                     "pre-converted to NZ 22 MiB [scheduling.preconvert_first_token], 5 prefetch buffers of 16 KiB "
                     "[reorder.prefetch_depth + 1], switch staging 0 MiB [scheduling.zero_copy_switch = false]); "
                     "raise cache_limit_mb or reduce what fills the cache");
    }
}

TEST(Memory, BlockSizeChangesIndexAndBuffers) {
    Case c;
    RunReport small = c.run(coop());
    c.rig.layout.block_bytes = 64 * 1024;
    RunOptions o = coop();
    o.block_size_kb = 64;
    RunReport big = c.run(o);
    EXPECT_LT(big.memory.block_index_bytes, small.memory.block_index_bytes);
    EXPECT_EQ(big.memory.conversion_bytes - small.memory.conversion_bytes, uint64_t(5) * 48 * 1024);
}

namespace {
// A PIM that only takes the narrow K/V projections: Q on the NPU overlaps K and V on the PIM.
struct NarrowPim : fake::Pim {
    bool supports(const hw::OpShape& s) const override { return fake::Pim::supports(s) && s.n <= 256; }
};
}  // namespace

TEST(Timeline, SiblingMatmulsOnDifferentUnitsOverlap) {
    Case c;
    c.shape.n_layer = 1;
    c.gen = 2;
    NarrowPim pim;
    SimHardware hw = c.rig.hw();
    hw.devices[1].model = &pim;
    Plan p = plan_generation(c.shape, c.seq, c.gen, 1);
    RunReport r = simulate_run(c.shape, p, c.seq + c.gen, 1, coop(), hw);
    const PhaseStats& d = r.timeline.decode;
    ASSERT_EQ(d.pim().ops, 2);  // K and V
    // wall time < work of both units: Q ran while K, V ran
    EXPECT_LT(d.wall_ns, d.npu().busy_ns + d.pim().busy_ns - 1);
    // and exactly: Q and (K then V) overlap, so the saving is min(Q, K + V)
    Plan one = plan_generation(c.shape, c.seq, c.gen, 1);
    double q = 0, kv = 0;
    for (size_t i = one.forwards[1].begin; i < one.forwards[1].end; ++i) {
        const OpRecord& rec = one.ops[i];
        if (rec.kind != OpKind::MATMUL || rec.layer != 0) continue;
        if (rec.role == WeightRole::ATTN_Q) q = c.rig.npu.estimate(to_op_shape(rec)).t_ns;
        if (rec.role == WeightRole::ATTN_K || rec.role == WeightRole::ATTN_V) kv += pim.estimate(to_op_shape(rec)).t_ns;
    }
    EXPECT_NEAR(d.npu().busy_ns + d.pim().busy_ns - d.wall_ns, std::min(q, kv), 1e-6 * q);
}
