// The RMSNorm fusion pass (graph/fuse_rmsnorm_matmul.h): which norms join their matmul, which
// stay, and the modelled records (one launch and the normed tensor's write + read fewer).
#include "graph/fuse_rmsnorm_matmul.h"

#include <gtest/gtest.h>

#include "graph/fuse_matmuls.h"
#include "graph/fuse_rope_kv.h"
#include "graph/graph.h"
#include "graph/memory_plan.h"
#include "graph/shard_tensor_parallel.h"
#include "sim/planner.h"

namespace duet::graph {
namespace {

ModelShape shape(DType w, int64_t n_layer = 2) {
    ModelShape s;
    s.name = "toy";
    s.n_vocab = 50;
    s.n_embd = 64;
    s.n_layer = n_layer;
    s.n_head = 4;
    s.n_head_kv = 2;
    s.head_dim = 16;
    s.n_ff = 96;
    s.weight_dtype = w;
    return s;
}

int count(const Graph& g, OpKind k) {
    int n = 0;
    for (const Node& nd : g.nodes) n += nd.kind == k;
    return n;
}

// The graph --fuse built before this pass.
Graph siblings_and_rope(const Graph& g) { return FuseRopeKvWrite().run(FuseSiblingMatmuls().run(g)); }

TEST(FuseRmsNorm, EveryNormJoinsItsOneQuantisedConsumer) {
    for (DType w : {DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q4_K, DType::Q6_K}) {
        const Graph base = siblings_and_rope(build_graph(shape(w)));
        const Graph g = fuse_all(build_graph(shape(w)));
        // 2 norms per layer and the output norm: one node fewer each, none left
        ASSERT_EQ(g.nodes.size(), base.nodes.size() - (2 * 2 + 1)) << dtype_name(w);
        EXPECT_EQ(count(g, OpKind::RMSNORM), 0) << dtype_name(w);
        std::vector<std::pair<WeightRole, WeightRole>> fused;  // (matmul, norm)
        for (size_t i = 0; i < base.nodes.size(); ++i) {
            const Node& r = base.nodes[i];
            if (r.kind != OpKind::RMSNORM) continue;
            const Node& mm = base.nodes[i + 1];
            const Node& f = g.nodes[i - fused.size()];
            ASSERT_EQ(f.kind, OpKind::MATMUL);
            EXPECT_EQ(f.role, mm.role);
            EXPECT_EQ(f.norm, r.role);
            EXPECT_EQ(f.in, r.in);  // the norm's input: the residual stream, un-normed
            EXPECT_EQ(f.out, mm.out);
            EXPECT_EQ(f.n, mm.n);
            EXPECT_EQ(f.k, mm.k);
            EXPECT_EQ(f.layer, r.layer);
            fused.push_back({f.role, f.norm});
        }
        using R = WeightRole;
        EXPECT_EQ(fused, (std::vector<std::pair<R, R>>{{R::ATTN_QKV, R::ATTN_NORM},
                                                       {R::FFN_GATE_UP, R::FFN_NORM},
                                                       {R::ATTN_QKV, R::ATTN_NORM},
                                                       {R::FFN_GATE_UP, R::FFN_NORM},
                                                       {R::LM_HEAD, R::OUTPUT_NORM}}));
        // the lm head reads the TOKENS residual and writes OUT_ROWS: the engine gathers
        const Node& head = g.nodes[g.nodes.size() - 2];
        EXPECT_EQ(g.tensors[size_t(head.in[0])].rows, Rows::TOKENS);
        EXPECT_EQ(g.tensors[size_t(head.out[0])].rows, Rows::OUT_ROWS);
        // the normed tensors are gone from the memory plan: nothing writes or reads them
        const MemoryPlan p = plan_memory(g);
        for (size_t t = 0; t < g.tensors.size(); ++t) {
            const std::string& n = g.tensors[t].name;
            if (n.ends_with("attn_in") || n.ends_with("ffn_in") || n == "out_in") {
                EXPECT_LT(p.first[t], 0) << n;
            }
        }
    }
}

TEST(FuseRmsNorm, FloatWeightsSeveralConsumersAndFlashcommNormsStay) {
    // f32/f16/bf16 matmuls read the f32 rows as they are: nothing to fuse into
    for (DType w : {DType::F32, DType::F16, DType::BF16}) {
        const Graph base = siblings_and_rope(build_graph(shape(w)));
        EXPECT_EQ(FuseRmsNormMatmul().run(base).nodes.size(), base.nodes.size()) << dtype_name(w);
        EXPECT_EQ(fuse_all(build_graph(shape(w))).nodes.size(), base.nodes.size()) << dtype_name(w);
    }
    // unfused Q/K/V and gate/up: three and two consumers; only the output norm (one) joins
    const Graph plain = build_graph(shape(DType::Q8_0));
    const Graph g = FuseRmsNormMatmul().run(plain);
    EXPECT_EQ(g.nodes.size(), plain.nodes.size() - 1);
    EXPECT_EQ(count(g, OpKind::RMSNORM), 2 * 2);
    // I8 (the NPU model's int8 weights) only with int8 activations (W8A8), not W8A16
    const Graph i8 = siblings_and_rope(build_graph(shape(DType::I8)));
    EXPECT_EQ(FuseRmsNormMatmul(false).run(i8).nodes.size(), i8.nodes.size());
    EXPECT_EQ(FuseRmsNormMatmul(true).run(i8).nodes.size(), i8.nodes.size() - 5);
    EXPECT_TRUE(quantises_activations(DType::Q4_K, false));
    EXPECT_FALSE(quantises_activations(DType::BF16, true));
    // flashcomm runs the norm after ALL_GATHER, ADD on a share of the rows (sim/scale_out.h): those stay
    const Graph tp = fuse_all(ShardTensorParallel(2, 0, true).run(build_graph(shape(DType::Q8_0))));
    int kept = 0;
    for (size_t i = 0; i < tp.nodes.size(); ++i) {
        if (tp.nodes[i].kind != OpKind::RMSNORM) continue;
        ++kept;
        ASSERT_GE(i, 2u);
        EXPECT_EQ(tp.nodes[i - 1].kind, OpKind::ADD);
        EXPECT_EQ(tp.nodes[i - 2].kind, OpKind::ALL_GATHER);
    }
    EXPECT_EQ(kept, 2 * 2);  // all but layer 0's attention norm, which follows the embedding
}

// Modelled: per fused norm one record fewer and exactly the f32 write of the normed tensor and
// its read by the matmul fewer bytes, 2 x 4 x m x n_embd (m = tokens; n_seq for the output
// norm); the norm's weight bytes and flops move into the matmul record.
TEST(FuseRmsNorm, PlannerDropsOneLaunchAndTheNormedWriteAndRead) {
    const ModelShape s = shape(DType::Q8_0, 3);
    const int64_t L = s.n_layer, E = s.n_embd, seq = 6, gen = 3;
    const int32_t batch = 2;
    const sim::Plan plain = sim::plan_generation(siblings_and_rope(build_graph(s)), seq, gen, batch);
    const sim::Plan fused = sim::plan_generation(fuse_all(build_graph(s)), seq, gen, batch);
    ASSERT_EQ(plain.forwards.size(), size_t(gen));
    EXPECT_EQ(plain.ops.size() - fused.ops.size(), size_t((2 * L + 1) * gen));
    uint64_t drop = 0;
    for (const sim::ForwardSpan& f : plain.forwards)
        drop += uint64_t(2 * L) * 2 * 4 * uint64_t(batch * f.n_new * E) + 2 * 4 * uint64_t(batch * E);
    uint64_t bytes_plain = 0, bytes_fused = 0;
    double flops_plain = 0, flops_fused = 0;
    for (const sim::OpRecord& r : plain.ops) {
        bytes_plain += r.in_bytes + r.out_bytes + r.weight_bytes;
        flops_plain += r.flops;
        EXPECT_FALSE(r.rmsnorm_fused);
    }
    int marked = 0;
    for (const sim::OpRecord& r : fused.ops) {
        bytes_fused += r.in_bytes + r.out_bytes + r.weight_bytes;
        flops_fused += r.flops;
        EXPECT_NE(r.kind, OpKind::RMSNORM);
        marked += r.rmsnorm_fused;
    }
    EXPECT_EQ(bytes_plain - bytes_fused, drop);
    EXPECT_DOUBLE_EQ(flops_plain, flops_fused);
    EXPECT_EQ(marked, int((2 * L + 1) * gen));
    // the first forward's Q|K|V record: the norm's weights, flops and no extra read
    const sim::OpRecord &norm = plain.ops[1], &qkv = plain.ops[2], &f = fused.ops[1];
    ASSERT_EQ(norm.kind, OpKind::RMSNORM);
    ASSERT_EQ(f.role, WeightRole::ATTN_QKV);
    EXPECT_TRUE(f.rmsnorm_fused);
    EXPECT_EQ(f.weight_bytes, qkv.weight_bytes + norm.weight_bytes);
    EXPECT_EQ(f.in_bytes, norm.in_bytes);
    EXPECT_EQ(f.out_bytes, qkv.out_bytes);
    EXPECT_DOUBLE_EQ(f.flops, qkv.flops + norm.flops);
}

}  // namespace
}  // namespace duet::graph
