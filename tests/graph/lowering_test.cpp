// graph::lower (graph/lowering.h): the records of a ragged batch against their closed forms
// (graph/op_record.h), computed here by hand from the shape.
#include "graph/lowering.h"

#include <gtest/gtest.h>

#include <vector>

namespace duet::graph {
namespace {

ModelShape toy() {
    ModelShape s;
    s.name = "toy";
    s.n_vocab = 50;
    s.n_embd = 32;
    s.n_layer = 1;
    s.n_head = 4;
    s.n_head_kv = 2;
    s.head_dim = 8;
    s.n_ff = 64;
    s.kv_dtype = DType::F16;
    return s;
}

const Node& first(const Graph& g, OpKind kind, WeightRole role = WeightRole::NONE) {
    for (const Node& n : g.nodes)
        if (n.kind == kind && (role == WeightRole::NONE || n.role == role)) return n;
    ADD_FAILURE() << "no node " << op_kind_name(kind);
    return g.nodes[0];
}

TEST(Lowering, RaggedBatchAttentionSumsOverSequences) {
    const Graph g = build_graph(toy());
    // sequence 0: 5 cached, 3 new; sequence 1: 0 cached, 1 new (a prefill joining a decode)
    const std::vector<SeqSpan> seqs = {{5, 3}, {0, 1}};
    const Batch b{seqs, 4, 2, Phase::PREFILL};
    const OpRecord r = lower(g, first(g, OpKind::ATTENTION), b);
    const uint64_t kv_row = 2 * 8 * 2;  // n_head_kv * head_dim f16 elements
    EXPECT_EQ(r.m, 4);
    EXPECT_EQ(r.n, 8);  // the longest context after the forward
    EXPECT_EQ(r.n_seq, 2);
    EXPECT_EQ(r.weight_bytes, 2 * (8 + 1) * kv_row);
    // causal query-key pairs: 3*5 + 3*4/2 = 21 and 1*0 + 1 = 1
    EXPECT_EQ(r.flops, 4.0 * 4 * 8 * (21 + 1));
    EXPECT_EQ(r.in_bytes, 4u * 4 * 32);
    EXPECT_EQ(r.weight_dtype, DType::F16);
}

TEST(Lowering, MatmulRowsFollowTheTensorRowsAndOutputMarksOnePerSequence) {
    const Graph g = build_graph(toy());
    const std::vector<SeqSpan> seqs = {{0, 3}, {2, 2}};
    const Batch all_logits{seqs, 5, 5, Phase::PREFILL};  // every token's logits wanted
    const OpRecord q = lower(g, first(g, OpKind::MATMUL, WeightRole::ATTN_Q), all_logits);
    EXPECT_EQ(q.m, 5);
    EXPECT_EQ(q.flops, 2.0 * 5 * 32 * 32);
    EXPECT_EQ(q.weight_bytes, uint64_t(32) * row_bytes(DType::F16, 32));
    const OpRecord head = lower(g, first(g, OpKind::MATMUL, WeightRole::LM_HEAD), all_logits);
    EXPECT_EQ(head.m, 5);  // OUT_ROWS: the rows whose logits are wanted
    EXPECT_EQ(head.layer, -1);
    const OpRecord out = lower(g, first(g, OpKind::OUTPUT), all_logits);
    EXPECT_EQ(out.m, 2);  // one sampled token per sequence
    EXPECT_EQ(out.in_bytes, 4u * 2 * 50);
}

}  // namespace
}  // namespace duet::graph
