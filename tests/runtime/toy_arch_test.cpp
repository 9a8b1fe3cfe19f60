// Adding an architecture: this file is the whole of a toy one — a "parallel block" (GPT-J /
// PaLM style: attention and FFN both read one normed input and add to the residual together)
// written as a graph builder, run by the real engine against a scalar expectation and lowered
// by the planner. The engine and the planner are not touched for it (docs/architectures.md).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>

#include "graph/graph.h"
#include "runtime/engine.h"
#include "model/hparams.h"
#include "sim/planner.h"
#include "test_models.h"

using WR = duet::graph::WeightRole;

using namespace duet;

namespace {

using graph::OpKind;
using graph::Rows;
using graph::WeightRole;

// x += attn_out(attention(rope(q(xn), k(xn)), v(xn))) + down(silu(gate(xn)) * up(xn)),
// xn = rmsnorm(x) * attn_norm; the ffn_norm weights of the file are unused.
graph::Graph build_parallel_block(const graph::ModelShape& s) {
    graph::Graph g;
    g.shape = s;
    const int64_t E = s.n_embd, q_dim = s.n_head * s.head_dim, kv_dim = s.n_head_kv * s.head_dim;
    const auto t = [&](int32_t l, const char* what, int64_t w) {
        return g.add_tensor(fmt::format("l{}.{}", l, what), Rows::TOKENS, w);
    };
    const auto mm = [&](int32_t l, WeightRole role, int32_t x, int64_t n, const char* what) {
        const int32_t y = t(l, what, n);
        g.add_node({OpKind::MATMUL, role, l, {x}, {y}, n, g.tensors[size_t(x)].width, s.weight_dtype});
        return y;
    };
    g.token_ids = g.add_tensor("tokens", Rows::TOKENS, 1, graph::TensorKind::TOKEN_IDS);
    int32_t x = g.add_tensor("x", Rows::TOKENS, E);
    g.add_node({OpKind::EMBED, WeightRole::TOKEN_EMBD, -1, {g.token_ids}, {x}, E, 0, s.weight_dtype});
    for (int32_t l = 0; l < int32_t(s.n_layer); ++l) {
        const int32_t xn = t(l, "xn", E);
        g.add_node({OpKind::RMSNORM, WeightRole::ATTN_NORM, l, {x}, {xn}, E});
        const int32_t q = mm(l, WeightRole::ATTN_Q, xn, q_dim, "q"), k = mm(l, WeightRole::ATTN_K, xn, kv_dim, "k");
        const int32_t v = mm(l, WeightRole::ATTN_V, xn, kv_dim, "v");
        const int32_t gate = mm(l, WeightRole::FFN_GATE, xn, s.n_ff, "gate");
        const int32_t up = mm(l, WeightRole::FFN_UP, xn, s.n_ff, "up");
        const int32_t qr = g.alias(q, "qr"), kr = g.alias(k, "kr");
        g.add_node({OpKind::ROPE, WeightRole::NONE, l, {q, k}, {qr, kr}, q_dim + kv_dim, s.head_dim});
        g.add_node({OpKind::KV_WRITE, WeightRole::NONE, l, {kr, v}, {}, 2 * kv_dim, 0, s.kv_dtype});
        const int32_t att = t(l, "att", q_dim);
        g.add_node({OpKind::ATTENTION, WeightRole::NONE, l, {qr}, {att}, q_dim, s.head_dim, s.kv_dtype});
        const int32_t ao = mm(l, WeightRole::ATTN_OUT, att, E, "ao");
        const int32_t act = t(l, "act", s.n_ff);
        g.add_node({OpKind::SWIGLU, WeightRole::NONE, l, {gate, up}, {act}, s.n_ff});
        const int32_t fo = mm(l, WeightRole::FFN_DOWN, act, E, "fo");
        const int32_t x1 = g.alias(x, "x");
        g.add_node({OpKind::ADD, WeightRole::NONE, l, {x, ao}, {x1}, E});
        x = g.alias(x1, "x");
        g.add_node({OpKind::ADD, WeightRole::NONE, l, {x1, fo}, {x}, E});
    }
    const int32_t xo = g.add_tensor("out_in", Rows::OUT_ROWS, E);
    g.add_node({OpKind::RMSNORM, WeightRole::OUTPUT_NORM, -1, {x}, {xo}, E});
    g.logits = g.add_tensor("logits", Rows::OUT_ROWS, s.n_vocab, graph::TensorKind::LOGITS);
    g.add_node({OpKind::MATMUL, WeightRole::LM_HEAD, -1, {xo}, {g.logits}, s.n_vocab, E, s.weight_dtype});
    g.add_node({OpKind::OUTPUT, WeightRole::NONE, -1, {g.logits}, {}, s.n_vocab});
    g.finalize();
    return g;
}

// Scalar expectation for one token at position 0: RoPE is the identity there and attention
// over one position returns that position's v (per query head, its KV head's slice).
std::vector<double> scalar_parallel_block(const runtime::Model& m, int32_t token) {
    const model::Hparams& hp = m.hparams();
    const model::Weights& w = m.weights();
    const auto row = [](const model::TensorRef& t, int64_t r) {
        return reinterpret_cast<const float*>(static_cast<const uint8_t*>(t.data) + size_t(r) * t.row_stride_bytes);
    };
    const auto matvec = [&](const model::TensorRef& t, const std::vector<double>& x) {
        std::vector<double> y(size_t(t.rows), 0.0);
        for (int64_t r = 0; r < t.rows; ++r)
            for (int64_t c = 0; c < t.cols; ++c) y[size_t(r)] += double(row(t, r)[c]) * x[size_t(c)];
        return y;
    };
    const auto norm = [&](const std::vector<double>& x, const model::TensorRef& wt) {
        double ss = 0;
        for (double v : x) ss += v * v;
        const double inv = 1.0 / std::sqrt(ss / double(x.size()) + double(hp.norm_eps));
        std::vector<double> y(x.size());
        for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * double(wt.f32()[i]);
        return y;
    };
    std::vector<double> x(size_t(hp.n_embd));
    for (int64_t i = 0; i < hp.n_embd; ++i) x[size_t(i)] = row(w[WR::TOKEN_EMBD], token)[i];
    for (const model::RoleTensors& lw : w.layers) {
        const std::vector<double> xn = norm(x, lw[WR::ATTN_NORM]);
        const std::vector<double> v = matvec(lw[WR::ATTN_V], xn);
        std::vector<double> att(size_t(hp.n_head * hp.head_dim));
        const int64_t group = hp.n_head / hp.n_head_kv;
        for (int64_t h = 0; h < hp.n_head; ++h)
            for (int64_t d = 0; d < hp.head_dim; ++d)
                att[size_t(h * hp.head_dim + d)] = v[size_t((h / group) * hp.head_dim + d)];
        const std::vector<double> ao = matvec(lw[WR::ATTN_OUT], att);
        const std::vector<double> gate = matvec(lw[WR::FFN_GATE], xn), up = matvec(lw[WR::FFN_UP], xn);
        std::vector<double> act(gate.size());
        for (size_t i = 0; i < act.size(); ++i) act[i] = gate[i] / (1.0 + std::exp(-gate[i])) * up[i];
        const std::vector<double> fo = matvec(lw[WR::FFN_DOWN], act);
        for (size_t i = 0; i < x.size(); ++i) x[i] += ao[i] + fo[i];
    }
    return matvec(w[WR::LM_HEAD], norm(x, w[WR::OUTPUT_NORM]));
}

TEST(ToyArchitecture, ParallelBlockRunsOnTheEngineAndThePlanner) {
    const std::string path = test::generated_model("tiny-llama", "f32");
    ASSERT_FALSE(path.empty());
    auto m = runtime::Model::load(path);
    const graph::ModelShape shape = model::model_shape(m->hparams(), DType::F32, DType::F32);
    const std::vector<double> want = scalar_parallel_block(*m, 5);
    for (bool fuse : {false, true}) {
        runtime::EngineOptions o;
        o.n_threads = 2;
        o.kv_type = DType::F32;
        o.n_ctx = 8;
        o.fuse = fuse;
        runtime::Engine e(m, o, build_parallel_block(shape));
        sim::OpTrace trace;
        e.set_trace(&trace);
        const std::vector<int32_t> toks = {5};
        runtime::SequenceKv s;
        runtime::SeqInput in{toks, &s, false};
        runtime::ForwardOutput out;
        ASSERT_EQ(e.forward({&in, 1}, out), runtime::ForwardStatus::OK);
        double max_err = 0, max_ref = 1e-6;
        for (size_t i = 0; i < want.size(); ++i) {
            max_err = std::max(max_err, std::fabs(double(out.logits[i]) - want[i]));
            max_ref = std::max(max_ref, std::fabs(want[i]));
        }
        EXPECT_LT(max_err / max_ref, 1e-5) << "fuse " << fuse;
        // The planner lowers the same graph to the records the engine emitted.
        const sim::Plan plan = sim::plan_generation(e.graph(), 1, 1, 1);
        ASSERT_EQ(plan.ops.size(), trace.size());
        for (size_t i = 0; i < trace.size(); ++i) {
            EXPECT_EQ(plan.ops[i].kind, trace[i].kind) << i;
            EXPECT_EQ(plan.ops[i].role, trace[i].role) << i;
            EXPECT_EQ(plan.ops[i].n, trace[i].n) << i;
            EXPECT_EQ(plan.ops[i].in_bytes, trace[i].in_bytes) << i;
            EXPECT_EQ(plan.ops[i].weight_bytes, trace[i].weight_bytes) << i;
            EXPECT_EQ(plan.ops[i].sibling_of_prev, trace[i].sibling_of_prev) << i;
        }
        // Unfused: K, V, gate and up all read the normed input beside Q; fused: Q/K/V/gate/up
        // are two matmuls (the pass fuses runs in table order: QKV, then gate+up, siblings).
        int siblings = 0;
        for (const sim::OpRecord& r : trace) siblings += r.sibling_of_prev;
        EXPECT_EQ(siblings, int(fuse ? 1 : 4) * int(m->hparams().n_layer));
        s.release(e.kv_cache());
    }
}

}  // namespace
