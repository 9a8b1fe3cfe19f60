// Tensor parallelism of experts and latent attention in the simulator (graph/shard_tensor_parallel.h
// through the planner, memory accounting and the expert-load pricing): the ranks' records add up
// to the whole model's where the pass splits and repeat it where it replicates, one all-reduce
// follows each MoE layer's combine, a rank holds 1/tp of every expert and the whole latent KV,
// and the routed rows per expert do not change with tp.
#include <gtest/gtest.h>

#include <memory>
#include <set>

#include "fake_hw.h"
#include "graph/graph.h"
#include "graph/tensor_catalogue.h"
#include "moe_mla_toy.h"
#include "sim/expert_load.h"
#include "sim/memory_accounting.h"
#include "sim/planner.h"

using namespace duet;
using namespace duet::sim;
using duet::test::find;
using duet::test::gqa_moe_shape;
using duet::test::mla_moe_shape;

namespace {

constexpr int kTp = 2;

Plan rank_plan(const ModelShape& s, int rank, int32_t batch = 1, bool flashcomm = false) {
    graph::GraphOptions go;
    go.tp = kTp;
    go.tp_rank = rank;
    go.flashcomm = flashcomm;
    return plan_generation(s, 16, 3, batch, go);
}

// The records of plan `p` the sums compare: one kind, and for weight records one role.
struct Sum {
    double flops = 0;
    uint64_t weight_bytes = 0;
};
Sum sum_of(const Plan& p, OpKind kind, WeightRole role) {
    Sum s;
    for (const OpRecord& r : p.ops)
        if (r.kind == kind && r.role == role) {
            s.flops += r.flops;
            s.weight_bytes += r.weight_bytes;
        }
    return s;
}

RunOptions npu_only(int tp) {
    RunOptions o;
    o.placement.policy = Policy::NPU_ONLY;
    o.parallel.tp = tp;
    return o;
}

MemoryBreakdown memory_of(const ModelShape& s, const Plan& p, int tp) {
    const fake::Rig rig;
    const SimHardware hw = rig.hw();
    const RunOptions o = npu_only(tp);
    return account_memory(s, p, 64, 2, Placer(o.placement, hw), o, hw);
}

}  // namespace

TEST(MoeMlaTensorParallel, RanksRecordsAddUpToTheWholeModelsAndReplicateTheRest) {
    const ModelShape s = mla_moe_shape();
    const Plan whole = plan_generation(s, 16, 3, 2);
    const Plan r0 = rank_plan(s, 0, 2), r1 = rank_plan(s, 1, 2);
    const std::pair<OpKind, WeightRole> split[] = {
        {OpKind::MOE_MATMUL, WeightRole::FFN_GATE_EXPS}, {OpKind::MOE_MATMUL, WeightRole::FFN_UP_EXPS},
        {OpKind::MOE_MATMUL, WeightRole::FFN_DOWN_EXPS}, {OpKind::MATMUL, WeightRole::FFN_GATE_SHEXP},
        {OpKind::MATMUL, WeightRole::FFN_UP_SHEXP},      {OpKind::MATMUL, WeightRole::FFN_DOWN_SHEXP},
        {OpKind::MATMUL, WeightRole::ATTN_Q_B},          {OpKind::HEAD_MATMUL, WeightRole::ATTN_K_B},
        {OpKind::HEAD_MATMUL, WeightRole::ATTN_V_B},     {OpKind::MATMUL, WeightRole::ATTN_OUT},
        {OpKind::MATMUL, WeightRole::FFN_GATE},          {OpKind::MATMUL, WeightRole::FFN_DOWN},
        {OpKind::MLA_ATTENTION, WeightRole::NONE},       {OpKind::SWIGLU, WeightRole::NONE}};
    for (const auto& [kind, role] : split) {
        const Sum w = sum_of(whole, kind, role), a = sum_of(r0, kind, role), b = sum_of(r1, kind, role);
        ASSERT_GT(w.flops, 0) << graph::weight_role_name(role);
        EXPECT_DOUBLE_EQ(kTp * a.flops, w.flops) << graph::weight_role_name(role);  // equal shards
        EXPECT_DOUBLE_EQ(a.flops + b.flops, w.flops) << graph::weight_role_name(role);
        if (kind != OpKind::MLA_ATTENTION)  // its "weights" are the cached latent rows: whole on each rank
            EXPECT_EQ(a.weight_bytes + b.weight_bytes, w.weight_bytes) << graph::weight_role_name(role);
        else
            EXPECT_EQ(a.weight_bytes, w.weight_bytes);
    }
    const std::pair<OpKind, WeightRole> replicated[] = {
        {OpKind::MATMUL, WeightRole::ATTN_Q_A}, {OpKind::MATMUL, WeightRole::ATTN_KV_A_MQA},
        {OpKind::MATMUL, WeightRole::FFN_GATE_INP}, {OpKind::MOE_ROUTE, WeightRole::NONE},
        {OpKind::MATMUL, WeightRole::LM_HEAD}, {OpKind::KV_WRITE, WeightRole::NONE}};
    for (const auto& [kind, role] : replicated) {
        const Sum w = sum_of(whole, kind, role), a = sum_of(r0, kind, role);
        EXPECT_DOUBLE_EQ(a.flops, w.flops) << op_kind_name(kind) << " " << graph::weight_role_name(role);
        EXPECT_EQ(a.weight_bytes, w.weight_bytes) << op_kind_name(kind) << " " << graph::weight_role_name(role);
    }
    // every rank routes every token to the same experts: the rows and the experts read are the whole model's
    for (Phase ph : {Phase::PREFILL, Phase::DECODE}) {
        const OpRecord &w = find(whole, ph, 1, OpKind::MOE_MATMUL, WeightRole::FFN_UP_EXPS),
                       &a = find(r0, ph, 1, OpKind::MOE_MATMUL, WeightRole::FFN_UP_EXPS);
        EXPECT_EQ(a.m, w.m);
        EXPECT_EQ(a.n_expert_active, w.n_expert_active);
        EXPECT_EQ(kTp * a.n, w.n);
    }
    EXPECT_EQ(find(r0, Phase::DECODE, 1, OpKind::MLA_ATTENTION).n_head, 4 / kTp);
}

