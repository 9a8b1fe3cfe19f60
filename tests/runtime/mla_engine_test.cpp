// The engine's multi-head latent attention (runtime/engine_mla.cpp) on the generated
// tiny-deepseek2: the cache holds one latent row per token and layer, a file with W_kv_b unsplit
// (older llama.cpp conversions) gives the logits of the split one (the PIM layout and --fuse on it:
// moe_mla_layout_test.cpp). Numbers against the numpy reference are the reference.tiny-deepseek2.*
// ctest cases; ragged batches, incremental decode and shared prefixes are EngineOnPreset's.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/engine.h"
#include "test_models.h"
#include "unsplit_kv_b.h"

using namespace duet;
using namespace duet::runtime;

namespace {

EngineOptions mla_opts() {
    EngineOptions o;
    o.n_threads = 2;
    o.kv_type = DType::F32;
    o.n_ctx = 64;
    o.block_tokens = 4;
    return o;
}

// Logits of a 10-token prefill and three decode steps.
std::vector<float> run_steps(const std::shared_ptr<const Model>& m) {
    Engine e(m, mla_opts());
    SequenceKv s;
    std::vector<float> all;
    std::vector<int32_t> prompt;
    for (int i = 0; i < 10; ++i) prompt.push_back(int32_t((i * 37 + 5) % m->hparams().n_vocab));
    for (const std::vector<int32_t>& toks : {prompt, {7}, {99}, {3}}) {
        SeqInput in{toks, &s, false};
        ForwardOutput out;
        EXPECT_EQ(e.forward({&in, 1}, out), ForwardStatus::OK);
        all.insert(all.end(), out.logits.begin(), out.logits.end());
    }
    s.release(e.kv_cache());
    return all;
}

}  // namespace

TEST(MlaEngine, CacheHoldsOneLatentRowPerTokenAndLayer) {
    const std::string path = test::generated_model("tiny-deepseek2", "f32");
    ASSERT_FALSE(path.empty());
    auto m = Model::load(path);
    for (DType kv : {DType::F32, DType::F16, DType::Q8_0}) {
        EngineOptions o = mla_opts();
        o.kv_type = kv;
        Engine e(m, o);
        const KvCache& c = e.kv_cache();
        EXPECT_TRUE(c.config().latent);
        // kv_lora_rank 64 + qk_rope_head_dim 32 values, not K and V of 4 heads of 64
        EXPECT_EQ(c.row_bytes(), row_bytes(kv, 96));
        EXPECT_EQ(c.block_bytes(), size_t(2 /*layers*/ * 4 /*tokens*/) * row_bytes(kv, 96));
    }
}

TEST(MlaEngine, UnsplitKvBGivesTheLogitsOfTheSplitFile) {
    const std::string path = test::generated_model("tiny-deepseek2", "f32");
    ASSERT_FALSE(path.empty());
    auto split = Model::load(path);
    auto unsplit = Model::load(test::with_unsplit_kv_b(path));
    EXPECT_FALSE(split->hparams().mla_kv_b);
    EXPECT_TRUE(unsplit->hparams().mla_kv_b);
    const std::vector<float> a = run_steps(split), b = run_steps(unsplit);
    ASSERT_EQ(a.size(), b.size());
    float worst = 0.0f;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
    EXPECT_LT(worst, 1e-4f);
}

TEST(MlaEngine, HeadMatmulRecordsReadEveryHeadOnce) {
    auto m = Model::load(test::generated_model("tiny-deepseek2", "q8_0"));
    Engine e(m, mla_opts());
    graph::OpTrace trace;
    e.set_trace(&trace);
    SequenceKv s;
    const std::vector<int32_t> toks = {1, 2, 3};
    SeqInput in{toks, &s, false};
    ForwardOutput out;
    ASSERT_EQ(e.forward({&in, 1}, out), ForwardStatus::OK);
    int n = 0;
    for (const graph::OpRecord& r : trace) {
        if (r.kind != graph::OpKind::HEAD_MATMUL) continue;
        ++n;
        EXPECT_EQ(r.weight_dtype, DType::Q8_0);
        EXPECT_EQ(r.weight_bytes, uint64_t(4) * uint64_t(r.n) * row_bytes(DType::Q8_0, r.k));  // 4 heads
    }
    EXPECT_EQ(n, 2 * 2);  // attn_k_b and attn_v_b in each of the 2 layers
    s.release(e.kv_cache());
}
