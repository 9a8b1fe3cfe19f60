// Tensor and expert parallelism on the same ranks (--tp N --ep N; graph/parallel.h): rank 0's
// plan runs the attention, dense layers and shared experts exactly as under --tp N, over every
// sequence of the batch; its routed experts are E/N whole ones; no all-to-all, one all-reduce
// after each MoE layer's combine; each rank's experts get T·k/N rows under uniform routing; the
// memory holds E/N whole experts. --tp 2 --ep 4 runs tensor-parallel attention groups inside
// data-parallel attention; a tp that does not divide ep is refused by its message.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "core/error.h"
#include "fake_hw.h"
#include "graph/graph.h"
#include "graph/parallel.h"
#include "moe_mla_toy.h"
#include "sim/expert_load.h"
#include "sim/memory_accounting.h"
#include "sim/planner.h"
#include "sim/scale_out.h"

using namespace duet;
using namespace duet::sim;
using namespace duet::test;  // the toys and find

namespace {

constexpr int kN = 2;
constexpr int32_t kBatch = 4;

// Rank 0's plan of a stage split tp x ep ways, as the bench plans it.
Plan stage_plan(const ModelShape& s, int tp, int ep) {
    graph::GraphOptions go;
    go.tp = tp;
    go.ep = ep;
    return plan_parallel_generation(s, 16, 3, kBatch, go, 1);
}

// A routed expert's record (its matmuls and their SWIGLU), whose rows the routing sets.
bool routed(const Plan& p, size_t i) {
    const OpRecord& r = p.ops[i];
    if (r.kind == OpKind::MOE_MATMUL) return true;
    return r.kind == OpKind::SWIGLU && i > 0 && p.ops[i - 1].kind == OpKind::MOE_MATMUL;
}

RunOptions npu_only(int tp, int ep) {
    RunOptions o;
    o.placement.policy = Policy::NPU_ONLY;
    o.parallel.tp = tp;
    o.experts.ep = ep;
    o.experts.seqs_total = kBatch;
    o.experts.routing = std::make_shared<const ExpertRouting>();
    return o;
}

}  // namespace

TEST(MoeTpEp, RankRunsTheTensorParallelPlanWithWholeExpertsAndNoAllToAll) {
    for (const ModelShape& s : {mla_moe_shape(), gqa_moe_shape()}) {
        const Plan tp = stage_plan(s, kN, 1), both = stage_plan(s, kN, kN);
        ASSERT_EQ(both.ops.size(), tp.ops.size()) << s.name;  // the same records: no all-to-all added
        for (size_t i = 0; i < tp.ops.size(); ++i) {
            const OpRecord &a = both.ops[i], &t = tp.ops[i];
            ASSERT_EQ(a.kind, t.kind) << s.name << " record " << i;
            EXPECT_NE(a.kind, OpKind::ALL_TO_ALL);
            if (routed(tp, i)) continue;
            // attention, dense layers, shared experts, norms, collectives: as under --tp, every sequence
            EXPECT_EQ(a.m, t.m) << s.name << " " << graph::op_kind_name(a.kind) << " record " << i;
            EXPECT_EQ(a.n, t.n) << s.name << " " << graph::op_kind_name(a.kind) << " record " << i;
            EXPECT_EQ(a.k, t.k) << s.name << " " << graph::op_kind_name(a.kind) << " record " << i;
            EXPECT_DOUBLE_EQ(a.flops, t.flops) << s.name << " record " << i;
        }
        // one all-reduce over the N ranks right after each MoE layer's combine
        for (size_t i = 0; i + 1 < both.ops.size(); ++i)
            if (both.ops[i].kind == OpKind::MOE_COMBINE) {
                EXPECT_EQ(both.ops[i + 1].kind, OpKind::ALL_REDUCE) << s.name;
                EXPECT_EQ(both.ops[i + 1].k, kN);
            }
        // the routed experts are whole: gate/up give all n_ff_exp features, down reads them all
        EXPECT_EQ(find(both, Phase::DECODE, 1, OpKind::MOE_MATMUL, WeightRole::FFN_GATE_EXPS).n, s.n_ff_exp);
        EXPECT_EQ(find(both, Phase::DECODE, 1, OpKind::MOE_MATMUL, WeightRole::FFN_DOWN_EXPS).k, s.n_ff_exp);
        EXPECT_EQ(find(tp, Phase::DECODE, 1, OpKind::MOE_MATMUL, WeightRole::FFN_GATE_EXPS).n, s.n_ff_exp / kN);
        EXPECT_EQ(both.graph->ep.experts, (graph::Range{0, s.n_expert / kN}));
    }
}

