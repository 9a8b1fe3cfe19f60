// Engine on generated tiny models of every preset: ragged batching, incremental decode,
// KV precision, custom weight sources and exhaustion.
#include "runtime/engine.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "test_models.h"

using namespace duet;
using namespace duet::runtime;

namespace {

std::shared_ptr<const Model> load(const std::string& preset, const std::string& dtype = "f32") {
    const std::string path = test::generated_model(preset, dtype);
    if (path.empty()) return nullptr;
    return Model::load(path);
}

EngineOptions opts(DType kv = DType::F32, int64_t n_seq = 4) {
    EngineOptions o;
    o.n_threads = 2;
    o.kv_type = kv;
    o.n_ctx = 64;
    o.n_seq_max = n_seq;
    o.block_tokens = 4;  // small blocks: sequences span several, unordered blocks
    return o;
}

std::vector<int32_t> tokens_for(int64_t n_vocab, int n, int salt) {
    std::vector<int32_t> t;
    for (int i = 0; i < n; ++i) t.push_back(int32_t((i * 7 + salt * 13 + 1) % n_vocab));
    return t;
}

// All-position logits of one sequence run alone on a fresh engine.
std::vector<float> run_alone(const std::shared_ptr<const Model>& m, const std::vector<int32_t>& toks, DType kv) {
    Engine e(m, opts(kv));
    SequenceKv s;
    SeqInput in{toks, &s, true};
    ForwardOutput out;
    EXPECT_EQ(e.forward({&in, 1}, out), ForwardStatus::OK);
    s.release(e.kv_cache());
    return out.logits;
}

double max_rel_diff(const float* a, const float* b, size_t n) {
    double max_abs = 0, max_ref = 1e-6;
    for (size_t i = 0; i < n; ++i) {
        max_abs = std::max(max_abs, double(std::fabs(a[i] - b[i])));
        max_ref = std::max(max_ref, double(std::fabs(b[i])));
    }
    return max_abs / max_ref;
}

class EngineOnPreset : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        model_ = load(GetParam());
        ASSERT_TRUE(model_) << "duet gen-model failed for " << GetParam();
    }
    std::shared_ptr<const Model> model_;
};

TEST_P(EngineOnPreset, RaggedBatchEqualsEachSequenceAlone) {
    const int64_t nv = model_->hparams().n_vocab;
    const std::vector<std::vector<int32_t>> seqs = {tokens_for(nv, 7, 1), tokens_for(nv, 1, 2), tokens_for(nv, 12, 3)};
    Engine e(model_, opts());
    // Interleave block allocation: give sequence 1 a head start so the tables are not contiguous.
    std::vector<SequenceKv> kv(3);
    ForwardOutput out;
    std::vector<SeqInput> batch;
    for (size_t s = 0; s < 3; ++s) batch.push_back({seqs[s], &kv[s], true});
    ASSERT_EQ(e.forward(batch, out), ForwardStatus::OK);
    ASSERT_EQ(out.row_begin, (std::vector<int64_t>{0, 7, 8}));
    for (size_t s = 0; s < 3; ++s) {
        EXPECT_EQ(kv[s].n_tokens(), int64_t(seqs[s].size()));
        const std::vector<float> alone = run_alone(model_, seqs[s], DType::F32);
        EXPECT_LT(max_rel_diff(out.row(s), alone.data(), alone.size()), 1e-5) << "sequence " << s;
        kv[s].release(e.kv_cache());
    }
    EXPECT_EQ(e.kv_cache().n_free(), e.kv_cache().n_blocks());
}

