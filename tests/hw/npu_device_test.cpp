// NPU model closed forms: compute-bound GEMM at peak x utilisation, memory-bound GEMV at
// bytes / bandwidth, fractal padding, launch-bound tiny ops, dispatch modes.
#include <gtest/gtest.h>

#include "core/error.h"
#include "hw/npu/npu_device.h"
#include "hw/npu/npu_memory.h"

using namespace duet;
using namespace duet::hw;
using namespace duet::hw::npu;

namespace {
const std::string kDir = std::string(DUET_SOURCE_DIR) + "/configs/hw";

NpuDevice device(const char* soc, DispatchMode d = DispatchMode::GRAPH) {
    NpuOptions o;
    o.dispatch = d;
    return NpuDevice(load_npu_preset(soc, kDir), o);
}

OpShape gemm(int64_t m, int64_t n, int64_t k, DType t = DType::F16) {
    OpShape op;
    op.cls = m == 1 ? OpClass::GEMV : OpClass::GEMM;
    op.m = m, op.n = n, op.k = k;
    op.weight_dtype = op.act_dtype = t;
    return op;
}
}  // namespace

TEST(NpuDevice, LargeGemmRunsAtPeakTimesUtilisation) {
    // 3072 x 4096 x 4096 f16 on 910B2: 24 x 16 output tiles of 128 x 256 = exactly 16 waves on 24
    // cores, no fractal padding, operands in L2: time = FLOPs / peak.
    const NpuDevice d = device("Ascend910B2");
    const auto b = d.explain(gemm(3072, 4096, 4096));
    const double flops = 2.0 * 3072 * 4096 * 4096, peak = 24.0 * 4096 * 2 * 1.8e9;
    EXPECT_DOUBLE_EQ(b.fractal_utilisation, 1.0);
    EXPECT_DOUBLE_EQ(b.core_utilisation, 1.0);
    EXPECT_NEAR(b.t_device_ns, flops / peak * 1e9, 1e-6 * b.t_device_ns);
    EXPECT_NEAR(b.cube_utilisation, 1.0, 1e-9);
    EXPECT_STREQ(b.cost.bound, "compute");
    // A ragged shape: m = 1000 pads to 1008, k = 4000 to 4000, n = 4000 to 4000; the time is whole
    // waves of whole output tiles, i.e. useful FLOPs at peak x (fractal x tile x core) utilisation.
    const auto r = d.explain(gemm(1000, 4000, 4000));
    ASSERT_STREQ(r.cost.bound, "compute");
    const int64_t bm = r.tiling.bm, bn = r.tiling.bn;
    const int64_t tiles = ((1008 + bm - 1) / bm) * ((4000 + bn - 1) / bn), waves = (tiles + 23) / 24;
    const double t_ns = double(waves) * (bm / 16) * (bn / 16) * (4000 / 16) / 1.8;
    EXPECT_NEAR(r.t_device_ns, t_ns, 1e-6 * t_ns);
    EXPECT_NEAR(r.cube_utilisation, 2.0 * 1000 * 4000 * 4000 / (peak * t_ns * 1e-9), 1e-9);
    EXPECT_LT(r.cube_utilisation, 1.0);
}

TEST(NpuDevice, GemvIsMemoryBoundAtBytesOverBandwidth) {
    // 1 x 4096 x 4096 f16: weights 32 MiB + x + y; every cube core streams at 32 B/cycle, which
    // (24 x 32 B x 1.8 GHz = 1382 GB/s) is below the 1600 GB/s HBM peak.
    const NpuDevice d = device("Ascend910B2");
    const auto b = d.explain(gemm(1, 4096, 4096));
    const double bytes = 4096.0 * 4096 * 2 + 4096 * 2 + 4096 * 2;
    const double bw_gbps = std::min(1600.0, 24 * 32 * 1.8);
    EXPECT_EQ(b.tiling.active_cores, 24);
    EXPECT_DOUBLE_EQ(b.memory_bytes, bytes);
    EXPECT_NEAR(b.t_device_ns, bytes / bw_gbps, 1e-6);
    EXPECT_STREQ(b.cost.bound, "memory");
    // 910B4: the 800 GB/s HBM binds before its 20 x 32 B x 1.5 GHz = 960 GB/s core paths.
    const auto b4 = device("Ascend910B4").explain(gemm(1, 4096, 4096));
    EXPECT_NEAR(b4.t_device_ns, bytes / 800.0, 1e-6);
    // The DRAM model's efficiency scales the memory time.
    NpuOptions o;
    o.memory_efficiency = 0.5;
    const auto half = NpuDevice(load_npu_preset("Ascend910B4", kDir), o).explain(gemm(1, 4096, 4096));
    EXPECT_NEAR(half.t_device_ns, bytes / 400.0, 1e-6);
}

