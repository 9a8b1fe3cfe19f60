// The llama graph, its sibling information, the fusion pass and their lowering to records.
#include <gtest/gtest.h>

#include "core/error.h"
#include "graph/fuse_matmuls.h"
#include "graph/graph.h"
#include "sim/planner.h"

namespace duet::graph {
namespace {

ModelShape shape(int64_t n_layer = 2, bool bias = false) {
    ModelShape s;
    s.name = "toy";
    s.n_vocab = 50;
    s.n_embd = 16;
    s.n_layer = n_layer;
    s.n_head = 4;
    s.n_head_kv = 2;
    s.head_dim = 4;
    s.n_ff = 24;
    s.qkv_bias = bias;
    return s;
}

std::vector<WeightRole> matmul_roles(const Graph& g) {
    std::vector<WeightRole> r;
    for (const Node& n : g.nodes)
        if (n.kind == OpKind::MATMUL) r.push_back(n.role);
    return r;
}

TEST(LlamaGraph, OneNodePerOperatorInBlockOrder) {
    const Graph g = build_graph(shape(2));
    ASSERT_EQ(g.nodes.size(), 4u + 15u * 2);
    const std::vector<OpKind> block = {OpKind::RMSNORM, OpKind::MATMUL, OpKind::MATMUL, OpKind::MATMUL,
                                       OpKind::ROPE,    OpKind::KV_WRITE, OpKind::ATTENTION, OpKind::MATMUL,
                                       OpKind::ADD,     OpKind::RMSNORM, OpKind::MATMUL, OpKind::MATMUL,
                                       OpKind::SWIGLU,  OpKind::MATMUL, OpKind::ADD};
    for (size_t i = 0; i < block.size(); ++i) EXPECT_EQ(g.nodes[1 + 15 + i].kind, block[i]) << i;
    EXPECT_EQ(g.nodes[1 + 15].layer, 1);
    using R = WeightRole;
    const std::vector<R> roles = {R::ATTN_Q, R::ATTN_K,   R::ATTN_V, R::ATTN_OUT, R::FFN_GATE, R::FFN_UP, R::FFN_DOWN,
                                  R::ATTN_Q, R::ATTN_K,   R::ATTN_V, R::ATTN_OUT, R::FFN_GATE, R::FFN_UP, R::FFN_DOWN,
                                  R::LM_HEAD};
    EXPECT_EQ(matmul_roles(g), roles);
    // GQA: K and V are n_head_kv * head_dim wide.
    EXPECT_EQ(g.nodes[2].n, 16);
    EXPECT_EQ(g.nodes[3].n, 8);
    EXPECT_EQ(g.nodes[3].k, 16);
}

TEST(LlamaGraph, SiblingsAreExactlyTheMatmulsSharingAnInput) {
    const Graph g = build_graph(shape(1));
    std::vector<WeightRole> siblings;
    for (const Node& n : g.nodes)
        if (n.sibling_of_prev) siblings.push_back(n.role);
    EXPECT_EQ(siblings, (std::vector<WeightRole>{WeightRole::ATTN_K, WeightRole::ATTN_V, WeightRole::FFN_UP}));
}

TEST(LlamaGraph, IncompleteShapeNamesTheFields) {
    ModelShape s = shape();
    s.n_ff = 0;
    try {
        build_graph(s);
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("model shape 'toy' is incomplete"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("n_ff 0"), std::string::npos) << e.what();
    }
}

TEST(FusePass, MergesQkvAndGateUpIntoViewsOfOneOutput) {
    const Graph g = FuseSiblingMatmuls().run(build_graph(shape(2, true)));
    ASSERT_EQ(g.nodes.size(), 4u + 12u * 2);
    using R = WeightRole;
    EXPECT_EQ(matmul_roles(g), (std::vector<R>{R::ATTN_QKV, R::ATTN_OUT, R::FFN_GATE_UP, R::FFN_DOWN, R::ATTN_QKV,
                                               R::ATTN_OUT, R::FFN_GATE_UP, R::FFN_DOWN, R::LM_HEAD}));
    const Node& qkv = g.nodes[2];
    EXPECT_EQ(qkv.n, 16 + 8 + 8);
    EXPECT_EQ(qkv.k, 16);
    EXPECT_TRUE(qkv.bias);
    EXPECT_FALSE(qkv.sibling_of_prev);
    // RoPE reads q and k as column views of the fused output and writes contiguous tensors.
    const Node& rope = g.nodes[3];
    ASSERT_EQ(rope.kind, OpKind::ROPE);
    EXPECT_EQ(g.root(rope.in[0]), qkv.out[0]);
    EXPECT_EQ(g.tensors[size_t(rope.in[1])].col0, 16);
    EXPECT_EQ(g.row_stride(rope.in[1]), 32);
    EXPECT_TRUE(g.contiguous(rope.out[0]) && g.tensors[size_t(rope.out[0])].base < 0);
    // V stays a view: KV_WRITE reads it with the fused row stride.
    const Node& kvw = g.nodes[4];
    EXPECT_EQ(g.tensors[size_t(kvw.in[1])].col0, 24);
    EXPECT_EQ(fused_parts(R::FFN_GATE_UP).size(), 2u);
    EXPECT_TRUE(fused_parts(R::ATTN_OUT).empty());
    for (const Node& n : g.nodes) EXPECT_FALSE(n.sibling_of_prev);
}

TEST(FusePass, PlannerEmitsOneRecordReadingTheInputOnce) {
    const ModelShape s = shape(1);
    const sim::Plan plain = sim::plan_generation(s, 6, 2, 2);
    const sim::Plan fused = sim::plan_generation(s, 6, 2, 2, {true});
    ASSERT_EQ(plain.ops.size(), 2u * 19);
    ASSERT_EQ(fused.ops.size(), 2u * 16);
    const sim::OpRecord &q = plain.ops[2], &k = plain.ops[3], &v = plain.ops[4], &qkv = fused.ops[2];
    EXPECT_EQ(qkv.role, WeightRole::ATTN_QKV);
    EXPECT_EQ(qkv.m, 12);
    EXPECT_EQ(qkv.n, q.n + k.n + v.n);
    EXPECT_EQ(qkv.weight_bytes, q.weight_bytes + k.weight_bytes + v.weight_bytes);
    EXPECT_EQ(qkv.in_bytes, q.in_bytes);  // one read of the normed input instead of three
    EXPECT_EQ(qkv.out_bytes, q.out_bytes + k.out_bytes + v.out_bytes);
    EXPECT_DOUBLE_EQ(qkv.flops, q.flops + k.flops + v.flops);
    // Everything that is not a fused matmul lowers to the same record.
    EXPECT_EQ(fused.ops[3].kind, OpKind::ROPE);
    EXPECT_EQ(fused.ops[3].in_bytes, plain.ops[5].in_bytes);
    EXPECT_TRUE(plain.ops[3].sibling_of_prev && plain.ops[4].sibling_of_prev);
}

}  // namespace
}  // namespace duet::graph
