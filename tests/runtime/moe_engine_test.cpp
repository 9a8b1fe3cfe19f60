// The engine's Mixture-of-Experts FFN (runtime/engine_moe.cpp) on generated tiny MoE models: the
// records of the grouped expert matmuls (each chosen expert's weights read once per step, the
// others not at all). The PIM layout and --fuse on these models: moe_mla_layout_test.cpp. Numbers against the numpy
// reference are the reference.tiny-mixtral.* / tiny-qwen2moe.* / tiny-qwen3moe.* ctest cases;
// ragged batches, incremental decode and shared prefixes are EngineOnPreset's (engine_test.cpp).
#include <gtest/gtest.h>

#include <set>

#include "graph/op_record.h"
#include "runtime/engine.h"
#include "test_models.h"

using namespace duet;
using namespace duet::runtime;

namespace {

std::shared_ptr<const Model> load_moe(const std::string& preset, const std::string& dtype = "f32") {
    const std::string path = test::generated_model(preset, dtype);
    return path.empty() ? nullptr : Model::load(path);
}

EngineOptions moe_opts() {
    EngineOptions o;
    o.n_threads = 2;
    o.kv_type = DType::F32;
    o.n_ctx = 64;
    o.block_tokens = 4;
    return o;
}

// The MOE_MATMUL records of one forward of `toks` after `past` decoded positions.
std::vector<graph::OpRecord> expert_records(Engine& e, SequenceKv& s, const std::vector<int32_t>& toks) {
    graph::OpTrace trace;
    e.set_trace(&trace);
    SeqInput in{toks, &s, false};
    ForwardOutput out;
    EXPECT_EQ(e.forward({&in, 1}, out), ForwardStatus::OK);
    e.set_trace(nullptr);
    std::vector<graph::OpRecord> r;
    for (const graph::OpRecord& rec : trace)
        if (rec.kind == graph::OpKind::MOE_MATMUL) r.push_back(rec);
    return r;
}

}  // namespace

TEST(MoeEngine, DecodeReadsExactlyTheChosenExpertsWeights) {
    auto m = load_moe("tiny-mixtral", "q8_0");
    ASSERT_TRUE(m);
    const model::Hparams& hp = m->hparams();
    Engine e(m, moe_opts());
    SequenceKv s;
    std::vector<int32_t> prompt;
    for (int i = 0; i < 12; ++i) prompt.push_back(int32_t((i * 37 + 5) % hp.n_vocab));
    const auto pre = expert_records(e, s, prompt);
    ASSERT_EQ(pre.size(), size_t(3 * hp.n_layer));  // gate, up, down per layer
    const size_t rb_embd = row_bytes(DType::Q8_0, hp.n_embd), rb_ff = row_bytes(DType::Q8_0, hp.n_ff_exp);
    for (const auto& r : pre) {
        // 12 tokens x top-2 over 4 experts: at least 2 experts, at most 4, each read once
        EXPECT_GE(r.n_expert_active, hp.n_expert_used);
        EXPECT_LE(r.n_expert_active, hp.n_expert);
        EXPECT_EQ(r.m, 12 * hp.n_expert_used);  // routed rows
        const size_t rb = r.role == graph::WeightRole::FFN_DOWN_EXPS ? rb_ff : rb_embd;
        EXPECT_EQ(r.weight_bytes, uint64_t(r.n_expert_active) * uint64_t(r.n) * rb);
        EXPECT_EQ(r.weight_dtype, DType::Q8_0);
    }
    // one decode token: its k experts, a GEMV each
    const auto dec = expert_records(e, s, {7});
    ASSERT_EQ(dec.size(), size_t(3 * hp.n_layer));
    for (const auto& r : dec) {
        EXPECT_EQ(r.n_expert_active, hp.n_expert_used);
        EXPECT_EQ(r.m, hp.n_expert_used);
    }
    s.release(e.kv_cache());
}
