// The pipeline-parallel pass (graph/shard_pipeline_parallel.h): which layers land in which
// stage, and the send/recv pair's bytes = the boundary's activations.
#include <gtest/gtest.h>

#include <set>

#include "core/error.h"
#include "graph/graph.h"
#include "graph/shard_pipeline_parallel.h"
#include "sim/planner.h"
#include "../error_message.h"

namespace duet::graph {
namespace {

ModelShape shape(int64_t n_layer = 7) {
    ModelShape s;
    s.name = "toy";
    s.n_vocab = 50;
    s.n_embd = 32;
    s.n_layer = n_layer;
    s.n_head = 8;
    s.n_head_kv = 4;
    s.head_dim = 4;
    s.n_ff = 96;
    return s;
}

Graph stage_graph(int pp, int stage, int tp = 1) {
    GraphOptions o;
    o.pp = pp;
    o.pp_stage = stage;
    o.tp = tp;
    return build_graph(shape(), o);
}

std::set<int32_t> layers_of(const Graph& g) {
    std::set<int32_t> out;
    for (const Node& n : g.nodes)
        if (n.layer >= 0) out.insert(n.layer);
    return out;
}

int count(const Graph& g, OpKind k) {
    int c = 0;
    for (const Node& n : g.nodes) c += n.kind == k ? 1 : 0;
    return c;
}

TEST(ShardPipelineParallel, SevenLayersOverThreeStagesLandTwoTwoThree) {
    EXPECT_EQ(layers_of(stage_graph(3, 0)), (std::set<int32_t>{0, 1}));
    EXPECT_EQ(layers_of(stage_graph(3, 1)), (std::set<int32_t>{2, 3}));
    EXPECT_EQ(layers_of(stage_graph(3, 2)), (std::set<int32_t>{4, 5, 6}));
    EXPECT_EQ(stage_graph(3, 2).pp.layers, (Range{4, 3}));
}

TEST(ShardPipelineParallel, EmbedOnTheFirstStageHeadOnTheLastAndP2pBetween) {
    const Graph s0 = stage_graph(3, 0), s1 = stage_graph(3, 1), s2 = stage_graph(3, 2);
    EXPECT_EQ(s0.nodes.front().kind, OpKind::EMBED);
    EXPECT_EQ(count(s0, OpKind::EMBED) + count(s1, OpKind::EMBED) + count(s2, OpKind::EMBED), 1);
    EXPECT_EQ(count(s0, OpKind::OUTPUT) + count(s1, OpKind::OUTPUT), 0);
    EXPECT_EQ(s2.nodes.back().kind, OpKind::OUTPUT);
    EXPECT_EQ(count(s0, OpKind::RECV), 0);
    EXPECT_EQ(count(s2, OpKind::SEND), 0);
    // stage 1: RECV first (from stage 0), SEND last (to stage 2)
    ASSERT_EQ(s1.nodes.front().kind, OpKind::RECV);
    EXPECT_EQ(s1.nodes.front().k, 0);
    EXPECT_EQ(s1.nodes.front().layer, 2);
    ASSERT_EQ(s1.nodes.back().kind, OpKind::SEND);
    EXPECT_EQ(s1.nodes.back().k, 2);
    EXPECT_EQ(s1.nodes.back().layer, 3);
    // the first norm of stage 1 reads what RECV wrote; SEND sends the last residual ADD's output
    EXPECT_EQ(s1.nodes[1].kind, OpKind::RMSNORM);
    EXPECT_EQ(s1.nodes[1].in[0], s1.nodes.front().out[0]);
    const Node& last_add = s1.nodes[s1.nodes.size() - 2];
    EXPECT_EQ(last_add.kind, OpKind::ADD);
    EXPECT_EQ(s1.nodes.back().in[0], last_add.out[0]);
}

TEST(ShardPipelineParallel, StagesTogetherHoldEveryNodeOfTheWholeGraphOnce) {
    const Graph whole = build_graph(shape());
    size_t nodes = 0;
    for (int s = 0; s < 3; ++s) nodes += stage_graph(3, s).nodes.size();
    EXPECT_EQ(nodes, whole.nodes.size() + 2 * 2);  // plus one SEND and one RECV per boundary
}

TEST(ShardPipelineParallel, P2pBytesAreTheBoundaryActivations) {
    // prefill of 2 sequences x 5 tokens: the residual is 10 rows x 32 f32 = 1280 bytes
    sim::OpTrace t0, t1;
    sim::plan_forward(stage_graph(2, 0), 2, 0, 5, sim::Phase::PREFILL, t0);
    sim::plan_forward(stage_graph(2, 1), 2, 0, 5, sim::Phase::PREFILL, t1);
    ASSERT_EQ(t0.back().kind, OpKind::SEND);
    ASSERT_EQ(t1.front().kind, OpKind::RECV);
    EXPECT_EQ(t0.back().in_bytes, 10u * 32u * 4u);
    EXPECT_EQ(t1.front().out_bytes, 10u * 32u * 4u);
    EXPECT_EQ(t0.back().m, 10);
    // decode: one row per sequence
    sim::OpTrace d;
    sim::plan_forward(stage_graph(2, 0), 2, 5, 1, sim::Phase::DECODE, d);
    EXPECT_EQ(d.back().in_bytes, 2u * 32u * 4u);
}

TEST(ShardPipelineParallel, ComposesWithTensorParallelism) {
    const Graph g = stage_graph(2, 1, 2);
    EXPECT_EQ(g.tp.tp, 2);
    EXPECT_EQ(g.pp.stage, 1);
    EXPECT_EQ(count(g, OpKind::ALL_REDUCE), 2 * 4);  // layers 3..6 of 7, two per layer
    EXPECT_EQ(count(g, OpKind::RECV), 1);
}

TEST(ShardPipelineParallel, RefusesBadSplits) {
    EXPECT_EQ(test::error_of([] { stage_graph(8, 0); }),
              "--pp = 8 is not allowed for the 7 layers of 'toy' (allowed: 1 to 7)");
    EXPECT_EQ(test::error_of([] { ShardPipelineParallel(2, 0).run(stage_graph(2, 0)); }),
              "graph pass shard_pipeline_parallel: the graph is already split (pp 2)");
    EXPECT_EQ(stage_graph(1, 0).nodes.size(), build_graph(shape()).nodes.size());  // identity
}

}  // namespace
}  // namespace duet::graph
