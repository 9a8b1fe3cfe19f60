// The CENT partition of a tensor-parallel group (graph/shard_tensor_parallel_cent.h): one block
// of Llama2-7B's shape on 8 devices, as CENT's --model-parallel --FC-devices 8 trace runs it.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "graph/graph.h"
#include "graph/lowering.h"
#include "graph/parallel.h"
#include "graph/tensor_catalogue.h"
#include "../error_message.h"

namespace duet::graph {
namespace {

ModelShape llama2_7b_block() {
    ModelShape s;
    s.name = "llama2-7b-block";
    s.n_vocab = 32000;
    s.n_embd = 4096;
    s.n_layer = 1;
    s.n_head = 32;
    s.n_head_kv = 32;
    s.head_dim = 128;
    s.n_ff = 11008;
    return s;
}

Graph cent(const ModelShape& s, int tp, int rank = 0) {
    GraphOptions o;
    o.tp = tp;
    o.tp_rank = rank;
    o.tp_partition = TpPartition::CENT;
    return build_graph(s, o);
}

TEST(CentPartition, EveryBlockMatmulKeepsItsRanksOutputRowsAndIsGathered) {
    const ModelShape s = llama2_7b_block();
    const Graph g = cent(s, 8, 3);
    const std::map<WeightRole, std::pair<int64_t, int64_t>> full = {  // role -> (output rows, inputs)
        {WeightRole::ATTN_Q, {4096, 4096}}, {WeightRole::ATTN_K, {4096, 4096}}, {WeightRole::ATTN_V, {4096, 4096}},
        {WeightRole::ATTN_OUT, {4096, 4096}}, {WeightRole::FFN_GATE, {11008, 4096}},
        {WeightRole::FFN_UP, {11008, 4096}}, {WeightRole::FFN_DOWN, {4096, 11008}}};
    int matmuls = 0;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        const Node& nd = g.nodes[i];
        if (nd.kind != OpKind::MATMUL || nd.layer < 0) continue;
        ++matmuls;
        const auto [n, k] = full.at(nd.role);
        EXPECT_EQ(nd.n, 4 * n / 8 - 3 * n / 8) << weight_role_name(nd.role);  // rank 3's rows
        EXPECT_EQ(nd.k, k) << weight_role_name(nd.role);                        // every input
        ASSERT_LT(i + 1, g.nodes.size());
        const Node& ag = g.nodes[i + 1];
        EXPECT_EQ(ag.kind, OpKind::ALL_GATHER) << weight_role_name(nd.role);
        EXPECT_EQ(ag.n, n);
        EXPECT_EQ(ag.k, 8);
        EXPECT_EQ(ag.in, nd.out);
    }
    EXPECT_EQ(matmuls, 7);
}

TEST(CentPartition, AttentionRotaryGateAndNormsKeepTheWholeWidth) {
    const Graph g = cent(llama2_7b_block(), 8);
    EXPECT_EQ(g.shape.n_head, 32);
    EXPECT_EQ(g.shape.n_head_kv, 32);
    EXPECT_EQ(g.shape.n_ff, 11008);
    EXPECT_EQ(g.tp.context_ranks, 8);
    std::map<OpKind, int64_t> n;
    for (const Node& nd : g.nodes)
        if (nd.layer == 0) n[nd.kind] = nd.n;
    EXPECT_EQ(n[OpKind::ROPE], 2 * 4096);
    EXPECT_EQ(n[OpKind::KV_WRITE], 2 * 4096);
    EXPECT_EQ(n[OpKind::ATTENTION], 4096);
    EXPECT_EQ(n[OpKind::SWIGLU], 11008);
    EXPECT_EQ(n[OpKind::RMSNORM], 4096);
    // the lm-head is replicated, not gathered
    for (const Node& nd : g.nodes) {
        if (nd.role == WeightRole::LM_HEAD) {
            EXPECT_EQ(nd.n, 32000);
        }
    }
}

// CENT's llama_latency (cxl_latency.py) moves per block 5 gathers and 5 broadcasts of the
// embedding width and one gather and one broadcast of the FFN width. duet's all-gathers (a
// gather and a broadcast each on a multicast link): the five of the model width (Q, K, V, output,
// down; K and V are the model width without GQA) and two of the FFN width (gate, up: CENT's trace
// runs the gate product over the whole width on every device, so both are needed whole).
TEST(CentPartition, GathersPerBlockAgainstCentsTwelveTransfers) {
    const Graph g = cent(llama2_7b_block(), 8);
    std::vector<int64_t> widths;
    for (const Node& nd : g.nodes)
        if (nd.kind == OpKind::ALL_GATHER && nd.layer == 0) widths.push_back(nd.n);
    EXPECT_EQ(widths, (std::vector<int64_t>{4096, 4096, 4096, 4096, 11008, 11008, 4096}));
    const std::vector<SeqSpan> seqs = {{639, 1}};
    const Batch b{seqs, 1, 1, Phase::DECODE};
    uint64_t bytes = 0;
    int records = 0;
    for (const Node& nd : g.nodes)
        if (nd.kind == OpKind::ALL_GATHER && nd.layer == 0) bytes += lower(g, nd, b).out_bytes, ++records;
    EXPECT_EQ(records, 7);
    EXPECT_EQ(bytes, 4u * (5 * 4096 + 2 * 11008));  // f32 on the host; the link prices the PIM's bf16
    for (const Node& nd : g.nodes) {
        if (nd.kind != OpKind::ATTENTION) continue;
        {
            const OpRecord r = lower(g, nd, b);
            EXPECT_EQ(r.context_ranks, 8);
            EXPECT_EQ(r.n_head, 32);
            EXPECT_EQ(r.n, 640);
        }
    }
}

TEST(CentPartition, MegatronIsTheDefaultAndLeavesContextOnEachRank) {
    GraphOptions o;
    o.tp = 8;
    const Graph g = build_graph(llama2_7b_block(), o);
    EXPECT_EQ(g.tp.context_ranks, 1);
    EXPECT_EQ(g.shape.n_head, 4);
    int gathers = 0;
    for (const Node& nd : g.nodes) gathers += nd.kind == OpKind::ALL_GATHER;
    EXPECT_EQ(gathers, 0);
}

TEST(CentPartition, RefusesMixtureOfExperts) {
    ModelShape s = llama2_7b_block();
    s.n_expert = 8;
    s.n_expert_used = 2;
    s.n_ff_exp = 1024;
    EXPECT_EQ(test::error_of([&] { cent(s, 8); }),
              "[topology] tp_split = \"cent\" needs a dense model with standard attention (CENT's Llama trace); this "
              "model has Mixture-of-Experts layers (allowed: tp_split = \"megatron\")");
}

}  // namespace
}  // namespace duet::graph