TEST_P(EngineOnPreset, IncrementalDecodeEqualsFullPrefill) {
    const int64_t nv = model_->hparams().n_vocab;
    const std::vector<int32_t> toks = tokens_for(nv, 10, 5);
    const std::vector<float> full = run_alone(model_, toks, DType::F32);

    Engine e(model_, opts());
    SequenceKv s;
    ForwardOutput out;
    SeqInput pre{std::span<const int32_t>(toks.data(), 6), &s, false};
    ASSERT_EQ(e.forward({&pre, 1}, out), ForwardStatus::OK);
    EXPECT_LT(max_rel_diff(out.last(0), full.data() + 5 * nv, size_t(nv)), 1e-5);
    for (size_t i = 6; i < toks.size(); ++i) {
        SeqInput step{std::span<const int32_t>(toks.data() + i, 1), &s, false};
        ASSERT_EQ(e.forward({&step, 1}, out), ForwardStatus::OK);
        EXPECT_LT(max_rel_diff(out.last(0), full.data() + i * nv, size_t(nv)), 1e-5) << "position " << i;
    }
    s.release(e.kv_cache());
}

TEST_P(EngineOnPreset, F16KvCloseToF32Kv) {
    const std::vector<int32_t> toks = tokens_for(model_->hparams().n_vocab, 12, 9);
    const std::vector<float> a = run_alone(model_, toks, DType::F32);
    const std::vector<float> b = run_alone(model_, toks, DType::F16);
    const double d = max_rel_diff(b.data(), a.data(), a.size());
    EXPECT_LT(d, 1e-2);  // f16 keeps ~11 bits: relative error per element ~5e-4, a few layers deep
    EXPECT_GT(d, 0.0);   // the type is really used
}

TEST_P(EngineOnPreset, SharedPrefixBlocksGiveTheSameLogits) {
    // Issue 5's prefix cache: B reuses A's KV blocks for a common prefix (no copy, refcounted);
    // for a prefix ending inside a block, B's first append copies that block (copy on write).
    const int64_t nv = model_->hparams().n_vocab;
    const std::vector<int32_t> a = tokens_for(nv, 10, 4);
    for (int64_t n_shared : {8, 6}) {  // block_tokens = 4: 8 ends on a block boundary, 6 inside one
        std::vector<int32_t> b(a.begin(), a.begin() + n_shared);
        for (int i = 0; i < 5; ++i) b.push_back(int32_t((i * 11 + 2) % nv));
        const std::vector<float> alone = run_alone(model_, b, DType::F32);

        Engine e(model_, opts());
        SequenceKv sa, sb;
        ForwardOutput out;
        SeqInput ia{a, &sa, false};
        ASSERT_EQ(e.forward({&ia, 1}, out), ForwardStatus::OK);
        const int64_t used_by_a = e.kv_cache().n_used();
        sb.share_prefix(e.kv_cache(), sa, n_shared);
        EXPECT_EQ(e.kv_cache().n_used(), used_by_a);  // nothing copied yet
        SeqInput ib{std::span<const int32_t>(b.data() + n_shared, b.size() - size_t(n_shared)), &sb, true};
        ASSERT_EQ(e.forward({&ib, 1}, out), ForwardStatus::OK);
        for (int64_t i = 0; i < 5; ++i)
            EXPECT_LT(max_rel_diff(out.row(0, i), alone.data() + (n_shared + i) * nv, size_t(nv)), 1e-5)
                << "shared " << n_shared << ", position " << n_shared + i;
        // A is untouched by B's writes: its next token still matches A computed alone.
        std::vector<int32_t> a2 = a;
        a2.push_back(3);
        const std::vector<float> a_alone = run_alone(model_, a2, DType::F32);
        SeqInput step{std::span<const int32_t>(a2.data() + a.size(), 1), &sa, false};
        ASSERT_EQ(e.forward({&step, 1}, out), ForwardStatus::OK);
        EXPECT_LT(max_rel_diff(out.last(0), a_alone.data() + a.size() * nv, size_t(nv)), 1e-5);
        sa.release(e.kv_cache());
        sb.release(e.kv_cache());
        EXPECT_EQ(e.kv_cache().n_used(), 0);
    }
}

INSTANTIATE_TEST_SUITE_P(Presets, EngineOnPreset,
                         ::testing::Values("tiny-llama", "tiny-llama3", "tiny-mistral", "tiny-qwen2", "tiny-mixtral",
                                           "tiny-qwen2moe", "tiny-qwen3moe", "tiny-deepseek2", "tiny-deepseek3",
                                           "tiny-deepseek2-yarn"),
                         [](const auto& info) {
                             std::string n = info.param;
                             for (char& c : n)
                                 if (c == '-') c = '_';
                             return n;
                         });

