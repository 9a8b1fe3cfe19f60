// The PIM weight layout and --fuse on the tiny Mixture-of-Experts and latent-attention models of
// `duet gen-model`: every expert's and every head's matrix in the layout with a base and block
// index of its own, each equal to the plain stack's matrix under matmul_stack; and the engine's
// logits and greedy tokens with the layout, with --fuse and with both equal to the plain engine's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "graph/tensor_catalogue.h"
#include "model/hparams.h"
#include "runtime/engine.h"
#include "runtime/generator.h"
#include "runtime/pim_weight_source.h"
#include "prompt_forward.h"
#include "test_models.h"
#include "unsplit_kv_b.h"

namespace duet::runtime {
namespace {

const char* const kPresets[] = {"tiny-qwen2moe", "tiny-mixtral", "tiny-qwen3moe", "tiny-deepseek2", "tiny-deepseek3"};

EngineOptions opts(bool fuse) {
    EngineOptions o;
    o.n_threads = 2;
    o.kv_type = DType::F32;
    o.n_ctx = 64;
    o.block_tokens = 4;
    o.fuse = fuse;
    return o;
}

// 64-byte DRAM rows and 1 KiB blocks: the float matrices have several k-blocks and row blocks.
const layout::MemoryOrganisation kOrg{4, 2, 64};
layout::PimLayoutParams params() {
    layout::PimLayoutParams p;
    p.block_size_kb = 1;
    return p;
}

double max_abs(const std::vector<float>& v) {
    double s = 0;
    for (float x : v) s = std::max(s, double(std::fabs(x)));
    return s;
}

// Matrix by matrix: each matrix of each stack (experts, heads) through the layout against the
// plain stack, on 1 and 3 rows.
void check_matrices(const std::string& preset, const std::string& dtype, bool int8 = false) {
    auto model = Model::load(test::generated_model(preset, dtype, 5));
    Engine engine(model, opts(false));
    const PimLayoutWeightSource pim(engine.plain_weights(), engine.graph(), params(), kOrg, false, int8);
    int64_t expected = 0, stacks = 0, routers = 0;
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> d(-1, 1);
    for (const graph::MatrixUse& mu : graph::matrices(engine.graph())) {
        expected += mu.count;
        routers += graph::weight_spec(mu.role).keep_f32;
        const WeightInfo wi = engine.plain_weights().info(mu.role, mu.layer);
        EXPECT_EQ(pim.info(mu.role, mu.layer).n, wi.n);
        EXPECT_EQ(pim.info(mu.role, mu.layer).k, wi.k);
        EXPECT_EQ(pim.info(mu.role, mu.layer).dtype, wi.dtype);
        if (mu.count == 1) continue;  // dense matrices: pim_weight_source_test.cpp
        ++stacks;
        EXPECT_EQ(pim.info(mu.role, mu.layer).bytes, wi.bytes) << graph::weight_role_name(mu.role);
        for (int64_t e = 0; e < mu.count; ++e) {
            EXPECT_EQ(pim.plan(mu.role, mu.layer, e).n_rows, wi.n);
            for (int64_t m : {1, 3}) {
                std::vector<float> x(size_t(m * wi.k)), y0(size_t(m * wi.n)), y1(size_t(m * wi.n));
                for (auto& v : x) v = d(rng);
                const StackRows g0{e, x.data(), m, wi.k, y0.data(), wi.n}, g1{e, x.data(), m, wi.k, y1.data(), wi.n};
                engine.plain_weights().matmul_stack(mu.role, mu.layer, &g0, 1, engine.pool());
                pim.matmul_stack(mu.role, mu.layer, &g1, 1, engine.pool());
                const double tol = 1e-5 * (max_abs(y0) + 1);  // another f32 summation order
                for (size_t i = 0; i < y0.size(); ++i)
                    ASSERT_NEAR(y0[i], y1[i], tol) << preset << " " << dtype << " "
                                                   << graph::weight_role_name(mu.role) << " L" << mu.layer << " #" << e;
            }
        }
    }
    EXPECT_GT(stacks, 0) << preset;
    EXPECT_EQ(pim.pim_count(), expected) << preset;
    // [pim] precision = i8: every Q8_0 matrix as int8 quants + scales, the f32 routers as f32
    if (int8) {
        EXPECT_GT(routers, 0);
        EXPECT_EQ(pim.int8_count(), expected - routers) << preset;
    }
}

TEST(MoeMlaPimLayout, EveryExpertAndHeadMatrixMatchesThePlainStack) {
    for (const char* p : kPresets)
        for (const char* dt : {"f32", "f16", "q8_0", "q4_k"}) check_matrices(p, dt);
}

TEST(MoeMlaPimLayout, Q8_0ExpertsHeldAsInt8RoutersAsF32) {
    for (const char* p : {"tiny-qwen2moe", "tiny-deepseek3"}) check_matrices(p, "q8_0", true);
}

struct EngineRun {
    std::vector<float> logits;  // the prompt's forward (every position), then three decode steps
    std::vector<int32_t> tokens;
    int64_t pim_matrices = 0;
    size_t n_nodes = 0;  // of the engine's graph
};

EngineRun run(const std::shared_ptr<const Model>& m, bool fuse, bool pim_layout, bool int8 = false) {
    Engine e(m, opts(fuse));
    std::unique_ptr<PimLayoutWeightSource> pim;
    EngineRun r;
    r.n_nodes = e.graph().nodes.size();
    if (pim_layout) {
        pim = std::make_unique<PimLayoutWeightSource>(e.plain_weights(), e.graph(), params(), kOrg, false, int8);
        e.set_weight_source(pim.get());
        r.pim_matrices = pim->pim_count();
    }
    const std::vector<int32_t> prompt = test::probe_prompt(m->hparams().n_vocab);
    {
        SequenceKv s;
        r.logits = test::prompt_logits(e, prompt, s);
        ForwardOutput out;
        for (int32_t t : {7, 99, 3}) {
            const std::vector<int32_t> one = {t};
            SeqInput step{one, &s, false};
            EXPECT_EQ(e.forward({&step, 1}, out), ForwardStatus::OK);
            r.logits.insert(r.logits.end(), out.logits.begin(), out.logits.end());
        }
        s.release(e.kv_cache());
    }
    Generator g(e);
    GenerateOptions go;
    go.n_predict = 8;
    go.sampling.temperature = 0;
    go.add_bos = false;
    r.tokens = g.generate_tokens(prompt, go, {});
    return r;
}

// Logits as the dense fusion test holds them: within 1e-5 of the largest logit; greedy tokens equal.
void expect_same(const EngineRun& a, const EngineRun& b, const std::string& what) {
    ASSERT_EQ(a.logits.size(), b.logits.size()) << what;
    double worst = 0;
    for (size_t i = 0; i < a.logits.size(); ++i) worst = std::max(worst, double(std::fabs(a.logits[i] - b.logits[i])));
    EXPECT_LT(worst / std::max(max_abs(a.logits), 1e-6), 1e-5) << what;
    EXPECT_EQ(a.tokens, b.tokens) << what;
    EXPECT_EQ(a.tokens.size(), 8u) << what;
}

// f(model, "preset dtype") for every tiny model in f32, f16 and q8_0.
template <class F>
void for_each_model(F&& f) {
    for (const char* p : kPresets)
        for (const char* dt : {"f32", "f16", "q8_0"})
            f(Model::load(test::generated_model(p, dt, 5)), std::string(p) + " " + dt);
}

TEST(MoeMlaPimLayout, EngineLogitsAndTokensEqualThePlainEngine) {
    for_each_model([](const std::shared_ptr<const Model>& m, const std::string& what) {
        const EngineRun plain = run(m, false, false), pim = run(m, false, true);
        EXPECT_GT(pim.pim_matrices, 0) << what;
        expect_same(plain, pim, what + " pim layout");
    });
}

TEST(MoeMlaPimLayout, Int8EngineEqualsThePlainEngine) {
    for (const char* p : kPresets) {
        auto m = Model::load(test::generated_model(p, "q8_0", 5));
        expect_same(run(m, false, false), run(m, false, true, true), std::string(p) + " q8_0 as int8");
    }
}

// A file with W_kv_b unsplit: the engine's f32 per-head split is read in place, the file's other
// matrices through the layout; the logits equal the plain engine's.
TEST(MoeMlaPimLayout, UnsplitKvBReadsTheEnginesSplitBesideTheLayout) {
    auto m = Model::load(test::with_unsplit_kv_b(test::generated_model("tiny-deepseek2", "f32", 5), "layout_kv_b"));
    ASSERT_TRUE(m->hparams().mla_kv_b);
    const EngineRun plain = run(m, false, false), pim = run(m, false, true);
    expect_same(plain, pim, "unsplit kv_b");
    expect_same(plain, run(m, true, true), "unsplit kv_b, --fuse with the pim layout");
    Engine e(m, opts(false));
    const PimLayoutWeightSource src(e.plain_weights(), e.graph(), params(), kOrg, false);
    int64_t dense = 0;  // every matrix but the heads of k_b / v_b
    for (const graph::MatrixUse& mu : graph::matrices(e.graph()))
        dense += mu.role == graph::WeightRole::ATTN_K_B || mu.role == graph::WeightRole::ATTN_V_B ? 0 : mu.count;
    EXPECT_EQ(src.pim_count(), dense);
}

TEST(MoeMlaFusion, FusedEngineEqualsThePlainEngine) {
    for_each_model([](const std::shared_ptr<const Model>& m, const std::string& what) {
        const EngineRun plain = run(m, false, false), fused = run(m, true, false);
        expect_same(plain, fused, what + " --fuse");
        // every model has something to fuse: Q|K|V, a dense layer's gate|up, RMSNorm into a
        // quantised matmul, RoPE into the KV write of non-latent attention
        EXPECT_LT(fused.n_nodes, plain.n_nodes) << what;
        expect_same(plain, run(m, true, true), what + " --fuse with the pim layout");
    });
}

}  // namespace
}  // namespace duet::runtime
