// Expert parallelism and per-expert placement in the simulator (sim/expert_load.h) on the
// closed-form fake devices: the all-to-alls cost sim/collective.h's formula on every rank, the
// rank's experts see the rows the routing gives them (checked against the expected-value closed
// forms written out here), skew moves the busiest device, auto placement puts an expert with few
// rows on PIM and one with many on the NPU, and the memory of a device holds its own experts.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "fake_hw.h"
#include "graph/lowering.h"
#include "sim/expert_load.h"
#include "sim/op_shape.h"
#include "sim/report.h"
#include "sim/scale_out.h"

using namespace duet;
using namespace duet::sim;

namespace {

// small_shape with 8 routed experts of 512, 2 per token, in every layer.
ModelShape moe_shape() {
    ModelShape s = fake::small_shape();
    s.name = "small-moe";
    s.n_expert = 8;
    s.n_expert_used = 2;
    s.n_ff_exp = 512;
    return s;
}

using fake::Cluster;
using fake::test_link;

RunOptions ep_options(int ep, int32_t batch, std::shared_ptr<const ExpertRouting> routing) {
    RunOptions o;
    o.placement.policy = Policy::NPU_ONLY;
    o.parallel.launch = {ExpansionMode::HOST, 7000, 200};
    o.experts.routing = std::move(routing);
    o.experts.ep = ep;
    o.experts.seqs_total = batch;
    return o;
}

Plan ep_plan(int ep, int32_t batch, int64_t gen = 4) {
    graph::GraphOptions go;
    go.ep = ep;
    return plan_parallel_generation(moe_shape(), 32, gen, batch, go, 1);
}

std::shared_ptr<const ExpertRouting> uniform() { return std::make_shared<const ExpertRouting>(); }

// Fractions that send most rows to experts 4..7 (rank 1 of 2).
std::shared_ptr<const ExpertRouting> hot_second_half() {
    auto r = std::make_shared<ExpertRouting>();
    r->source = "test";
    r->fractions.assign(4, {0.05, 0.05, 0.05, 0.05, 0.2, 0.2, 0.2, 0.2});
    return r;
}

RankExpertLoad decode_load(int ep, int rank, int32_t batch, std::shared_ptr<const ExpertRouting> routing) {
    Plan p = ep_plan(ep, batch);
    RankExpertLoad l;
    apply_expert_load(p, moe_shape(), ep_options(ep, batch, std::move(routing)).experts, rank, nullptr, &l);
    return l;
}

}  // namespace

TEST(ExpertParallel, GraphHasADispatchAndACombinePerMoeLayerAndTheRanksExperts) {
    graph::GraphOptions go;
    go.ep = 4;
    go.ep_rank = 3;
    const graph::Graph g = graph::build_graph(moe_shape(), go);
    int a2a = 0;
    for (size_t i = 0; i < g.nodes.size(); ++i)
        if (g.nodes[i].kind == OpKind::ALL_TO_ALL) {
            ++a2a;
            EXPECT_EQ(g.nodes[i].k, 4);
            EXPECT_EQ(g.nodes[i].n, 1024);
            // dispatch right before the first expert matmul, combine right after the down projection
            const bool dispatch = g.nodes[i + 1].kind == OpKind::MOE_MATMUL && g.nodes[i + 1].role == WeightRole::FFN_GATE_EXPS;
            const bool combine = g.nodes[i - 1].kind == OpKind::MOE_MATMUL && g.nodes[i - 1].role == WeightRole::FFN_DOWN_EXPS;
            EXPECT_TRUE(dispatch || combine) << i;
            EXPECT_FALSE(g.nodes[i + 1].sibling_of_prev) << "the expert matmul waits for the dispatch";
        }
    EXPECT_EQ(a2a, 2 * 4);
    EXPECT_EQ(g.ep.experts.begin, 6);
    EXPECT_EQ(g.ep.experts.count, 2);
    for (const graph::MatrixUse& m : graph::matrices(g))
        EXPECT_EQ(m.count, m.role == WeightRole::FFN_GATE_EXPS ? 2 : m.count) << weight_role_name(m.role);
}

TEST(ExpertParallel, UniformRoutingOnOneDeviceKeepsThePlannersRecords) {
    for (int32_t batch : {1, 3, 64}) {
        const Plan p = plan_generation(moe_shape(), 16, 3, batch);
        Plan q = p;
        apply_expert_load(q, moe_shape(), ep_options(1, batch, uniform()).experts, 0, nullptr, nullptr);
        ASSERT_EQ(p.ops.size(), q.ops.size());
        for (size_t i = 0; i < p.ops.size(); ++i) EXPECT_EQ(p.ops[i], q.ops[i]) << i << " batch " << batch;
    }
}