TEST(MoeMlaTensorParallel, OneAllReduceAfterEachMoeLayersCombine) {
    for (const ModelShape& s : {mla_moe_shape(), gqa_moe_shape()}) {
        const Plan p = rank_plan(s, 0);
        for (const ForwardSpan& fw : p.forwards) {
            int reduces = 0, combines = 0;
            for (size_t i = fw.begin; i < fw.end; ++i) {
                const OpRecord& r = p.ops[i];
                reduces += r.kind == OpKind::ALL_REDUCE;
                if (r.kind != OpKind::MOE_COMBINE) continue;
                ++combines;
                ASSERT_LT(i + 1, fw.end);
                EXPECT_EQ(p.ops[i + 1].kind, OpKind::ALL_REDUCE) << s.name << " layer " << r.layer;
                EXPECT_EQ(p.ops[i + 1].layer, r.layer);
                EXPECT_EQ(p.ops[i + 1].k, kTp);  // the group
            }
            EXPECT_EQ(combines, 2) << s.name;  // layers 1 and 2
            EXPECT_EQ(reduces, 2 * 3) << s.name;  // per layer: the attention output and the FFN (dense or MoE)
        }
        // FlashComm: a reduce-scatter and an all-gather in place of each all-reduce
        const Plan fc = rank_plan(s, 0, 1, true);
        const OpTrace& ops = fc.ops;
        for (size_t i = 0; i + 2 < ops.size(); ++i)
            if (ops[i].kind == OpKind::MOE_COMBINE) {
                EXPECT_EQ(ops[i + 1].kind, OpKind::REDUCE_SCATTER) << s.name;
                EXPECT_EQ(ops[i + 2].kind, OpKind::ALL_GATHER) << s.name;
            }
    }
}

TEST(MoeMlaTensorParallel, RankHoldsASliceOfEveryExpertAndTheWholeLatentKv) {
    const ModelShape s = mla_moe_shape();
    const Plan whole_plan = plan_generation(s, 60, 4, 2);
    const MemoryBreakdown whole = memory_of(s, whole_plan, 1);
    const MemoryBreakdown m0 = memory_of(s, rank_plan(s, 0), kTp), m1 = memory_of(s, rank_plan(s, 1), kTp);
    EXPECT_EQ(kTp * m0.weights_experts_bytes, whole.weights_experts_bytes);
    EXPECT_EQ(m0.weights_experts_bytes + m1.weights_experts_bytes, whole.weights_experts_bytes);
    // the split matrices add up to the whole model's; the rest (q_a, kv_a, router, lm-head,
    // embedding, norms) is on every rank: sum over ranks = whole + (tp - 1) x the replicated part
    const fake::Layout layout;
    uint64_t split = 0;
    for (const graph::MatrixUse& u : graph::matrices(*whole_plan.graph))
        if (graph::weight_spec(u.role).tp != graph::TpSplit::REPLICATED)
            split += uint64_t(u.count) * layout.nz_bytes(u.n, u.k, s.weight_dtype);
    const uint64_t replicated = whole.weights_bytes - split;
    EXPECT_GT(replicated, 0u);
    EXPECT_EQ(m0.weights_bytes + m1.weights_bytes, whole.weights_bytes + (kTp - 1) * replicated);
    // the latent row is whole on every rank
    EXPECT_TRUE(m0.kv_cache_latent);
    EXPECT_EQ(m0.kv_cache_bytes, whole.kv_cache_bytes);
}

