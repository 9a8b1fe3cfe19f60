// The tensor/pipeline split (graph/parallel.h) and the tensor-parallel graph pass.
#include <gtest/gtest.h>

#include <map>

#include "core/error.h"
#include "graph/graph.h"
#include "graph/parallel.h"
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

}  // namespace
}  // namespace duet::graph