TEST(ExpertParallel, EachRanksExpertsGetTheExpectedRowsOfTheRouting) {
    // Zipf s = 1 over 8 experts: f_i = 1/(i+1) / H_8, H_8 = 761/280; decode of batch 2: T = 2, k = 2
    const auto zipf = std::make_shared<const ExpertRouting>(zipf_routing(1.0, 4, 8, 2));
    const double h8 = 761.0 / 280.0;
    for (int rank = 0; rank < 2; ++rank) {
        double rows = 0, active = 0;
        for (int i = 4 * rank; i < 4 * rank + 4; ++i) {
            const double p = 2.0 / (i + 1) / h8;
            rows += 2 * p;
            active += 1 - (1 - p) * (1 - p);
        }
        const RankExpertLoad l = decode_load(2, rank, 2, zipf);
        EXPECT_EQ(l.layers, 4);
        EXPECT_NEAR(l.rows / 4, rows, 1e-12) << rank;
        EXPECT_NEAR(l.active / 4, active, 1e-12) << rank;
    }
}

TEST(ExpertParallel, SkewMovesTheBusiestDevice) {
    const RankExpertLoad u0 = decode_load(2, 0, 8, uniform()), u1 = decode_load(2, 1, 8, uniform());
    EXPECT_NEAR(u0.rows, u1.rows, 1e-9);  // uniform: T*k/ep = 8 rows each, per layer
    EXPECT_NEAR(u0.rows / 4, 8.0, 1e-9);
    const auto zipf = std::make_shared<const ExpertRouting>(zipf_routing(1.0, 4, 8, 2));
    EXPECT_GT(decode_load(2, 0, 8, zipf).rows, decode_load(2, 1, 8, zipf).rows);
    const RankExpertLoad h0 = decode_load(2, 0, 8, hot_second_half()), h1 = decode_load(2, 1, 8, hot_second_half());
    EXPECT_NEAR(h1.rows / 4, 8 * 2 * 0.8, 1e-9);
    EXPECT_NEAR(h0.rows / 4, 8 * 2 * 0.2, 1e-9);
    const nlohmann::json j = expert_report_json(ep_options(2, 8, hot_second_half()).experts, moe_shape(), {h0, h1}, {});
    EXPECT_EQ(j["busiest_device"], 1);
    EXPECT_EQ(expert_report_json(ep_options(2, 8, uniform()).experts, moe_shape(), {u0, u1}, {})["busiest_device"], 0);
    // the busiest rank sets the step: its decode compute is the longer one
    Cluster c(2);
    const RunOptions o = ep_options(2, 8, hot_second_half());
    nlohmann::json report;
    const Plan loaded = plan_with_expert_loads(ep_plan(2, 8), moe_shape(), o, c.hw, report);
    const Timeline tl = simulate_timeline(moe_shape(), loaded, Placer(o.placement, c.hw), o, c.hw);
    EXPECT_GT(tl.decode.device[1].busy_ns, tl.decode.device[0].busy_ns);
    EXPECT_EQ(report["busiest_device"], 1);
}

TEST(ExpertParallel, EachAllToAllCostsTheOneShotMeshFormulaOnBothRanks) {
    Cluster c(2);
    const RunOptions o = ep_options(2, 2, uniform());
    nlohmann::json report;
    const Plan loaded = plan_with_expert_loads(ep_plan(2, 2), moe_shape(), o, c.hw, report);
    const Timeline tl = simulate_timeline(moe_shape(), loaded, Placer(o.placement, c.hw), o, c.hw);
    // decode: each rank holds 1 of the 2 sequences, 1 token x k = 2 routed rows, 1 of them to the
    // peer: the largest message is 1 row of 1024 f16 = 2048 bytes; mesh 1 x (1500 + 2048/50) (pairwise
    // takes p-1 = 1 step of the same: mesh wins the tie); launch 7000 + 1 x 200
    const double one = 1500 + 2048.0 / 50 + 7000 + 200;
    const double steps = double(tl.tbt_ns.size()), per_step = 2 * 4;  // dispatch + combine, four layers
    for (int d = 0; d < 2; ++d) EXPECT_NEAR(tl.decode.device[size_t(d)].comm_ns, steps * per_step * one, 1e-6) << d;
}

TEST(ExpertParallel, MemoryOfADeviceHoldsItsExpertsTheSharedWeightsAndItsSequencesKv) {
    Cluster c(2);
    const auto run = [&](int ep, int32_t batch) {
        return simulate_run(moe_shape(), ep_plan(ep, batch), 40, batch, ep_options(ep, batch, uniform()), c.hw).memory;
    };
    const MemoryBreakdown one = run(1, 4), two = run(2, 4), one_half = run(1, 2);
    const uint64_t expert_nz = 4 * 4 * (c.layout.nz_bytes(512, 1024, DType::F16) * 2 + c.layout.nz_bytes(1024, 512, DType::F16));
    EXPECT_EQ(two.weights_experts_bytes, expert_nz);  // 4 layers x 4 experts x (gate, up, down)
    EXPECT_EQ(one.weights_experts_bytes, 2 * expert_nz);
    EXPECT_EQ(one.weights_bytes - one.weights_experts_bytes, two.weights_bytes - two.weights_experts_bytes);
    EXPECT_EQ(two.kv_cache_bytes, one_half.kv_cache_bytes);  // 2 of the 4 sequences per device
    EXPECT_EQ(2 * two.kv_cache_bytes, one.kv_cache_bytes);
}

