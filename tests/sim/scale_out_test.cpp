// Tensor and pipeline parallelism in the timeline (sim/scale_out.h) on the closed-form fake
// devices: each collective costs what sim/collective.h's formula says, charged on every rank's
// device and the links; pipeline stages overlap across micro-batches; FlashComm reorders.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "fake_hw.h"
#include "sim/op_shape.h"
#include "sim/report.h"
#include "sim/scale_out.h"

using namespace duet;
using namespace duet::sim;

namespace {

using fake::Cluster;
using fake::test_link;

RunOptions parallel(int tp, int pp, int micro = 1) {
    RunOptions o;
    o.placement.policy = Policy::NPU_ONLY;
    o.parallel.tp = tp;
    o.parallel.pp = pp;
    o.parallel.micro_batches = micro;
    o.parallel.launch = {ExpansionMode::HOST, 7000, 200};
    return o;
}

Timeline simulate(const Cluster& c, const RunOptions& o, int32_t batch = 1, int64_t gen = 4, bool flashcomm = false) {
    graph::GraphOptions go;
    go.tp = o.parallel.tp;
    go.pp = o.parallel.pp;
    go.flashcomm = flashcomm;
    const Plan p = plan_parallel_generation(fake::small_shape(), 32, gen, batch, go, o.parallel.micro_batches);
    Placer placer(o.placement, c.hw);
    return simulate_timeline(fake::small_shape(), p, placer, o, c.hw);
}

TEST(ScaleOut, MeshAddsALinkPerPairOnce) {
    Cluster c(4);
    EXPECT_EQ(c.hw.links.size(), 6u);  // 3 to npu0 + npu1-npu2, npu1-npu3, npu2-npu3
    EXPECT_EQ(c.hw.links[3].name, "npu1-npu2");
    EXPECT_EQ(c.hw.link_between(2, 1), 3);
    EXPECT_EQ(c.hw.link_between(3, 0), 2);
    EXPECT_TRUE(c.hw.path(2, 2).shared_memory);
}

TEST(ScaleOut, RanksTakeTheirOwnDevicesOrShareThemInTurn) {
    Cluster c(4);
    const auto m = split_machine(c.hw, 2, 2);
    ASSERT_EQ(m.size(), 4u);
    EXPECT_EQ(m[3].stage, 1);
    EXPECT_EQ(m[3].rank, 1);
    EXPECT_EQ(m[3].npu, 3);
    EXPECT_EQ(m[3].device_map, (std::vector<int>{3}));
    const auto shared = split_machine(Cluster(1).hw, 4, 1);
    for (const RankMachine& r : shared) EXPECT_EQ(r.npu, 0);
}

// pim_only with tensor parallelism (CENT's TP8 on 8 CXL PIM devices): every rank runs its matmuls
// and attention on its own PIM device and everything else on the host CPU; no NPU runs anything,
// and the all-reduces join the PIM devices.
TEST(ScaleOut, PimOnlyRanksUseTheirPimDeviceAndTheHostCpuNeverAnNpu) {
    fake::Npu npu, cpu;
    fake::Pim pim;
    fake::Layout layout;
    SimHardware hw = npu_pim_hardware(&npu, nullptr, &layout);
    hw.mem_bw_gbps = npu.bytes_per_ns;
    for (int i = 0; i < 2; ++i) hw.add_device(DeviceKind::PIM, &pim, test_link());
    hw.add_mesh(DeviceKind::PIM, test_link());
    const int cpu0 = hw.add_device(DeviceKind::CPU, &cpu);
    const auto machines = split_machine(hw, 2, 1);
    ASSERT_EQ(machines.size(), 2u);
    EXPECT_EQ(machines[1].device_map, (std::vector<int>{0, 2, cpu0}));  // npu0, pim1, the shared cpu0
    EXPECT_EQ(machines[1].hw.devices[2].kind, DeviceKind::CPU);
    RunOptions o = parallel(2, 1);
    o.placement.policy = Policy::PIM_ONLY;
    graph::GraphOptions go;
    go.tp = 2;
    const Plan p = plan_parallel_generation(fake::small_shape(), 32, 4, 1, go, 1);
    const Timeline tl = simulate_timeline(fake::small_shape(), p, Placer(o.placement, hw), o, hw);
    for (const PhaseStats* ps : {&tl.prefill, &tl.decode}) {
        EXPECT_EQ(ps->device[0].ops, 0);  // npu0
        EXPECT_GT(ps->device[size_t(cpu0)].ops, 0);
    }
    EXPECT_GT(tl.decode.device[1].ops, 0);  // pim0 and pim1: the decode GEMVs
    EXPECT_GT(tl.decode.device[2].ops, 0);
    // the all-reduces run between the PIM devices over their link, with no HCCL launch cost (no
    // NPU runtime): 2048 bytes, mesh 1 x (1500 + 2048/50) ns, two per layer, four layers
    const double steps = double(tl.tbt_ns.size());
    EXPECT_NEAR(tl.decode.device[1].comm_ns, steps * 8 * (1500 + 2048.0 / 50), 1e-6);
    EXPECT_EQ(tl.decode.device[0].comm_ns, 0);
}

TEST(ScaleOut, EachAllReduceCostsTheOneShotMeshFormulaOnBothRanks) {
    Cluster c(2);
    const Timeline tl = simulate(c, parallel(2, 1));
    // decode: 1 row x 1024 features x 2 bytes (f16) = 2048 bytes; 2 ranks on a direct link:
    // mesh 1 x (1500 + 2048/50) beats ring 2 x (1500 + 1024/50); launch 7000 + 1 step x 200
    const double one = 1500 + 2048.0 / 50 + 7000 + 200;
    const double steps = double(tl.tbt_ns.size()), per_step = 2 * 4;  // two per layer, four layers
    for (int d = 0; d < 2; ++d) {
        EXPECT_NEAR(tl.decode.device[size_t(d)].comm_ns, steps * per_step * one, 1e-6) << d;
        // tensor parallelism hides nothing: every rank waits for every all-reduce
        EXPECT_NEAR(tl.decode.device[size_t(d)].exposed_comm_ns, tl.decode.device[size_t(d)].comm_ns, 1e-6) << d;
    }
    EXPECT_DOUBLE_EQ(tl.decode.device[0].busy_ns, tl.decode.device[1].busy_ns);  // equal shards
    // a decode step = the rank's compute + its collectives, one after the other
    double decode_ns = 0;
    for (double t : tl.tbt_ns) decode_ns += t;
    EXPECT_NEAR(decode_ns, tl.decode.device[0].busy_ns + steps * per_step * one, 1e-6);
    EXPECT_GT(tl.links[0].transfers, 0);
}

TEST(ScaleOut, TensorParallelismShrinksEachRanksCompute) {
    const Timeline one = simulate(Cluster(1), parallel(1, 1)), two = simulate(Cluster(2), parallel(2, 1));
    EXPECT_LT(two.decode.device[0].busy_ns, one.decode.device[0].busy_ns);
    EXPECT_EQ(one.decode.device[0].comm_ns, 0);
}

TEST(ScaleOut, PipelineStagesOverlapAcrossMicroBatchesAndSendTheBoundary) {
    Cluster c(2);
    const Timeline tl = simulate(c, parallel(1, 2, 2), 2);
    // prefill of 2 micro-batches x 32 tokens: stage 1 runs micro-batch 0 while stage 0 runs 1
    EXPECT_LT(tl.prefill_ns, tl.prefill.device[0].busy_ns + tl.prefill.device[1].busy_ns);
    EXPECT_GT(tl.prefill.device[1].busy_ns, 0);
    // bytes on the link: every micro-batch's boundary, f16 rows of 1024 features
    const double prefill_bytes = 2 * 32 * 1024 * 2, decode_bytes = double(tl.tbt_ns.size()) * 2 * 1024 * 2;
    EXPECT_DOUBLE_EQ(tl.links[0].bytes, prefill_bytes + decode_bytes);
    // stage 0 sends micro-batch 0 while it computes micro-batch 1: not all of it is exposed
    EXPECT_LT(tl.prefill.device[0].exposed_comm_ns, tl.prefill.device[0].comm_ns);
    EXPECT_EQ(tl.prefill.device[1].comm_ns, 0);  // the last stage sends nothing
}

TEST(ScaleOut, FlashcommRunsTheAddAndNormOnTheRanksShareOfTheTokens) {
    graph::GraphOptions go;
    go.tp = 2;
    go.flashcomm = true;
    const Plan p = plan_parallel_generation(fake::small_shape(), 32, 2, 1, go, 1);
    const OpTrace& ops = p.ops;
    int rewritten = 0;
    for (size_t i = 0; i + 3 < p.forwards[0].end; ++i) {
        if (ops[i].kind != OpKind::REDUCE_SCATTER) continue;
        if (ops[i + 1].kind == OpKind::ALL_GATHER) {  // the last layer's add feeds the output norm (n_seq rows)
            EXPECT_EQ(ops[i + 2].kind, OpKind::ADD);
            EXPECT_EQ(ops[i + 2].m, 32);
            continue;
        }
        ASSERT_EQ(ops[i + 1].kind, OpKind::ADD) << i;
        ASSERT_EQ(ops[i + 2].kind, OpKind::RMSNORM) << i;
        EXPECT_EQ(ops[i + 1].m, 16);                       // 32 prompt tokens over 2 ranks
        EXPECT_EQ(ops[i + 2].m, 16);
        EXPECT_EQ(ops[i + 3].kind, OpKind::ALL_GATHER);
        ++rewritten;
    }
    EXPECT_EQ(rewritten, 2 * 4 - 1);
    // prefill moves the same bytes in two collectives: the ranks' add + norm shrink
    Cluster c(2);
    const Timeline off = simulate(c, parallel(2, 1)), on = simulate(c, parallel(2, 1), 1, 4, true);
    EXPECT_LT(on.prefill.device[0].busy_ns, off.prefill.device[0].busy_ns);
}

TEST(ScaleOut, WithoutADirectLinkTheRingGoesThroughNpu0AndTheMeshIsNotOffered) {
    fake::Npu npu;
    fake::Layout layout;
    SimHardware hw = npu_pim_hardware(&npu, nullptr, &layout);
    hw.add_device(DeviceKind::NPU, &npu, test_link());
    hw.add_device(DeviceKind::NPU, &npu, test_link());  // a star: npu1 and npu2 reach each other via npu0
    const ExpansionCost launch{ExpansionMode::HOST, 7000, 200};
    const double n = 4096;
    const PricedCollective pc = price_collective(hw, CollectiveKind::ALL_REDUCE, {1, 2}, n, launch);
    EXPECT_EQ(pc.time.algo, CollectiveAlgo::RING);
    // two hops: both latencies and per-transfer costs, the smaller bandwidth; 2 steps of n/2
    EXPECT_DOUBLE_EQ(pc.time.total_ns(), 2 * (2 * 1500 + n / 2 / 50) + 7000 + 2 * 200);
    EXPECT_EQ(pc.links, (std::vector<int>{0, 1}));  // both star links carry it
    // with the mesh link added the one-shot mesh takes one direct step
    hw.add_mesh(DeviceKind::NPU, test_link());
    const PricedCollective mesh = price_collective(hw, CollectiveKind::ALL_REDUCE, {1, 2}, n, launch);
    EXPECT_EQ(mesh.time.algo, CollectiveAlgo::MESH);
    EXPECT_DOUBLE_EQ(mesh.time.total_ns(), 1500 + n / 50 + 7000 + 200);
    EXPECT_EQ(mesh.links, (std::vector<int>{2}));
}

TEST(ScaleOut, IntervalsSubtractWhatIsCovered) {
    Intervals comm, busy;
    comm.add(0, 10);
    comm.add(5, 15);   // union [0, 15)
    comm.add(20, 30);  // + [20, 30)
    busy.add(2, 4);
    busy.add(12, 22);
    EXPECT_DOUBLE_EQ(comm.uncovered_by(busy), 15 - 2 - 3 + 10 - 2);
    EXPECT_DOUBLE_EQ(comm.uncovered_by(Intervals{}), 25);
}

}  // namespace