// A weight source that forwards to the plain one and counts calls: the engine must route
// every weight matmul through it, and the logits must not change.
class CountingSource : public WeightSource {
public:
    explicit CountingSource(const WeightSource& w) : plain_(w) {}
    WeightInfo info(graph::WeightRole r, int32_t l) const override { return plain_.info(r, l); }
    void matmul(graph::WeightRole r, int32_t l, const float* x, int64_t m, int64_t xs, float* y, int64_t ys,
                ThreadPool& p) const override {
        ++calls;
        plain_.matmul(r, l, x, m, xs, y, ys, p);
    }
    void matmul_stack(graph::WeightRole r, int32_t l, const StackRows* g, int64_t n, ThreadPool& p) const override {
        ++calls;
        plain_.matmul_stack(r, l, g, n, p);
    }
    mutable int calls = 0;

private:
    const WeightSource& plain_;
};

TEST(Engine, WeightSourceSeesEveryWeightMatmul) {
    auto m = load("tiny-llama");
    ASSERT_TRUE(m);
    const std::vector<int32_t> toks = tokens_for(m->hparams().n_vocab, 5, 1);
    const std::vector<float> ref = run_alone(m, toks, DType::F32);
    Engine e(m, opts());
    CountingSource src(e.plain_weights());
    e.set_weight_source(&src);
    SequenceKv s;
    SeqInput in{toks, &s, true};
    ForwardOutput out;
    ASSERT_EQ(e.forward({&in, 1}, out), ForwardStatus::OK);
    EXPECT_EQ(src.calls, 7 * m->hparams().n_layer + 1);
    EXPECT_EQ(max_rel_diff(out.logits.data(), ref.data(), ref.size()), 0.0);
    s.release(e.kv_cache());
}

TEST(Engine, KvExhaustionIsAReturnValueAndChangesNothing) {
    auto m = load("tiny-llama");
    ASSERT_TRUE(m);
    EngineOptions o = opts();
    o.kv_blocks = 3;  // 12 positions
    Engine e(m, o);
    SequenceKv a, b;
    const std::vector<int32_t> t8 = tokens_for(m->hparams().n_vocab, 8, 1);
    ForwardOutput out;
    SeqInput ia{t8, &a, false};
    ASSERT_EQ(e.forward({&ia, 1}, out), ForwardStatus::OK);
    SeqInput ib{t8, &b, false};
    std::vector<SeqInput> both = {ia, ib};
    EXPECT_EQ(e.forward(both, out), ForwardStatus::KV_FULL);
    EXPECT_EQ(a.n_tokens(), 8);
    EXPECT_EQ(b.n_tokens(), 0);
    EXPECT_EQ(e.kv_cache().n_used(), 2);
    a.release(e.kv_cache());
    EXPECT_EQ(e.kv_cache().n_free(), 3);
}

TEST(Engine, ContextLimitAndBadTokens) {
    auto m = load("tiny-llama");
    ASSERT_TRUE(m);
    EngineOptions o = opts();
    o.n_ctx = 4;
    Engine e(m, o);
    SequenceKv s;
    ForwardOutput out;
    const std::vector<int32_t> t5 = tokens_for(m->hparams().n_vocab, 5, 1);
    SeqInput in{t5, &s, false};
    EXPECT_EQ(e.forward({&in, 1}, out), ForwardStatus::CTX_EXCEEDED);
    const std::vector<int32_t> bad = {1, int32_t(m->hparams().n_vocab)};
    SeqInput ib{bad, &s, false};
    try {
        e.forward({&ib, 1}, out);
        FAIL() << "no error";
    } catch (const Error& err) {
        EXPECT_EQ(std::string(err.what()),
                  fmt::format("forward: token id {} is out of range (allowed: 0..{})", m->hparams().n_vocab,
                              m->hparams().n_vocab - 1));
    }
    EXPECT_EQ(e.kv_cache().n_used(), 0);
}

}  // namespace
