// The runtime knobs' real effects on the engine (config/runtime_knobs.h, workload/knob_effects.h):
//  - VLLM_ASCEND_ENABLE_PREFETCH_MLP: before each layer's attention the engine hints the first
//    prefetch_mlp_bytes of that layer's gate/up weights (runtime/mlp_prefetch.h), the logits
//    are bit-identical to a run without it;
//  - VLLM_ATTENTION_BACKEND=TORCH_SDPA: attention runs the scalar reference kernel, bit for bit
//    (the dispatched kernel is otherwise used, bit for bit);
//  - VLLM_ASCEND_MODEL_EXECUTE_TIME_OBSERVE: one call per forward with its phase and tokens, and
//    `duet run` prints one line per forward (the output model tests the rest).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>
#include <random>

#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/engine.h"
#include "test_models.h"

using WR = duet::graph::WeightRole;

using namespace duet;
using namespace duet::runtime;

namespace {

std::vector<float> prompt_logits(Engine& e, const std::vector<int32_t>& prompt) {
    SequenceKv s;
    SeqInput in{prompt, &s, true};
    ForwardOutput out;
    EXPECT_EQ(e.forward({&in, 1}, out), ForwardStatus::OK);
    s.release(e.kv_cache());
    return out.logits;
}

std::shared_ptr<const Model> tiny() {
    const std::string path = test::generated_model("tiny-llama", "f16");
    return path.empty() ? nullptr : Model::load(path);
}

std::vector<int32_t> prompt_of(const Model& m) {
    std::vector<int32_t> p;
    for (int i = 0; i < 7; ++i) p.push_back(int32_t((i * 13 + 5) % m.hparams().n_vocab));
    return p;
}

EngineOptions one_thread() {
    EngineOptions o;
    o.n_threads = 1;
    return o;
}

TEST(EngineKnobs, PrefetchMlpHintsEachLayersGateUpAndChangesNoNumber) {
    auto m = tiny();
    ASSERT_TRUE(m);
    EngineOptions o = one_thread();
    Engine plain(m, o);
    const uint64_t budget = 4096;  // smaller than a layer's gate/up: the budget binds
    o.prefetch_mlp_bytes = budget;
    Engine pre(m, o);
    ASSERT_NE(pre.mlp_prefetch(), nullptr);
    EXPECT_EQ(plain.mlp_prefetch(), nullptr);
    const std::vector<int32_t> p = prompt_of(*m);
    EXPECT_EQ(prompt_logits(pre, p), prompt_logits(plain, p));
    uint64_t per_forward = 0;
    for (const model::RoleTensors& l : m->weights().layers) {
        const uint64_t gate_up = l[WR::FFN_GATE].n_bytes() + l[WR::FFN_UP].n_bytes();
        ASSERT_GT(gate_up, budget);
        per_forward += std::min(gate_up, budget);
    }
    EXPECT_EQ(pre.mlp_prefetch()->bytes_issued(), per_forward);
    o.prefetch_mlp_bytes = uint64_t(1) << 40;  // more than the weights: each layer's whole gate/up
    Engine all(m, o);
    prompt_logits(all, p);
    uint64_t whole = 0;
    for (const model::RoleTensors& l : m->weights().layers) whole += l[WR::FFN_GATE].n_bytes() + l[WR::FFN_UP].n_bytes();
    EXPECT_EQ(all.mlp_prefetch()->bytes_issued(), whole);
}

// Per-op allocation (the agent ablation's static_plan row off): the scratch is one column range
// per activation (graph::plan_memory_without_reuse), so it is larger, and the numbers are the same.
TEST(EngineKnobs, PerOpAllocationTakesMoreScratchForTheSameLogits) {
    auto m = tiny();
    ASSERT_TRUE(m);
    EngineOptions o = one_thread();
    Engine planned(m, o);
    o.static_plan = false;
    Engine per_op(m, o);
    const std::vector<int32_t> p = prompt_of(*m);
    EXPECT_EQ(prompt_logits(per_op, p), prompt_logits(planned, p));
    const auto width = [](const Engine& e) { return uint64_t(e.memory_plan().arena_width); };
    EXPECT_EQ(per_op.scratch_bytes(), width(per_op) * p.size() * sizeof(float));
    EXPECT_EQ(planned.scratch_bytes(), width(planned) * p.size() * sizeof(float));
    EXPECT_GT(per_op.scratch_bytes(), planned.scratch_bytes());
}

TEST(EngineKnobs, ReferenceAttentionRunsTheScalarKernelBitForBit) {
    const int64_t n_head = 4, n_head_kv = 2, head_dim = 16, bt = 4, n_kv = 11;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1, 1);
    const int64_t row = n_head_kv * head_dim;
    std::vector<std::vector<float>> kb(3, std::vector<float>(size_t(bt * row))), vb = kb;
    for (auto* blocks : {&kb, &vb})
        for (auto& b : *blocks)
            for (float& x : b) x = u(rng);
    std::vector<const void*> kp, vp;
    for (int i = 0; i < 3; ++i) kp.push_back(kb[size_t(i)].data()), vp.push_back(vb[size_t(i)].data());
    const kernels::KvView kv{kp.data(), vp.data(), bt, DType::F32};
    const int64_t n_q = 3, pos0 = n_kv - n_q;
    std::vector<float> q(size_t(n_q * n_head * head_dim));
    for (float& x : q) x = u(rng);
    ThreadPool pool(1);
    auto via_dispatcher = [&](bool reference) {
        Dispatcher d(pool, nullptr);
        d.set_reference_attention(reference);
        std::vector<float> out(q.size());
        d.attention({{q.data(), n_q, pos0, kv, out.data()}}, n_head, n_head_kv, head_dim, 0.25f);
        return out;
    };
    std::vector<float> ref(q.size()), fast(q.size());
    kernels::ref::attention(q.data(), n_q, pos0, n_head, n_head_kv, head_dim, kv, 0.25f, ref.data(), pool);
    kernels::attention(q.data(), n_q, pos0, n_head, n_head_kv, head_dim, kv, 0.25f, fast.data(), pool);
    EXPECT_EQ(via_dispatcher(true), ref);
    EXPECT_EQ(via_dispatcher(false), fast);
}