namespace {

// A PIM that re-reads the weights once per input vector (as the real models do for m > 1).
struct BatchedPim : fake::Pim {
    bool supports(const hw::OpShape& s) const override { return s.cls == hw::OpClass::GEMV || s.cls == hw::OpClass::GEMM; }
    hw::Cost estimate(const hw::OpShape& s) const override {
        hw::Cost c = fake::Pim::estimate(s);
        c.t_ns += double(s.m - 1) * double(s.weight_bytes) / internal_bytes_per_ns;
        return c;
    }
};

}  // namespace

TEST(ExpertParallel, AutoPutsAnExpertWithFewRowsOnPimAndOneWithManyOnTheNpu) {
    fake::Npu npu;
    BatchedPim pim;
    fake::Layout layout;
    SimHardware hw = npu_pim_hardware(&npu, &pim, &layout);
    RunOptions o = ep_options(1, 16, nullptr);
    o.placement.policy = Policy::AUTO;
    // the closed forms of a group of e gate experts (512 x 1024 f16 = 1 MiB each) with m rows each:
    // an expert goes to PIM while such a group of the layer's active experts is faster there
    const double w = 512.0 * 1024 * 2;
    const auto npu_ns = [&](double m, double e) {
        return std::max(e * 2 * m * 512 * 1024 / npu.flops_per_ns, e * (w + 2 * m * 1024 + 2 * m * 512) / npu.bytes_per_ns) + 1000;
    };
    const auto pim_ns = [&](double m, double e) { return e * m * w / 6400 + e * (2 * m * 1024 + 2 * m * 512) / 1600 + 500; };
    const double group = 8;  // ⌈8 (1 - (6/8)^16)⌉: the active experts of 16 tokens under uniform routing
    int64_t threshold = 0;
    for (int64_t m = 1; m <= 256 && threshold == 0; ++m)
        if (!(pim_ns(double(m), group) < npu_ns(double(m), group))) threshold = m;
    EXPECT_EQ(threshold, 5);
    const Placer placer(o.placement, hw);
    const ExpertOnPim on_pim = [&](const OpRecord& experts) { return placer.expert_on_pim(experts); };
    Plan p = plan_generation(moe_shape(), 16, 2, 16);  // decode of 16 tokens
    const OpRecord* gate = nullptr;
    for (const OpRecord& r : p.ops)
        if (r.phase == Phase::DECODE && r.role == WeightRole::FFN_GATE_EXPS) gate = &r;
    ASSERT_NE(gate, nullptr);
    EXPECT_EQ(gate->n_expert_active, 8);
    EXPECT_EQ(pim_row_threshold(*gate, on_pim), threshold);
    // expert 0 takes half the rows (p = 1: all 16 tokens); the others 1/14 each (2.3 rows, 2.5 when active)
    auto skew = std::make_shared<ExpertRouting>();
    skew->fractions.assign(4, std::vector<double>(8, 0.5 / 7));
    for (auto& f : skew->fractions) f[0] = 0.5;
    o.experts.routing = skew;
    RankExpertLoad l;
    apply_expert_load(p, moe_shape(), o.experts, 0, on_pim, &l);
    int groups = 0;
    for (const OpRecord& r : p.ops)
        if (r.phase == Phase::DECODE && r.role == WeightRole::FFN_GATE_EXPS) {
            ++groups;
            const double p7 = 1 - std::pow(1 - 1.0 / 7, 16);  // one cold expert active
            if (r.expert_group == graph::ExpertGroup::NPU) {
                EXPECT_EQ(r.m, 16);
                EXPECT_EQ(r.n_expert_active, 1);
                EXPECT_EQ(placer.place(r, to_op_shape(r)).kind, DeviceKind::NPU);
            } else {
                EXPECT_EQ(r.expert_group, graph::ExpertGroup::PIM);
                EXPECT_EQ(r.m, int64_t(std::ceil(7 * 16 / 7.0 - 1e-6)));  // 7 experts x 16 x 2/14 rows
                EXPECT_EQ(r.n_expert_active, int64_t(std::ceil(7 * p7 - 1e-6)));
                EXPECT_TRUE(r.sibling_of_prev);
                EXPECT_EQ(placer.place(r, to_op_shape(r)).kind, DeviceKind::PIM);
            }
        }
    EXPECT_EQ(groups, 2 * 4);
    EXPECT_NEAR(l.on_npu / 4, 1.0, 1e-12);
    EXPECT_NEAR(l.on_pim / 4, 7 * (1 - std::pow(1 - 1.0 / 7, 16)), 1e-12);
}

TEST(ExpertParallel, ZipfSkewBeyondOneOverKIsRefused) {
    EXPECT_THROW(zipf_routing(3.0, 4, 8, 2), Error);
    try {
        zipf_routing(3.0, 4, 8, 2);
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "--expert-skew = 3 gives expert 0 83.7 % of the routed rows, more than 1/k = 50.0 % (each "
                               "token picks 2 distinct experts) (allowed: a smaller skew)");
    }
    EXPECT_EQ(zipf_routing(0.0, 4, 8, 2).source, "uniform");
}
