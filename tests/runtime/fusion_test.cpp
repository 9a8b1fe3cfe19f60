// The fusion passes on the real engine: Q/K/V and gate/up as one GEMM each give the same tokens
// as the unfused graph, with fewer weight matmuls and one record per fused matmul; RoPE fused
// with the KV write gives bit-identical tokens and logits with one record per layer fewer; and
// RMSNorm fused into the next matmul's input quantisation gives bit-identical tokens and logits
// with one record per fused norm fewer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <cstdlib>

#include "runtime/engine.h"
#include "graph/fuse_matmuls.h"
#include "graph/fuse_rmsnorm_matmul.h"
#include "graph/fuse_rope_kv.h"
#include "runtime/generator.h"
#include "model/hparams.h"
#include "runtime/weight_source.h"
#include "prompt_forward.h"
#include "test_models.h"

using WR = duet::graph::WeightRole;

using namespace duet;
using namespace duet::runtime;

namespace {

struct Result {
    std::vector<int32_t> tokens;
    std::vector<float> logits;  // of the prompt's forward, every position
    graph::OpTrace trace;
    int64_t in_place = 0, copied = 0;
};

// The model's default graph with the file's matmul dtypes and the chosen passes applied (what
// Engine(model, opts) builds).
graph::Graph graph_of(const Model& m, bool siblings, bool rope_kv, bool norm = false) {
    const model::Weights& w = m.weights();
    graph::Graph g = graph::build_graph(model_shape(m.hparams(), w.layers[0][WR::ATTN_Q].dtype, DType::F16));
    const PlainWeightSource ws(w);
    for (graph::Node& n : g.nodes)
        if (n.kind == graph::OpKind::MATMUL || n.kind == graph::OpKind::EMBED) n.dtype = ws.tensor(n.role, n.layer).dtype;
    if (siblings) g = graph::FuseSiblingMatmuls().run(g);
    if (rope_kv) g = graph::FuseRopeKvWrite().run(g);
    if (norm) g = graph::FuseRmsNormMatmul().run(g);
    return g;
}

// fuse: EngineOptions::fuse (every fusion); graph: run this graph instead (fuse off).
Result run(const std::shared_ptr<const Model>& m, bool fuse, int64_t n_predict, const graph::Graph* graph = nullptr) {
    EngineOptions o;
    o.n_threads = 2;
    o.kv_type = DType::F16;
    o.n_ctx = 64;
    o.fuse = fuse;
    Engine e = graph ? Engine(m, o, *graph) : Engine(m, o);
    Result r;
    r.in_place = e.plain_weights().fused_in_place();
    r.copied = e.plain_weights().fused_copied();
    const std::vector<int32_t> prompt = test::probe_prompt(m->hparams().n_vocab);
    {
        SequenceKv s;
        r.logits = test::prompt_logits(e, prompt, s);
        s.release(e.kv_cache());
    }
    e.set_trace(&r.trace);
    Generator g(e);
    GenerateOptions go;
    go.n_predict = n_predict;
    go.sampling.temperature = 0;
    go.add_bos = false;
    r.tokens = g.generate_tokens(prompt, go, {});
    e.set_trace(nullptr);
    return r;
}

int count(const graph::OpTrace& t, graph::OpKind kind) {
    int n = 0;
    for (const graph::OpRecord& r : t) n += r.kind == kind;
    return n;
}

int count(const graph::OpTrace& t, graph::WeightRole role) {
    int n = 0;
    for (const graph::OpRecord& r : t) n += r.kind == graph::OpKind::MATMUL && r.role == role;
    return n;
}

// RMSNorms per forward that join their matmul: a norm joins when that matmul is its one consumer
// and quantises its input — with siblings fused, Q|K|V and gate|up of one dtype (a K-quant file
// keeps attn_v in q6_k on some layers: three consumers), and the lm head; on the plain graph only
// the lm head has a norm of its own.
int joined_norms(const Model& m, bool siblings) {
    const auto quantised = [](DType t) { return graph::quantises_activations(t, false); };
    int n = quantised(PlainWeightSource(m.weights()).tensor(graph::WeightRole::LM_HEAD, -1).dtype);
    if (!siblings) return n;
    for (const model::RoleTensors& l : m.weights().layers) {
        n += l[WR::ATTN_Q].dtype == l[WR::ATTN_K].dtype && l[WR::ATTN_K].dtype == l[WR::ATTN_V].dtype && quantised(l[WR::ATTN_Q].dtype);
        n += l[WR::FFN_GATE].dtype == l[WR::FFN_UP].dtype && quantised(l[WR::FFN_GATE].dtype);
    }
    return n;
}

void expect_same_tokens(const std::shared_ptr<const Model>& m, const std::string& what) {
    const Result a = run(m, false, 12), b = run(m, true, 12);
    EXPECT_EQ(a.tokens, b.tokens) << what;
    ASSERT_EQ(a.logits.size(), b.logits.size());
    double max_abs = 0, max_ref = 1e-6;
    for (size_t i = 0; i < a.logits.size(); ++i) {
        max_abs = std::max(max_abs, double(std::fabs(a.logits[i] - b.logits[i])));
        max_ref = std::max(max_ref, double(std::fabs(a.logits[i])));
    }
    EXPECT_LT(max_abs / max_ref, 1e-5) << what;
    // Every Q/K/V and gate/up group whose matrices share a dtype ran as one matmul (a K-quant
    // file may keep some matrices in another dtype: those stay unfused).
    int qkv = 0, gate_up = 0;
    for (const model::RoleTensors& l : m->weights().layers) {
        qkv += l[WR::ATTN_Q].dtype == l[WR::ATTN_K].dtype && l[WR::ATTN_K].dtype == l[WR::ATTN_V].dtype;
        gate_up += l[WR::FFN_GATE].dtype == l[WR::FFN_UP].dtype;
    }
    const int norms = joined_norms(*m, true);
    const int forwards = count(a.trace, graph::WeightRole::LM_HEAD);
    EXPECT_EQ(count(b.trace, graph::WeightRole::ATTN_QKV), qkv * forwards) << what;
    EXPECT_EQ(count(b.trace, graph::WeightRole::FFN_GATE_UP), gate_up * forwards) << what;
    const int n_layer = int(m->hparams().n_layer);
    EXPECT_EQ(count(b.trace, graph::OpKind::ROPE_KV_WRITE), n_layer * forwards) << what;
    EXPECT_EQ(count(b.trace, graph::OpKind::ROPE) + count(b.trace, graph::OpKind::KV_WRITE), 0) << what;
    EXPECT_EQ(count(b.trace, graph::OpKind::RMSNORM), (2 * n_layer + 1 - norms) * forwards) << what;
    EXPECT_EQ(a.trace.size() - b.trace.size(), size_t((2 * qkv + gate_up + n_layer + norms) * forwards)) << what;
}

int fused_norms(const graph::OpTrace& t) {
    int n = 0;
    for (const graph::OpRecord& r : t) n += r.rmsnorm_fused;
    return n;
}

// RMSNorm fused into the next matmul's input quantisation changes no numerics: one kernel
// normalises and quantises each row as rmsnorm() then matmul() would, bit for bit — on the
// siblings + RoPE fused graph (--fuse without this pass: one consumer per norm) and on the plain
// graph (Q/K/V, gate/up: several consumers, so only the output norm joins the lm head). The
// engine's --fuse runs it (EngineOptions::fuse).
void expect_norm_fusion_bit_exact(const std::shared_ptr<const Model>& m, const std::string& what) {
    for (bool siblings : {true, false}) {
        const graph::Graph plain = graph_of(*m, siblings, siblings), fused = graph_of(*m, siblings, siblings, true);
        const Result a = run(m, false, 12, &plain), b = run(m, false, 12, &fused);
        const std::string w = what + (siblings ? " (siblings, rope fused)" : " (plain graph)");
        EXPECT_EQ(a.tokens, b.tokens) << w;
        ASSERT_EQ(a.logits.size(), b.logits.size()) << w;
        size_t differ = 0;
        for (size_t i = 0; i < a.logits.size(); ++i)
            differ += std::memcmp(&a.logits[i], &b.logits[i], sizeof(float)) != 0;
        EXPECT_EQ(differ, 0u) << w << ": logits not bit-identical";
        const int forwards = count(a.trace, graph::WeightRole::LM_HEAD);
        const int per_forward = joined_norms(*m, siblings);
        EXPECT_EQ(a.trace.size() - b.trace.size(), size_t(per_forward * forwards)) << w;
        EXPECT_EQ(fused_norms(b.trace), per_forward * forwards) << w;
        EXPECT_EQ(count(a.trace, graph::OpKind::RMSNORM) - count(b.trace, graph::OpKind::RMSNORM), per_forward * forwards)
            << w;
    }
    // --fuse (every pass) against --fuse without this one: the same bits
    const Result a = run(m, false, 12, nullptr), on = run(m, true, 12);
    const graph::Graph without = graph_of(*m, true, true);
    const Result off = run(m, false, 12, &without);
    EXPECT_EQ(on.tokens, off.tokens) << what;
    EXPECT_EQ(on.tokens, a.tokens) << what;
    ASSERT_EQ(on.logits.size(), off.logits.size());
    EXPECT_EQ(std::memcmp(on.logits.data(), off.logits.data(), on.logits.size() * sizeof(float)), 0)
        << what << ": --fuse logits differ from the graph without the norm fusion";
    EXPECT_EQ(fused_norms(on.trace), joined_norms(*m, true) * count(on.trace, graph::WeightRole::LM_HEAD)) << what;
}

// RoPE + KV write fused changes no numerics: the same kernels on the same values, bit for bit —
// on the plain graph and on the sibling-fused one (k read through a strided view of q|k|v).
void expect_rope_kv_bit_exact(const std::shared_ptr<const Model>& m, const std::string& what) {
    for (bool siblings : {false, true}) {
        const graph::Graph plain = graph_of(*m, siblings, false), fused = graph_of(*m, siblings, true);
        const Result a = run(m, false, 12, &plain), b = run(m, false, 12, &fused);
        const std::string w = what + (siblings ? " (siblings fused)" : "");
        EXPECT_EQ(a.tokens, b.tokens) << w;
        ASSERT_EQ(a.logits.size(), b.logits.size()) << w;
        size_t differ = 0;
        for (size_t i = 0; i < a.logits.size(); ++i) differ += std::memcmp(&a.logits[i], &b.logits[i], sizeof(float)) != 0;
        EXPECT_EQ(differ, 0u) << w << ": logits not bit-identical";
        const int forwards = count(a.trace, graph::WeightRole::LM_HEAD);
        EXPECT_EQ(a.trace.size() - b.trace.size(), size_t(m->hparams().n_layer * forwards)) << w;
        EXPECT_EQ(count(b.trace, graph::OpKind::ROPE_KV_WRITE), int(m->hparams().n_layer) * forwards) << w;
    }
}

class FusionOnPreset : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(FusionOnPreset, SameTokensAsTheUnfusedGraph) {
    const auto& [preset, dtype] = GetParam();
    const std::string path = test::generated_model(preset, dtype);
    ASSERT_FALSE(path.empty());
    expect_same_tokens(Model::load(path), preset + " " + dtype);
}

TEST_P(FusionOnPreset, RopeKvWriteBitIdenticalTokensAndLogits) {
    const auto& [preset, dtype] = GetParam();
    const std::string path = test::generated_model(preset, dtype);
    ASSERT_FALSE(path.empty());
    expect_rope_kv_bit_exact(Model::load(path), preset + " " + dtype);
}

// Quantised weights: the norms join (q8_0, q4_0: 2 per layer and the output norm; the q4_k mix:
// the FFN and output norms, and the attention norm of layers whose Q/K/V share a dtype); f32,
// f16: none (the matmul reads f32 rows, no quantisation to fuse into: the graph is left alone).
TEST_P(FusionOnPreset, RmsNormIntoQuantisationBitIdenticalTokensAndLogits) {
    const auto& [preset, dtype] = GetParam();
    const std::string path = test::generated_model(preset, dtype);
    ASSERT_FALSE(path.empty());
    const auto m = Model::load(path);
    const int joined = joined_norms(*m, true);
    const int64_t n_layer = m->hparams().n_layer;
    const int64_t want_min = dtype == "q8_0" || dtype == "q4_0" ? 2 * n_layer + 1 : dtype == "q4_k" ? n_layer + 1 : 0;
    const int64_t want_max = dtype == "q4_k" ? 2 * n_layer + 1 : want_min;
    EXPECT_GE(joined, want_min);
    EXPECT_LE(joined, want_max);
    expect_norm_fusion_bit_exact(m, preset + " " + dtype);
}

INSTANTIATE_TEST_SUITE_P(Presets, FusionOnPreset,
                         ::testing::Values(std::tuple{"tiny-llama", "f32"}, std::tuple{"tiny-llama", "f16"},
                                           std::tuple{"tiny-mistral", "q8_0"}, std::tuple{"tiny-qwen2", "f16"},
                                           std::tuple{"tiny-llama3", "q4_0"}, std::tuple{"small-llama", "q4_k"}),
                         [](const auto& info) {
                             std::string n = std::get<0>(info.param) + "_" + std::get<1>(info.param);
                             for (char& c : n)
                                 if (c == '-') c = '_';
                             return n;
                         });

// A ragged batch: the fused output norm gathers the rows whose logits are wanted (the last of a
// sequence without all_logits, every row of one with it), as the unfused norm does.
TEST(Fusion, RmsNormFusedOutputNormGathersTheRowsOfARaggedBatch) {
    const std::string path = test::generated_model("tiny-mistral", "q8_0");
    ASSERT_FALSE(path.empty());
    const auto m = Model::load(path);
    std::vector<float> logits[2];
    for (int fused = 0; fused < 2; ++fused) {
        EngineOptions o;
        o.n_threads = 2;
        o.n_ctx = 32;
        o.n_seq_max = 2;
        Engine e(m, o, graph_of(*m, true, true, fused == 1));
        SequenceKv a, b;
        const std::vector<int32_t> ta = {1, 2, 3, 4, 5}, tb = {6, 7};
        std::vector<SeqInput> batch = {{ta, &a, false}, {tb, &b, true}};
        ForwardOutput out;
        ASSERT_EQ(e.forward(batch, out), ForwardStatus::OK);
        ASSERT_EQ(out.logits.size(), size_t(3 * m->hparams().n_vocab));
        logits[fused] = out.logits;
        a.release(e.kv_cache());
        b.release(e.kv_cache());
    }
    EXPECT_EQ(std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * sizeof(float)), 0);
}

TEST(Fusion, Stories260KSameTokens) {
    const std::string path = test::shared_model("stories260K.gguf");
    if (path.empty()) GTEST_SKIP() << "stories260K.gguf not in " << DUET_SHARED_DIR << "/models";
    expect_same_tokens(Model::load(path), "stories260K");
    expect_rope_kv_bit_exact(Model::load(path), "stories260K");
}

// Any file: DUET_FUSION_MODEL=path.gguf (skipped when unset).
TEST(Fusion, FileFromEnvironmentSameTokens) {
    const char* path = std::getenv("DUET_FUSION_MODEL");
    if (!path || !*path) GTEST_SKIP() << "DUET_FUSION_MODEL not set";
    expect_same_tokens(Model::load(path), path);
}

}  // namespace
