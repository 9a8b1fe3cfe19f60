// The static memory plan: roots alive at the same node never share arena columns, and the
// peak of live bytes has the closed form of the llama block.
#include <gtest/gtest.h>

#include <algorithm>

#include "graph/fuse_matmuls.h"
#include "graph/memory_plan.h"

namespace duet::graph {
namespace {

ModelShape shape() {
    ModelShape s;
    s.n_vocab = 40;
    s.n_embd = 16;
    s.n_layer = 3;
    s.n_head = 4;
    s.n_head_kv = 1;
    s.head_dim = 4;
    s.n_ff = 48;
    return s;
}

void expect_no_overlap(const Graph& g, const MemoryPlan& p) {
    for (size_t a = 0; a < g.tensors.size(); ++a) {
        for (size_t b = a + 1; b < g.tensors.size(); ++b) {
            const Tensor &ta = g.tensors[a], &tb = g.tensors[b];
            if (ta.base >= 0 || tb.base >= 0 || ta.kind != TensorKind::ACTIVATION || tb.kind != TensorKind::ACTIVATION)
                continue;
            if (p.first[a] < 0 || p.first[b] < 0 || p.last[a] < p.first[b] || p.last[b] < p.first[a]) continue;
            const bool disjoint = p.offset[a] + ta.width <= p.offset[b] || p.offset[b] + tb.width <= p.offset[a];
            EXPECT_TRUE(disjoint) << ta.name << " and " << tb.name << " overlap while both alive";
        }
    }
}

TEST(MemoryPlan, LiveTensorsNeverShareStorage) {
    const Graph g = build_graph(shape());
    const MemoryPlan p = plan_memory(g);
    expect_no_overlap(g, p);
    // Layers reuse the space of the ones before: far less than one buffer per tensor.
    int64_t sum = 0;
    for (const Tensor& t : g.tensors)
        if (t.base < 0 && t.kind == TensorKind::ACTIVATION) sum += t.width;
    EXPECT_LT(p.arena_width, sum / 2);
    const Graph f = FuseSiblingMatmuls().run(g);
    expect_no_overlap(f, plan_memory(f));
}

TEST(MemoryPlan, PeakIsTheSwigluStepOfTheBlock) {
    // With n_ff > n_embd the peak is at SWIGLU: residual x, gate, up and the product alive.
    const ModelShape s = shape();
    const Graph g = build_graph(s);
    const MemoryPlan p = plan_memory(g);
    const int64_t T = 7;
    EXPECT_EQ(peak_live_bytes(g, p, T, 1, 2), uint64_t(2 * T * (s.n_embd + 3 * s.n_ff)));
    // Lifetimes: the residual stream lives from the embedding to the final norm.
    EXPECT_EQ(p.first[1], 0);
    EXPECT_EQ(p.last[1], int32_t(g.nodes.size()) - 3);
}

TEST(MemoryPlan, LogitsDominateWhenTheVocabularyIsLarge) {
    ModelShape s = shape();
    s.n_vocab = 100000;
    const Graph g = build_graph(s);
    // final norm output (n_seq rows of n_embd) and logits (n_seq rows of n_vocab), f16
    EXPECT_EQ(peak_live_bytes(g, plan_memory(g), 1, 2, 2), uint64_t(2 * 2 * (s.n_embd + s.n_vocab)));
}

}  // namespace
// MULTI_STREAM_MEMORY_REUSE = 0: a collective's tensors stay live until the next collective
// (the forward's last node when none follows). Checked against a direct count of the live
// roots at every node under that rule, on a tensor-parallel graph; a graph without collectives
// is unchanged.
uint64_t held_peak_by_count(const Graph& g, const MemoryPlan& p, int64_t n_tok) {
    const auto collective = [&](size_t i) {
        const OpKind k = g.nodes[i].kind;
        return k == OpKind::ALL_REDUCE || k == OpKind::REDUCE_SCATTER || k == OpKind::ALL_GATHER;
    };
    std::vector<int32_t> last = p.last;
    for (size_t c = 0; c < g.nodes.size(); ++c) {
        if (!collective(c)) continue;
        std::vector<int32_t> ts = g.nodes[c].in;
        ts.insert(ts.end(), g.nodes[c].out.begin(), g.nodes[c].out.end());
        for (int32_t t : ts) {
            const size_t r = size_t(g.root(t));
            size_t next = g.nodes.size() - 1;
            for (size_t j = size_t(p.last[r]) + 1; j < g.nodes.size(); ++j)
                if (collective(j)) { next = j; break; }
            last[r] = std::max(last[r], int32_t(next));
        }
    }
    uint64_t peak = 0;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        uint64_t live = 0;
        for (size_t r = 0; r < g.tensors.size(); ++r) {
            const Tensor& t = g.tensors[r];
            if (t.base >= 0 || p.first[r] < 0 || t.kind == TensorKind::TOKEN_IDS) continue;
            if (int32_t(i) >= p.first[r] && int32_t(i) <= last[r])
                live += uint64_t((t.rows == Rows::TOKENS ? n_tok : 1) * t.width) * 2;
        }
        peak = std::max(peak, live);
    }
    return peak;
}

TEST(MemoryPlan, WithoutMultiStreamReuseCollectiveTensorsStayLiveUntilTheNextCollective) {
    ModelShape s = shape();
    s.n_head_kv = 2;
    GraphOptions go;
    go.tp = 2;
    const Graph g = build_graph(s, go);
    const MemoryPlan p = plan_memory(g);
    const int64_t n_tok = 64;
    const uint64_t reuse = peak_live_bytes(g, p, n_tok, 1, 2), held = peak_live_bytes(g, p, n_tok, 1, 2, true);
    EXPECT_EQ(held, held_peak_by_count(g, p, n_tok));
    EXPECT_GT(held, reuse);
    const Graph g1 = build_graph(s);  // tp 1: no collective, nothing held
    const MemoryPlan p1 = plan_memory(g1);
    EXPECT_EQ(peak_live_bytes(g1, p1, n_tok, 1, 2, true), peak_live_bytes(g1, p1, n_tok, 1, 2));
}

// Per-op allocation (the static plan's comparison): every activation root has its own columns,
// so the arena is the sum of the roots' widths and no two roots overlap even when their
// lifetimes do not intersect; the lifetimes are the static plan's.
TEST(MemoryPlan, WithoutReuseEveryRootHasItsOwnColumns) {
    const Graph g = build_graph(shape());
    const MemoryPlan p = plan_memory_without_reuse(g), reuse = plan_memory(g);
    int64_t sum = 0;
    std::vector<std::pair<int64_t, int64_t>> spans;
    for (size_t r = 0; r < g.tensors.size(); ++r) {
        const Tensor& t = g.tensors[r];
        if (t.base >= 0 || p.first[r] < 0 || t.kind != TensorKind::ACTIVATION) continue;
        sum += t.width;
        spans.push_back({p.offset[r], p.offset[r] + t.width});
    }
    EXPECT_EQ(p.arena_width, sum);
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i) EXPECT_LE(spans[i - 1].second, spans[i].first);
    EXPECT_EQ(p.first, reuse.first);
    EXPECT_EQ(p.last, reuse.last);
    EXPECT_GT(p.arena_width, reuse.arena_width);
}

}  // namespace duet::graph
