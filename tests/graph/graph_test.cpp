// The llama graph, its sibling information, the fusion pass and their lowering to records.
#include <gtest/gtest.h>

#include "core/error.h"
#include "graph/fuse_matmuls.h"
#include "graph/fuse_rope_kv.h"
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
    const sim::Plan fused = sim::plan_generation(FuseSiblingMatmuls().run(build_graph(s)), 6, 2, 2);
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

TEST(FuseRopeKv, RopeAndKvWriteBecomeOneNodeReadingQKV) {
    for (const Graph& base : {build_graph(shape(2)), FuseSiblingMatmuls().run(build_graph(shape(2)))}) {
        const Graph g = FuseRopeKvWrite().run(base);
        ASSERT_EQ(g.nodes.size(), base.nodes.size() - 2);
        int fused = 0;
        for (size_t i = 0; i < base.nodes.size(); ++i) {
            const Node& r = base.nodes[i];
            if (r.kind != OpKind::ROPE) continue;
            const Node& w = base.nodes[i + 1];
            const Node& f = g.nodes[i - size_t(fused)];
            ASSERT_EQ(f.kind, OpKind::ROPE_KV_WRITE);
            EXPECT_EQ(f.in, (std::vector<int32_t>{r.in[0], r.in[1], w.in[1]}));
            EXPECT_EQ(f.out, (std::vector<int32_t>{r.out[0]}));
            EXPECT_EQ(f.n, r.n);
            EXPECT_EQ(f.k, r.k);
            EXPECT_EQ(f.dtype, w.dtype);
            EXPECT_EQ(f.layer, r.layer);
            ++fused;
        }
        EXPECT_EQ(fused, 2);
        for (const Node& n : g.nodes) EXPECT_TRUE(n.kind != OpKind::ROPE && n.kind != OpKind::KV_WRITE);
    }
    // fuse_all (--fuse) runs both passes.
    const Graph all = fuse_all(build_graph(shape(2)));
    EXPECT_EQ(all.nodes.size(), FuseRopeKvWrite().run(FuseSiblingMatmuls().run(build_graph(shape(2)))).nodes.size());
}

TEST(FuseRopeKv, RopeWhoseKIsReadElsewhereStaysUnfused) {
    Graph g = build_graph(shape(1));
    size_t rope = 0;
    while (g.nodes[rope].kind != OpKind::ROPE) ++rope;
    Node extra = g.nodes[rope + 2];  // ATTENTION: made to read k_rope as well
    extra.in.push_back(g.nodes[rope].out[1]);
    g.nodes[rope + 2] = extra;
    g.finalize();
    EXPECT_EQ(FuseRopeKvWrite().run(g).nodes.size(), g.nodes.size());
}

// Modelled: per layer and forward one record fewer, and exactly the f32 write of k_rope
// (m x n_embd_kv x 4 bytes) and its read by KV_WRITE fewer bytes; everything else unchanged.
TEST(FuseRopeKv, PlannerDropsOneLaunchAndTheKRopeWriteAndRead) {
    ModelShape s = shape(3);
    s.kv_dtype = DType::F16;
    const int64_t L = s.n_layer, kv_dim = s.n_head_kv * s.head_dim, seq = 6, gen = 3;
    const int32_t batch = 2;
    const sim::Plan plain = sim::plan_generation(build_graph(s), seq, gen, batch);
    const sim::Plan fused = sim::plan_generation(FuseRopeKvWrite().run(build_graph(s)), seq, gen, batch);
    ASSERT_EQ(plain.forwards.size(), size_t(gen));
    EXPECT_EQ(plain.ops.size() - fused.ops.size(), size_t(L * gen));
    uint64_t drop = 0;  // closed form: 2 x (4 bytes x m x kv_dim) per layer per forward
    for (const sim::ForwardSpan& f : plain.forwards) drop += uint64_t(L) * 2 * 4 * uint64_t(batch * f.n_new * kv_dim);
    const auto bytes = [](const sim::Plan& p, bool rope_kv_only) {
        uint64_t b = 0;
        for (const sim::OpRecord& r : p.ops)
            if (!rope_kv_only || r.kind == OpKind::ROPE || r.kind == OpKind::KV_WRITE || r.kind == OpKind::ROPE_KV_WRITE)
                b += r.in_bytes + r.out_bytes + r.weight_bytes;
        return b;
    };
    EXPECT_EQ(bytes(plain, false) - bytes(fused, false), drop);
    EXPECT_EQ(bytes(plain, true) - bytes(fused, true), drop);
    double flops_plain = 0, flops_fused = 0;
    for (const sim::OpRecord& r : plain.ops) flops_plain += r.flops;
    for (const sim::OpRecord& r : fused.ops) flops_fused += r.flops;
    EXPECT_DOUBLE_EQ(flops_plain, flops_fused);
}

}  // namespace
}  // namespace duet::graph