namespace {

// `npus` NPUs and one PIM device per NPU behind a copying link, every NPU pair meshed.
struct PimCluster {
    fake::Npu npu;
    std::vector<std::unique_ptr<fake::Pim>> pims;
    fake::Layout layout;
    SimHardware hw;
    PimCluster(int npus, int pim_count) {
        hw = npu_pim_hardware(&npu, nullptr, &layout);
        hw.mem_bw_gbps = npu.bytes_per_ns * npus;
        hw.conversion_pj_per_byte = 5;
        for (int i = 1; i < npus; ++i) hw.add_device(DeviceKind::NPU, &npu, test_link());
        hw.add_mesh(DeviceKind::NPU, test_link());
        for (int i = 0; i < pim_count; ++i) {
            pims.push_back(std::make_unique<fake::Pim>());
            hw.add_device(DeviceKind::PIM, pims.back().get(), test_link());
        }
    }
};

Timeline simulate_coop(const SimHardware& hw, int tp, bool mirror, Policy policy = Policy::NPU_PIM_COOP) {
    RunOptions o = parallel(tp, 1);
    o.placement.policy = policy;
    o.zero_copy_switch = false;
    o.prefetch_mlp = true;
    o.mirror_tp_ranks = mirror;
    graph::GraphOptions go;
    go.tp = tp;
    const Plan p = plan_parallel_generation(fake::small_shape(), 32, 6, 2, go, 1);
    return simulate_timeline(fake::small_shape(), p, Placer(o.placement, hw), o, hw);
}

void expect_same_figures(const DeviceStats& a, const DeviceStats& b, const std::string& what) {
    const auto near = [&](double x, double y, const char* field) {
        EXPECT_NEAR(x, y, 1e-9 * std::max(1.0, std::abs(y))) << what << " " << field;
    };
    EXPECT_EQ(a.name, b.name) << what;
    near(a.busy_ns, b.busy_ns, "busy_ns");
    near(a.bytes_moved, b.bytes_moved, "bytes_moved");
    near(a.weight_bytes, b.weight_bytes, "weight_bytes");
    near(a.energy_pj, b.energy_pj, "energy_pj");
    near(a.launch_ns, b.launch_ns, "launch_ns");
    near(a.comm_ns, b.comm_ns, "comm_ns");
    near(a.exposed_comm_ns, b.exposed_comm_ns, "exposed_comm_ns");
    EXPECT_EQ(a.ops, b.ops) << what;
}

// Every figure of a run with mirrored ranks against the run that simulates every rank.
void expect_same_timeline(const Timeline& m, const Timeline& f) {
    ASSERT_EQ(m.tbt_ns.size(), f.tbt_ns.size());
    EXPECT_NEAR(m.ttft_ns, f.ttft_ns, 1e-6);
    for (size_t i = 0; i < f.tbt_ns.size(); ++i) EXPECT_NEAR(m.tbt_ns[i], f.tbt_ns[i], 1e-6) << i;
    EXPECT_NEAR(m.conversion_ns, f.conversion_ns, 1e-6);
    EXPECT_NEAR(m.conversion_exposed_ns, f.conversion_exposed_ns, 1e-6);
    EXPECT_NEAR(m.conversion_bytes_read, f.conversion_bytes_read, 1e-3);
    EXPECT_NEAR(m.conversion_energy_pj, f.conversion_energy_pj, 1e-3);
    EXPECT_EQ(m.conversions, f.conversions);
    EXPECT_NEAR(m.mlp_prefetched_bytes, f.mlp_prefetched_bytes, 1e-3);
    for (const auto& [a, b] : {std::pair{&m.prefill, &f.prefill}, std::pair{&m.decode, &f.decode}}) {
        ASSERT_EQ(a->device.size(), b->device.size());
        for (size_t d = 0; d < b->device.size(); ++d) expect_same_figures(a->device[d], b->device[d], b->device[d].name);
    }
    ASSERT_EQ(m.links.size(), f.links.size());
    for (size_t l = 0; l < f.links.size(); ++l) {
        EXPECT_EQ(m.links[l].name, f.links[l].name);
        EXPECT_NEAR(m.links[l].busy_ns, f.links[l].busy_ns, 1e-6) << f.links[l].name;
        EXPECT_NEAR(m.links[l].bytes, f.links[l].bytes, 1e-6) << f.links[l].name;
        EXPECT_EQ(m.links[l].transfers, f.links[l].transfers) << f.links[l].name;
    }
}

}  // namespace

