// The tensor/pipeline split (graph/parallel.h) and the tensor-parallel graph pass.
#include <gtest/gtest.h>

#include <map>

#include "core/error.h"
#include "graph/graph.h"
#include "graph/parallel.h"
#include "graph/shard_tensor_parallel.h"
#include "sim/planner.h"
#include "../error_message.h"

namespace duet::graph {
namespace {

ModelShape shape(int64_t n_head = 8, int64_t n_head_kv = 4, int64_t n_ff = 96) {
    ModelShape s;
    s.name = "toy";
    s.n_vocab = 50;
    s.n_embd = 32;
    s.n_layer = 3;
    s.n_head = n_head;
    s.n_head_kv = n_head_kv;
    s.head_dim = 4;
    s.n_ff = n_ff;
    return s;
}

using test::error_of;

TEST(TpShard, HeadsAndFfnSplitEvenly) {
    const TpShard a = tp_shard(shape(), 2, 1);
    EXPECT_EQ(a.q_heads, (Range{4, 4}));
    EXPECT_EQ(a.kv_heads, (Range{2, 2}));
    EXPECT_EQ(a.ff, (Range{48, 48}));
}

TEST(TpShard, MoreRanksThanKvHeadsReplicatesTheHeadTheQueriesRead) {
    // 8 query heads, 2 KV heads (groups of 4), tp 4: ranks 0,1 read KV head 0; ranks 2,3 head 1.
    const ModelShape s = shape(8, 2);
    for (int r = 0; r < 4; ++r) {
        const TpShard sh = tp_shard(s, 4, r);
        EXPECT_EQ(sh.q_heads, (Range{2 * r, 2}));
        EXPECT_EQ(sh.kv_heads, (Range{r / 2, 1})) << r;
    }
}

TEST(TpShard, FfnRangesFollowTheBlockAndCoverEveryFeature) {
    // 96 features in blocks of 32 over 2 ranks: 3 blocks -> 1 and 2 blocks.
    const TpShard r0 = tp_shard(shape(), 2, 0, 32), r1 = tp_shard(shape(), 2, 1, 32);
    EXPECT_EQ(r0.ff, (Range{0, 32}));
    EXPECT_EQ(r1.ff, (Range{32, 64}));
}

TEST(TpShard, RefusesSplitsTheShapeDoesNotAllow) {
    EXPECT_EQ(error_of([] { tp_shard(shape(), 3, 0); }),
              "--tp = 3 does not divide the 8 attention heads of 'toy' (allowed: a divisor of 8)");
    EXPECT_EQ(error_of([] { tp_shard(shape(8, 8), 4, 0); }), "(no error)");
    EXPECT_EQ(error_of([] { tp_shard(shape(12, 6), 4, 0); }),
              "--tp = 4 and the 6 KV heads of 'toy' neither divide each other (allowed: a divisor or a multiple of 6 "
              "that divides 12)");
    EXPECT_EQ(error_of([] { tp_shard(shape(), 0, 0); }), "--tp = 0 is not allowed (allowed: 1 to 1024)");
    EXPECT_EQ(error_of([] { tp_shard(shape(), 2, 2); }), "tensor-parallel rank 2 is not allowed (allowed: 0 to 1)");
    EXPECT_EQ(error_of([] { tp_shard(shape(8, 4, 100), 2, 0, 32); }),
              "the FFN width 100 of 'toy' is not a multiple of its block of 32 features");
    EXPECT_EQ(error_of([] { tp_shard(shape(8, 4, 64), 4, 0, 32); }),
              "--tp = 4 is more than the 2 blocks of 32 FFN features of 'toy' (allowed: 1 to 2)");
}

TEST(PpStage, LayersSplitIntoContiguousStages) {
    ModelShape s = shape();
    s.n_layer = 7;
    EXPECT_EQ(pp_stage_layers(s, 3, 0), (Range{0, 2}));
    EXPECT_EQ(pp_stage_layers(s, 3, 1), (Range{2, 2}));
    EXPECT_EQ(pp_stage_layers(s, 3, 2), (Range{4, 3}));
    EXPECT_EQ(error_of([&] { pp_stage_layers(s, 8, 0); }),
              "--pp = 8 is not allowed for the 7 layers of 'toy' (allowed: 1 to 7)");
}

// Weight elements per role, summed over the matmul nodes of a graph.
std::map<WeightRole, int64_t> weight_elems(const Graph& g) {
    std::map<WeightRole, int64_t> m;
    for (const Node& n : g.nodes)
        if (n.kind == OpKind::MATMUL) m[n.role] += n.n * n.k;
    return m;
}

TEST(ShardTensorParallel, RanksTogetherHoldEachShardedMatrixOnceAndReplicateTheRest) {
    const ModelShape s = shape();
    const auto whole = weight_elems(build_graph(s));
    std::map<WeightRole, int64_t> sum;
    for (int r = 0; r < 4; ++r) {
        GraphOptions o;
        o.tp = 4;
        o.tp_rank = r;
        for (auto [role, e] : weight_elems(build_graph(s, o))) sum[role] += e;
    }
    for (WeightRole role : {WeightRole::ATTN_Q, WeightRole::ATTN_K, WeightRole::ATTN_V, WeightRole::ATTN_OUT,
                            WeightRole::FFN_GATE, WeightRole::FFN_UP, WeightRole::FFN_DOWN})
        EXPECT_EQ(sum[role], whole.at(role)) << weight_role_name(role);
    EXPECT_EQ(sum[WeightRole::LM_HEAD], 4 * whole.at(WeightRole::LM_HEAD));
}

TEST(ShardTensorParallel, RowParallelOutputsAreCombinedBeforeTheResidual) {
    GraphOptions o;
    o.tp = 2;
    o.tp_rank = 1;
    const Graph g = build_graph(shape(), o);
    EXPECT_EQ(g.shape.n_head, 4);
    EXPECT_EQ(g.shape.n_head_kv, 2);
    EXPECT_EQ(g.shape.n_ff, 48);
    EXPECT_EQ(g.tp.rank, 1);
    int reduces = 0;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        const Node& n = g.nodes[i];
        if (n.kind != OpKind::MATMUL || (n.role != WeightRole::ATTN_OUT && n.role != WeightRole::FFN_DOWN)) continue;
        const Node& c = g.nodes[i + 1];
        ASSERT_EQ(c.kind, OpKind::ALL_REDUCE);
        EXPECT_EQ(c.in[0], n.out[0]);
        EXPECT_EQ(g.root(c.out[0]), g.root(n.out[0]));  // in place
        EXPECT_EQ(c.k, 2);
        const Node& add = g.nodes[i + 2];
        ASSERT_EQ(add.kind, OpKind::ADD);
        EXPECT_EQ(add.in[1], c.out[0]);  // the residual reads the reduced sum
        ++reduces;
    }
    EXPECT_EQ(reduces, 2 * 3);
}

TEST(ShardTensorParallel, FlashcommReplacesEachAllReduceWithReduceScatterAndAllGather) {
    GraphOptions o;
    o.tp = 2;
    o.flashcomm = true;
    const Graph g = build_graph(shape(), o);
    std::map<OpKind, int> count;
    for (const Node& n : g.nodes) ++count[n.kind];
    EXPECT_EQ(count[OpKind::ALL_REDUCE], 0);
    EXPECT_EQ(count[OpKind::REDUCE_SCATTER], 6);
    EXPECT_EQ(count[OpKind::ALL_GATHER], 6);
}

TEST(ShardTensorParallel, FusionAfterShardingFusesTheLocalMatrices) {
    GraphOptions o;
    o.tp = 2;
    o.fuse = true;
    const Graph g = build_graph(shape(), o);
    int fused = 0;
    for (const Node& n : g.nodes) {
        if (n.kind != OpKind::MATMUL || n.role != WeightRole::ATTN_QKV) continue;
        EXPECT_EQ(n.n, (4 + 2 + 2) * 4);
        ++fused;
    }
    EXPECT_EQ(fused, 3);
}

TEST(ShardTensorParallel, PlannerFlopsOfTheRanksAddUpToTheWholeModelsForShardedOps) {
    const ModelShape s = shape();
    sim::OpTrace whole, parts;
    sim::plan_forward(build_graph(s), 1, 5, 3, sim::Phase::PREFILL, whole);
    for (int r = 0; r < 2; ++r) {
        GraphOptions o;
        o.tp = 2;
        o.tp_rank = r;
        sim::plan_forward(build_graph(s, o), 1, 5, 3, sim::Phase::PREFILL, parts);
    }
    const auto flops = [](const sim::OpTrace& t, OpKind k) {
        double f = 0;
        for (const auto& r : t)
            if (r.kind == k) f += r.flops;
        return f;
    };
    for (OpKind k : {OpKind::ATTENTION, OpKind::SWIGLU, OpKind::ROPE})
        EXPECT_DOUBLE_EQ(flops(parts, k), flops(whole, k)) << op_kind_name(k);
    EXPECT_DOUBLE_EQ(flops(parts, OpKind::RMSNORM), 2 * flops(whole, OpKind::RMSNORM));  // replicated
}

// A Mixture-of-Experts shape with latent attention (DeepSeek-V2/V3's block, test sizes): 4 heads
// of 16 + 8, v_head 16, 6 experts of 48 features and a shared expert of 32, the first layer dense.
ModelShape moe_mla_shape() {
    ModelShape s = shape(4, 4, 96);
    s.head_dim = 24;
    s.q_lora_rank = 16;
    s.kv_lora_rank = 32;
    s.qk_rope_head_dim = 8;
    s.qk_nope_head_dim = 16;
    s.v_head_dim = 16;
    s.n_expert = 6;
    s.n_expert_used = 2;
    s.n_ff_exp = 48;
    s.n_ff_shexp = 32;
    s.n_layer_dense_lead = 1;
    return s;
}

TEST(TpShard, ExpertFfnsSplitLikeTheDenseOne) {
    const TpShard sh = tp_shard(moe_mla_shape(), 2, 1);
    EXPECT_EQ(sh.q_heads, (Range{2, 2}));
    EXPECT_EQ(sh.ff_exp, (Range{24, 24}));
    EXPECT_EQ(sh.ff_shexp, (Range{16, 16}));
    EXPECT_EQ(tp_shard(shape(), 2, 1).ff_exp, (Range{}));  // dense: no expert ranges
    EXPECT_EQ(error_of([] { tp_shard(moe_mla_shape(), 2, 0, 32); }),
              "the expert FFN width 48 of 'toy' is not a multiple of its block of 32 features");
    ModelShape s = moe_mla_shape();
    s.n_ff_exp = 32;
    EXPECT_EQ(error_of([&] { tp_shard(s, 2, 0, 32); }),
              "--tp = 2 is more than the 1 blocks of 32 expert FFN features of 'toy' (allowed: 1 to 1)");
    s.n_ff_exp = 64;
    EXPECT_EQ(error_of([&] { tp_shard(s, 2, 0, 32); }),
              "--tp = 2 is more than the 1 blocks of 32 shared-expert FFN features of 'toy' (allowed: 1 to 1)");
}

// Weight elements per role over the weight nodes (a MOE_MATMUL counts one expert, a
// HEAD_MATMUL every local head).
std::map<WeightRole, int64_t> moe_mla_weight_elems(const Graph& g) {
    std::map<WeightRole, int64_t> m = weight_elems(g);
    for (const Node& n : g.nodes) {
        if (n.kind == OpKind::MOE_MATMUL) m[n.role] += n.n * n.k;
        if (n.kind == OpKind::HEAD_MATMUL) m[n.role] += g.shape.n_head * n.n * n.k;
    }
    return m;
}

TEST(ShardTensorParallel, ExpertsAndLatentAttentionSplitAcrossRanks) {
    const ModelShape s = moe_mla_shape();
    const Graph full = build_graph(s);
    const auto whole = moe_mla_weight_elems(full);
    std::map<WeightRole, int64_t> sum;
    for (int r = 0; r < 2; ++r) {
        const Graph g = ShardTensorParallel(2, r, false).run(full);
        EXPECT_EQ(g.shape.n_head, 2);
        EXPECT_EQ(g.shape.n_ff_exp, 24);
        EXPECT_EQ(g.shape.n_ff_shexp, 16);
        for (auto [role, e] : moe_mla_weight_elems(g)) sum[role] += e;
        for (const Node& n : g.nodes) {
            const int64_t width = n.out.empty() ? 0 : g.tensors[size_t(n.out[0])].width;
            switch (n.kind) {
                case OpKind::KV_WRITE: EXPECT_EQ(n.n, 32 + 8); break;  // the whole latent row on every rank
                case OpKind::ROPE: EXPECT_EQ(n.n, (2 + 1) * 8); break;
                case OpKind::MLA_ATTENTION: EXPECT_EQ(width, 2 * 32); break;
                case OpKind::HEAD_MATMUL: EXPECT_EQ(width, 2 * n.n); break;
                case OpKind::MOE_MATMUL: EXPECT_EQ(width, 2 * (n.role == WeightRole::FFN_DOWN_EXPS ? 32 : 24)); break;
                default: break;
            }
        }
    }
    for (WeightRole role : {WeightRole::ATTN_Q_B, WeightRole::ATTN_K_B, WeightRole::ATTN_V_B, WeightRole::ATTN_OUT,
                            WeightRole::FFN_GATE_EXPS, WeightRole::FFN_UP_EXPS, WeightRole::FFN_DOWN_EXPS,
                            WeightRole::FFN_GATE_SHEXP, WeightRole::FFN_UP_SHEXP, WeightRole::FFN_DOWN_SHEXP,
                            WeightRole::FFN_GATE, WeightRole::FFN_DOWN})
        EXPECT_EQ(sum[role], whole.at(role)) << weight_role_name(role);
    for (WeightRole role : {WeightRole::ATTN_Q_A, WeightRole::ATTN_KV_A_MQA, WeightRole::FFN_GATE_INP})
        EXPECT_EQ(sum[role], 2 * whole.at(role)) << weight_role_name(role);  // replicated
}

TEST(ShardTensorParallel, AnExpertLayerIsReducedOnceAfterItsCombine) {
    const Graph g = ShardTensorParallel(2, 0, false).run(build_graph(moe_mla_shape()));
    std::vector<OpKind> before;  // the kind of the node before each ALL_REDUCE
    for (size_t i = 1; i < g.nodes.size(); ++i)
        if (g.nodes[i].kind == OpKind::ALL_REDUCE) before.push_back(g.nodes[i - 1].kind);
    // layer 0 (dense): attention output, FFN down; layers 1 and 2: attention output, MOE_COMBINE
    const std::vector<OpKind> want = {OpKind::MATMUL, OpKind::MATMUL,      OpKind::MATMUL,
                                      OpKind::MOE_COMBINE, OpKind::MATMUL, OpKind::MOE_COMBINE};
    EXPECT_EQ(before, want);
}

TEST(ShardTensorParallel, PlannerWalksTheShardedExpertAndLatentGraph) {
    const ModelShape s = moe_mla_shape();
    sim::OpTrace whole, parts;
    sim::plan_forward(build_graph(s), 1, 5, 3, sim::Phase::PREFILL, whole);
    for (int r = 0; r < 2; ++r)
        sim::plan_forward(ShardTensorParallel(2, r, false).run(build_graph(s)), 1, 5, 3, sim::Phase::PREFILL, parts);
    const auto flops = [](const sim::OpTrace& t, OpKind k) {
        double f = 0;
        for (const auto& r : t)
            if (r.kind == k) f += r.flops;
        return f;
    };
    for (OpKind k : {OpKind::MOE_MATMUL, OpKind::HEAD_MATMUL, OpKind::MLA_ATTENTION, OpKind::SWIGLU})
        EXPECT_DOUBLE_EQ(flops(parts, k), flops(whole, k)) << op_kind_name(k);
    EXPECT_DOUBLE_EQ(flops(parts, OpKind::MOE_ROUTE), 2 * flops(whole, OpKind::MOE_ROUTE));  // replicated
}

}  // namespace
}  // namespace duet::graph