TEST(MoeMlaTensorParallel, GroupedQueryRankHoldsItsKvHeads) {
    const ModelShape s = gqa_moe_shape();
    const MemoryBreakdown whole = memory_of(s, plan_generation(s, 16, 3, 1), 1);
    const MemoryBreakdown m0 = memory_of(s, rank_plan(s, 0), kTp);
    EXPECT_FALSE(m0.kv_cache_latent);
    EXPECT_EQ(kTp * m0.kv_cache_bytes, whole.kv_cache_bytes);  // 1 of the 2 KV heads
    EXPECT_EQ(kTp * m0.weights_experts_bytes, whole.weights_experts_bytes);
}

TEST(MoeMlaTensorParallel, ExpertLoadsKeepTheRowsAndTheRanksWidths) {
    const ModelShape s = mla_moe_shape();
    // expert 0 takes 70 % of the routed rows: every token picks it (k f = 1.4, capped at 1), so the
    // layer's rows are fewer than tokens x k and the experts' activation is re-priced
    auto routing = std::make_shared<ExpertRouting>();
    routing->source = "test";
    std::vector<double> f(8, 0.3 / 7);
    f[0] = 0.7;
    routing->fractions.assign(3, f);
    ExpertLoadOptions o;
    o.routing = routing;
    o.seqs_total = 4;
    Plan whole = plan_generation(s, 16, 3, 4), rank = rank_plan(s, 0, 4);
    apply_expert_load(whole, s, o, 0, nullptr, nullptr);
    apply_expert_load(rank, s, o, 0, nullptr, nullptr);
    for (Phase ph : {Phase::PREFILL, Phase::DECODE}) {
        const OpRecord &w = find(whole, ph, 1, OpKind::MOE_MATMUL, WeightRole::FFN_GATE_EXPS),
                       &a = find(rank, ph, 1, OpKind::MOE_MATMUL, WeightRole::FFN_GATE_EXPS);
        EXPECT_EQ(a.m, w.m);
        EXPECT_LT(a.m, 2 * 4 * (ph == Phase::PREFILL ? 16 : 1));
        EXPECT_EQ(a.n_expert_active, w.n_expert_active);
        EXPECT_EQ(kTp * a.weight_bytes, w.weight_bytes);
        EXPECT_DOUBLE_EQ(kTp * a.flops, w.flops);
    }
    // the routed experts' SWIGLU: the routed rows, over the rank's 12 of each expert's 24 features
    std::set<int64_t> widths;
    for (size_t i = 1; i < rank.ops.size(); ++i)
        if (rank.ops[i].kind == OpKind::SWIGLU && rank.ops[i - 1].kind == OpKind::MOE_MATMUL)
            widths.insert(rank.ops[i].n);
    EXPECT_EQ(widths, (std::set<int64_t>{24 / kTp}));
}

TEST(MoeMlaTensorParallel, ExpertReportSaysEveryDeviceHoldsASliceOfEveryExpert) {
    const ModelShape s = mla_moe_shape();
    const fake::Rig rig;
    RunOptions o = npu_only(kTp);
    o.experts.routing = std::make_shared<const ExpertRouting>();
    nlohmann::json report;
    const Plan p = plan_with_expert_loads(rank_plan(s, 0), s, o, rig.hw(), report);
    EXPECT_EQ(report["tp"], kTp);
    EXPECT_EQ(report["ep"], 1);
    EXPECT_EQ(report["experts_per_device"], 8);
    EXPECT_EQ(report["placement"], "tensor parallel: every device holds 1/2 of every expert's features");
    EXPECT_NEAR(report["decode_rows_per_layer"][0].get<double>(), 2.0, 1e-9);  // 1 token x k 2, as on one device
    EXPECT_EQ(find(p, Phase::DECODE, 1, OpKind::MOE_MATMUL, WeightRole::FFN_UP_EXPS).n, 24 / kTp);
}