TEST(NpuDevice, SingleRowIsPaddedToTheFractal) {
    const auto b = device("Ascend910B2").explain(gemm(1, 4096, 4096));
    EXPECT_DOUBLE_EQ(b.fractal_utilisation, 1.0 / 16);
    EXPECT_DOUBLE_EQ(b.padded_flops, 2.0 * 16 * 4096 * 4096);
    // int8 (W8A8) uses the 16x32x16 fractal: k = 48 pads to 64.
    const auto i8 = device("Ascend910B2").explain(gemm(16, 16, 48, DType::I8));
    EXPECT_DOUBLE_EQ(i8.fractal_utilisation, 48.0 / 64);
}

TEST(NpuDevice, TinyOpIsLaunchBound) {
    OpShape add;
    add.cls = OpClass::ELEMENTWISE;
    add.in_bytes = 2 * 4096 * 2;
    add.out_bytes = 4096 * 2;
    add.flops = 4096;
    const auto q1 = device("Ascend910B2", DispatchMode::QUEUE1).explain(add);
    EXPECT_STREQ(q1.cost.bound, "launch");
    EXPECT_DOUBLE_EQ(q1.cost.t_ns, 20e3);  // the host's 20 us per op hides the device entirely
    EXPECT_DOUBLE_EQ(q1.cost.t_launch_ns, 20e3 - q1.t_device_ns);
    const auto eager = device("Ascend910B2", DispatchMode::EAGER).explain(add);
    EXPECT_DOUBLE_EQ(eager.cost.t_ns, 30e3 + 3e3 + eager.t_device_ns);
    const auto graph = device("Ascend910B2", DispatchMode::GRAPH).explain(add);
    EXPECT_DOUBLE_EQ(graph.cost.t_ns, 3e3 + graph.t_device_ns);
    EXPECT_STREQ(graph.cost.bound, "launch");  // the 3 us device task start still dominates
    // A large GEMM hides the host entirely in queue mode.
    const auto big = device("Ascend910B2", DispatchMode::QUEUE1).explain(gemm(3072, 4096, 4096));
    EXPECT_DOUBLE_EQ(big.cost.t_ns, 3e3 + big.t_device_ns);
    EXPECT_STREQ(big.cost.bound, "compute");
}

TEST(NpuDevice, TilingFitsTheBuffers) {
    for (const char* soc : {"Ascend910B2", "Ascend310P3", "Ascend310B4"}) {
        const NpuDevice d = device(soc);
        const auto b = d.explain(gemm(512, 1000, 3000));
        const auto& p = d.preset();
        EXPECT_LE(b.tiling.bm * b.tiling.bn * 4, p.l0c_kib * 1024) << soc;
        EXPECT_LE(2 * b.tiling.bm * b.tiling.bk * 2, p.l0a_kib * 1024) << soc;
        EXPECT_LE(2 * b.tiling.bn * b.tiling.bk * 2, p.l0b_kib * 1024) << soc;
        EXPECT_GE(b.tiling.bk, 16) << soc;
    }
}

TEST(NpuDevice, OperandsLargerThanL2AreReRead) {
    // 310P3 has 16 MiB of L2: a 4096 x 8192 f16 weight (64 MiB) with 8192 activation rows (128 MiB)
    // cannot stay on chip, so one operand is re-read per tile row or column.
    const auto b = device("Ascend310P3").explain(gemm(8192, 4096, 8192));
    EXPECT_FALSE(b.operands_fit_l2);
    EXPECT_GT(b.memory_bytes, (8192.0 * 8192 + 4096.0 * 8192 + 8192.0 * 4096) * 2);
    const auto fits = device("Ascend910B2").explain(gemm(2048, 4096, 4096));
    EXPECT_TRUE(fits.operands_fit_l2);
    EXPECT_DOUBLE_EQ(fits.memory_bytes, (2048.0 * 4096 + 4096.0 * 4096 + 2048.0 * 4096) * 2);
}

TEST(NpuDevice, DecodeAttentionStreamsTheKvCache) {
    OpShape a;
    a.cls = OpClass::ATTENTION;
    a.m = 1, a.n = 2048, a.k = 128, a.n_head = 32, a.n_head_kv = 8;
    const auto b = device("Ascend910B2").explain(a);
    const double kv = 2.0 * 2048 * 128 * 8 * 2, q = 128.0 * 32 * 2;
    EXPECT_DOUBLE_EQ(b.memory_bytes, kv + 2 * q);
    EXPECT_STREQ(b.cost.bound, "memory");
    EXPECT_DOUBLE_EQ(b.fractal_utilisation, 4.0 / 16);  // 4 query heads per KV head, padded to 16 rows
}

TEST(NpuDevice, Bf16IsRejectedWhereTheSocHasNone) {
    const NpuDevice d = device("Ascend310P3");
    const OpShape op = gemm(16, 16, 16, DType::BF16);
    EXPECT_FALSE(d.supports(op));
    try {
        d.explain(op);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "Ascend310P3: bf16 is not supported by this SoC (allowed: f16, i8)");
    }
    EXPECT_TRUE(device("Ascend910B2").supports(op));
}

TEST(NpuDevice, DispatchNames) {
    EXPECT_EQ(dispatch_from_name("queue2"), DispatchMode::QUEUE2);
    EXPECT_EQ(dispatch_from_name("graph"), DispatchMode::GRAPH);
    EXPECT_FALSE(dispatch_from_name("fast").has_value());
}