TEST(MoeTpEp, EachRanksExpertsGetTheTokensTimesKOverNRowsOfUniformRouting) {
    const ModelShape s = mla_moe_shape();
    const fake::Rig rig;
    nlohmann::json report;
    const Plan p = plan_with_expert_loads(stage_plan(s, kN, kN), s, npu_only(kN, kN), rig.hw(), report);
    EXPECT_EQ(report["tp"], kN);
    EXPECT_EQ(report["ep"], kN);
    EXPECT_EQ(report["experts_per_device"], 8 / kN);
    EXPECT_EQ(report["placement"], "whole experts: device e holds experts [e*E/ep, (e+1)*E/ep), tensor-parallel attention");
    ASSERT_EQ(report["decode_rows_per_layer"].size(), size_t(kN));
    for (const auto& rows : report["decode_rows_per_layer"])
        EXPECT_NEAR(rows.get<double>(), double(kBatch) * 2 / kN, 1e-9);  // T = 4 tokens x k 2 / N
    ASSERT_EQ(p.ep_ranks.size(), size_t(kN - 1));
    for (const Plan* rank : {&p, &p.ep_ranks[0]}) {
        const OpRecord& gate = find(*rank, Phase::DECODE, 1, OpKind::MOE_MATMUL, WeightRole::FFN_GATE_EXPS);
        EXPECT_EQ(gate.m, kBatch * 2 / kN);
        EXPECT_EQ(gate.n, s.n_ff_exp);
        EXPECT_DOUBLE_EQ(gate.flops, 2.0 * double(gate.m) * double(s.n_ff_exp) * double(s.n_embd));
        for (const OpRecord& r : rank->ops) EXPECT_NE(r.kind, OpKind::ALL_TO_ALL);
    }
}

TEST(MoeTpEp, MemoryHoldsItsWholeExpertsAndTheTensorParallelKvOfEverySequence) {
    const ModelShape s = gqa_moe_shape();
    const fake::Rig rig;
    const SimHardware hw = rig.hw();
    const auto memory = [&](int tp, int ep) {
        const RunOptions o = npu_only(tp, ep);
        return account_memory(s, stage_plan(s, tp, ep), 64, kBatch, Placer(o.placement, hw), o, hw);
    };
    const MemoryBreakdown whole = memory(1, 1), tp = memory(kN, 1), both = memory(kN, kN);
    EXPECT_EQ(kN * both.weights_experts_bytes, whole.weights_experts_bytes);  // E/N of the experts
    EXPECT_EQ(both.kv_cache_bytes, tp.kv_cache_bytes);  // its KV heads of every sequence
    EXPECT_EQ(kN * both.kv_cache_bytes, whole.kv_cache_bytes);
    EXPECT_EQ(both.weights_bytes - both.weights_experts_bytes, tp.weights_bytes - tp.weights_experts_bytes);
}