TEST(EngineKnobs, ExecuteTimeObserverSeesEveryForward) {
    auto m = tiny();
    ASSERT_TRUE(m);
    std::vector<ForwardTime> seen;
    EngineOptions o = one_thread();
    o.on_forward = [&](const ForwardTime& t) { seen.push_back(t); };
    Engine e(m, o);
    SequenceKv s;
    const std::vector<int32_t> p = prompt_of(*m);
    ForwardOutput out;
    SeqInput in{p, &s, false};
    ASSERT_EQ(e.forward({&in, 1}, out), ForwardStatus::OK);
    const std::vector<int32_t> one{p[0]};
    SeqInput step{one, &s, false};
    ASSERT_EQ(e.forward({&step, 1}, out), ForwardStatus::OK);
    s.release(e.kv_cache());
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[0].index, 0);
    EXPECT_TRUE(seen[0].prefill);
    EXPECT_EQ(seen[0].n_tokens, int64_t(p.size()));
    EXPECT_EQ(seen[1].index, 1);
    EXPECT_FALSE(seen[1].prefill);
    EXPECT_EQ(seen[1].n_tokens, 1);
    EXPECT_GT(seen[0].wall_ms, 0);
}

TEST(EngineKnobs, RunPrintsOneExecuteTimeLinePerForward) {
    const std::string model = test::generated_model("tiny-llama", "f16");
    ASSERT_FALSE(model.empty());
    const std::string o = std::string(DUET_BINARY_DIR) + "/engine_knobs." + std::to_string(::getpid());
    auto run = [&](const std::string& env, int want_rc = 0) {
        const int st = std::system(fmt::format("env {} '{}' run -m '{}' -p hello -n 4 --temp 0 > '{}' 2>&1", env,
                                               test::duet_binary(), model, o).c_str());
        EXPECT_EQ(WEXITSTATUS(st), want_rc) << env;
        std::ifstream f(o);
        return std::string(std::istreambuf_iterator<char>(f), {});
    };
    const std::string on = run("VLLM_ASCEND_MODEL_EXECUTE_TIME_OBSERVE=1 VLLM_ATTENTION_BACKEND=TORCH_SDPA "
                               "VLLM_ASCEND_ENABLE_PREFETCH_MLP=1");
    EXPECT_NE(on.find("execute time: forward 0 (prefill, "), std::string::npos) << on;
    // each generated token after the first is one decode forward (generation may stop early at end of text)
    if (on.find("execute time: forward 1 ") != std::string::npos) {
        EXPECT_NE(on.find("execute time: forward 1 (decode, 1 token, 1 sequence): "), std::string::npos) << on;
    }
    EXPECT_EQ(run("-u VLLM_ASCEND_MODEL_EXECUTE_TIME_OBSERVE").find("execute time"), std::string::npos);
    const std::string bad = run("VLLM_ATTENTION_BACKEND=flash", 2);
    EXPECT_NE(bad.find("duet: error: VLLM_ATTENTION_BACKEND = \"flash\" is not allowed (allowed: FLASH_ATTN, "
                       "TORCH_SDPA)"), std::string::npos) << bad;
    std::remove(o.c_str());
}

}  // namespace