TEST(NpuDevice, MemoryEfficiencyComesFromTheDramModel) {
    // make_npu_device takes the sustained stream fraction of the preset's memory from hw/dram's
    // analytical model; a GEMV then takes bytes / min(peak x efficiency, core paths).
    const double eff = dram_stream_efficiency("hbm2e");
    EXPECT_GT(eff, 0.5);
    EXPECT_LT(eff, 1.0);
    const NpuDevice d = make_npu_device("Ascend910B4", DispatchMode::GRAPH);
    EXPECT_DOUBLE_EQ(d.options().memory_efficiency, eff);
    const double bytes = 4096.0 * 4096 * 2 + 4096 * 2 + 4096 * 2;
    EXPECT_NEAR(d.explain(gemm(1, 4096, 4096)).t_device_ns, bytes / std::min(800.0 * eff, 20 * 32 * 1.5), 1e-6);
    EXPECT_DOUBLE_EQ(make_npu_device("Ascend310P3").options().memory_efficiency, dram_stream_efficiency("lpddr4x"));
}

TEST(NpuDevice, LargeElementwiseIsBandwidthBound) {
    // 32 Mi f16 elements in twice (64 MiB), out once (32 MiB) on 910B2: 48 vector cores x 32 B x
    // 1.8 GHz = 2765 GB/s of core paths, so the 1600 GB/s HBM binds; the vector work (one op per
    // lane: 32 Mi / (128 lanes x 48 cores x 1.8 GHz) = 3.8 us) hides under it.
    OpShape add;
    add.cls = OpClass::ELEMENTWISE;
    add.in_bytes = 64ull << 20;
    add.out_bytes = 32ull << 20;
    const auto b = device("Ascend910B2").explain(add);
    EXPECT_EQ(b.tiling.active_cores, 48);
    EXPECT_NEAR(b.t_memory_ns, double(96ull << 20) / 1600.0, 1e-6);
    EXPECT_NEAR(b.t_vector_ns, double(32ull << 20) / (128.0 * 48 * 1.8), 1e-6);
    EXPECT_DOUBLE_EQ(b.t_device_ns, b.t_memory_ns);
    EXPECT_STREQ(b.cost.bound, "memory");
    // Softmax defaults to 5 vector operations per element.
    OpShape sm = add;
    sm.cls = OpClass::SOFTMAX;
    EXPECT_NEAR(device("Ascend910B2").explain(sm).t_vector_ns, 5 * b.t_vector_ns, 1e-6);
}

TEST(NpuDevice, CausalPrefillAttentionSkipsMaskedWork) {
    OpShape a;
    a.cls = OpClass::ATTENTION;
    a.m = 2048, a.n = 2048, a.k = 128, a.n_head = 32, a.n_head_kv = 32;
    const auto dense = device("Ascend910B2").explain(a);
    a.flops = 4.0 * 2048 * 2048 * 128 * 32 / 2;  // causal: half the score matrix
    const auto causal = device("Ascend910B2").explain(a);
    EXPECT_STREQ(dense.cost.bound, "compute");
    EXPECT_NEAR(causal.t_cube_ns, dense.t_cube_ns / 2, 1e-6 * dense.t_cube_ns);
    EXPECT_DOUBLE_EQ(causal.fractal_utilisation, dense.fractal_utilisation);
    // 32 heads x 16 query blocks x 4 KV chunks = 2048 units: 86 waves on 24 cores.
    EXPECT_EQ(dense.tiling.tiles, 2048);
    EXPECT_NEAR(dense.t_cube_ns, 86 * (4.0 * 32 * 2048 * 2048 * 128 / 2048) / (4096 * 2 * 1.8), 1e-6 * dense.t_cube_ns);
}

// The serving stack's per-step host work is a property of the dispatch family: the preset's
// eager value for eager and queue0/1/2, its graph value for graph replay (configs/hw
// ascend910b4.toml [serving_step]); it is charged per engine step by the timeline, never per op.
TEST(NpuDevice, StepOverheadFollowsTheDispatchFamily) {
    for (DispatchMode m : {DispatchMode::EAGER, DispatchMode::QUEUE0, DispatchMode::QUEUE1, DispatchMode::QUEUE2})
        EXPECT_DOUBLE_EQ(device("Ascend910B4", m).step_overhead_ns(), 10630e3) << dispatch_name(m);
    EXPECT_DOUBLE_EQ(device("Ascend910B4", DispatchMode::GRAPH).step_overhead_ns(), 1270e3);
    NpuPreset p = load_npu_preset("Ascend910B4", kDir);
    const NpuDevice with(p, {});
    p.serving_step = {};
    const NpuDevice without(p, {});
    EXPECT_DOUBLE_EQ(without.step_overhead_ns(), 0);
    const OpShape op = gemm(1, 4096, 4096);
    EXPECT_DOUBLE_EQ(with.estimate(op).t_ns, without.estimate(op).t_ns);
}