// --tp 2 --ep 4: two data-parallel attention groups of two tensor-parallel ranks. Rank 0's plan is
// --tp 2's plan of its group's half of the batch with the dispatch and combine all-to-alls of
// expert parallelism inserted around each MoE layer's routed experts (whole, E/4 per rank); under
// uniform routing each rank's experts get T·k/4 rows and each rank sends as much as under --ep 4
// alone (it dispatches 1/2 of its group's tokens). In the timeline each all-reduce runs within a
// group of two ranks, each all-to-all among all four.
TEST(MoeTpEp, TensorParallelGroupsInsideDataParallelAttention) {
    EXPECT_EQ(graph::stage_ranks(2, 4), 4);
    EXPECT_EQ(graph::attention_dp(2, 4), 2);
    EXPECT_EQ(graph::attention_dp(kN, kN), 1);
    EXPECT_EQ(graph::attention_dp(1, 4), 4);
    EXPECT_EQ(graph::attention_dp(4, 1), 1);
    const ModelShape s = gqa_moe_shape();
    const auto plan = [&](int tp, int ep, int32_t batch) {
        graph::GraphOptions go;
        go.tp = tp;
        go.ep = ep;
        return plan_parallel_generation(s, 16, 3, batch, go, 1);
    };
    const Plan mixed = plan(2, 4, kBatch), group = plan(2, 1, kBatch / 2);
    std::vector<OpRecord> kept;
    int64_t all_to_all = 0;
    for (const OpRecord& r : mixed.ops)
        if (r.kind == OpKind::ALL_TO_ALL) {
            ++all_to_all;
            EXPECT_EQ(r.k, 4);
        } else {
            kept.push_back(r);
        }
    const int64_t moe_layers = s.n_layer - s.n_layer_dense_lead, forwards = int64_t(mixed.forwards.size());
    EXPECT_EQ(all_to_all, 2 * moe_layers * forwards);  // dispatch and combine
    ASSERT_EQ(kept.size(), group.ops.size());
    for (size_t i = 0; i < kept.size(); ++i) {
        const OpRecord &a = kept[i], &g = group.ops[i];
        ASSERT_EQ(a.kind, g.kind) << "record " << i;
        if (a.kind == OpKind::MOE_MATMUL || a.kind == OpKind::SWIGLU) continue;  // whole experts, routed rows
        EXPECT_EQ(a.m, g.m) << graph::op_kind_name(a.kind) << " record " << i;
        EXPECT_EQ(a.n, g.n) << graph::op_kind_name(a.kind) << " record " << i;
        EXPECT_EQ(a.k, g.k) << graph::op_kind_name(a.kind) << " record " << i;
    }
    EXPECT_EQ(find(mixed, Phase::DECODE, 1, OpKind::MOE_MATMUL, WeightRole::FFN_GATE_EXPS).n, s.n_ff_exp);
    EXPECT_EQ(mixed.graph->ep.experts, (graph::Range{0, s.n_expert / 4}));

    const fake::Cluster c(4);
    nlohmann::json report, report_ep;
    RunOptions o = npu_only(2, 4), o_ep = npu_only(1, 4);
    const Plan loaded = plan_with_expert_loads(mixed, s, o, c.hw, report);
    const Plan loaded_ep = plan_with_expert_loads(plan(1, 4, kBatch), s, o_ep, c.hw, report_ep);
    EXPECT_EQ(report["placement"], "whole experts: device e holds experts [e*E/ep, (e+1)*E/ep), attention in 2 "
                                   "data-parallel groups of 2 tensor-parallel devices");
    for (const auto& rows : report["decode_rows_per_layer"])
        EXPECT_NEAR(rows.get<double>(), double(kBatch) * 2 / 4, 1e-9);  // T = 4 tokens x k 2 / 4 ranks
    const auto messages = [](const Plan& p) {
        std::vector<int64_t> m;
        for (const OpRecord& r : p.ops)
            if (r.kind == OpKind::ALL_TO_ALL) m.push_back(r.m);
        return m;
    };
    EXPECT_EQ(messages(loaded), messages(loaded_ep));

    o.record_events = true;
    const Timeline tl = simulate_timeline(s, loaded, Placer(o.placement, c.hw), o, c.hw);
    int64_t reduces = 0, exchanges = 0;
    for (const TimelineEvent& e : tl.events) {
        if (e.name.find("all_reduce") != std::string::npos && e.name.find("ranks)") != std::string::npos) {
            EXPECT_NE(e.name.find(", 2 ranks)"), std::string::npos) << e.name;
            ++reduces;
        }
        if (e.name.find("all_to_all") != std::string::npos && e.name.find("ranks)") != std::string::npos) {
            EXPECT_NE(e.name.find(", 4 ranks)"), std::string::npos) << e.name;
            ++exchanges;
        }
    }
    EXPECT_GT(reduces, 0);
    EXPECT_GT(exchanges, 0);
}

TEST(MoeTpEp, TensorRanksThatDoNotDivideTheExpertRanksAreRefused) {
    graph::GraphOptions go;
    go.tp = 4;
    go.ep = 2;
    try {
        graph::build_graph(gqa_moe_shape(), go);
        FAIL() << "--tp 4 with --ep 2 was accepted";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(),
                     "--tp 4 with --ep 2: the tensor-parallel groups must tile the expert-parallel ranks (allowed: "
                     "--ep 1, or --ep a multiple of 4: --ep / --tp groups of 4 ranks, each running its sequences' "
                     "attention split over its ranks; or --tp 1 with --ep N)");
    }
}