TEST(ScaleOut, MirroredRanksGiveEveryFigureOfTheFullSimulation) {
    const PimCluster c(4, 4);
    const Timeline full = simulate_coop(c.hw, 4, false), mirrored = simulate_coop(c.hw, 4, true);
    expect_same_timeline(mirrored, full);
    // the run exercised what mirroring copies: PIM parts, their links, conversions
    EXPECT_GT(full.decode.pim().ops, 0);
    EXPECT_GT(full.conversions, 0);
    // and the NPU's MLP prefetch, whose bytes count once per rank
    const Timeline npu_full = simulate_coop(c.hw, 4, false, Policy::NPU_ONLY);
    expect_same_timeline(simulate_coop(c.hw, 4, true, Policy::NPU_ONLY), npu_full);
    EXPECT_GT(npu_full.mlp_prefetched_bytes, 0);
    EXPECT_GT(full.links[c.hw.devices[size_t(c.hw.devices_of(DeviceKind::PIM)[3])].link].transfers, 0);
}

TEST(ScaleOut, RanksThatShareADeviceOrDifferInAModelAreNotMirrored) {
    // tp 4 over 2 NPUs: ranks take the NPUs in turn and queue behind each other on them
    const PimCluster shared(2, 4);
    expect_same_timeline(simulate_coop(shared.hw, 4, true), simulate_coop(shared.hw, 4, false));
    // rank 3's PIM device is another model (slower, another name)
    struct SlowPim : fake::Pim {
        std::string name() const override { return "fake-pim-slow"; }
    };
    PimCluster mixed(4, 4);
    SlowPim slow;
    slow.internal_bytes_per_ns = 800;
    mixed.hw.devices[size_t(mixed.hw.devices_of(DeviceKind::PIM)[3])].model = &slow;
    const Timeline full = simulate_coop(mixed.hw, 4, false);
    expect_same_timeline(simulate_coop(mixed.hw, 4, true), full);
    EXPECT_GT(full.tbt_ns[0], simulate_coop(PimCluster(4, 4).hw, 4, false).tbt_ns[0]);  // the slow rank holds every step
}
