// The trace-only planner (sim/planner.h) and the engine's dispatch point emit the same records
// for the same generation: the simulator's view of a model needs no weights.
#include <gtest/gtest.h>

#include <tuple>

#include "runtime/engine.h"
#include "model/hparams.h"
#include "sim/planner.h"
#include "test_models.h"

using namespace duet;
using namespace duet::runtime;

namespace {

graph::ModelShape shape_of(const model::Hparams& hp, DType weights, DType kv) {
    return model_shape(hp, weights, kv, "test");
}

void expect_same(const sim::OpRecord& a, const sim::OpRecord& b, size_t i) {
    SCOPED_TRACE(::testing::Message() << "record " << i << " (" << sim::op_kind_name(b.kind) << ", layer " << b.layer
                                      << ")");
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.role, b.role);
    EXPECT_EQ(a.phase, b.phase);
    EXPECT_EQ(a.layer, b.layer);
    EXPECT_EQ(a.n_seq, b.n_seq);
    EXPECT_EQ(a.m, b.m);
    EXPECT_EQ(a.n, b.n);
    if (a.kind == sim::OpKind::MATMUL || a.kind == sim::OpKind::ATTENTION) {
        EXPECT_EQ(a.k, b.k);
    }
    if (a.kind == sim::OpKind::ATTENTION) {
        EXPECT_EQ(a.n_head, b.n_head);
        EXPECT_EQ(a.n_head_kv, b.n_head_kv);
    }
    // Two known differences of a Mixture-of-Experts model: a grouped expert matmul reads the experts
    // the data routed to (the plan: uniform routing), and the file keeps the router F32 (the plan
    // prices it in the model's dtype).
    if (a.role != sim::WeightRole::FFN_GATE_INP) EXPECT_EQ(a.weight_dtype, b.weight_dtype);
    if (a.kind != sim::OpKind::MOE_MATMUL && a.role != sim::WeightRole::FFN_GATE_INP)
        EXPECT_EQ(a.weight_bytes, b.weight_bytes);
    EXPECT_EQ(a.in_bytes, b.in_bytes);
    EXPECT_EQ(a.out_bytes, b.out_bytes);
    EXPECT_DOUBLE_EQ(a.flops, b.flops);
    EXPECT_EQ(a.rmsnorm_fused, b.rmsnorm_fused);
}

TEST(PlannerAgreement, EngineTraceEqualsThePlan) {
    const int64_t seq_len = 9, gen_len = 4;
    // q8_0 with --fuse: the fused graph, RMSNorm in the Q|K|V, gate|up and lm-head records
    for (const auto& [preset, dtype, fuse] : {std::tuple{"tiny-llama", DType::F32, false},
                                              std::tuple{"tiny-qwen2", DType::F16, false},
                                              std::tuple{"tiny-mistral", DType::Q8_0, true}}) {
        SCOPED_TRACE(std::string(preset) + (fuse ? " fused" : ""));
        const std::string path = test::generated_model(preset, dtype_name(dtype));
        ASSERT_FALSE(path.empty());
        auto m = Model::load(path);
        EngineOptions o;
        o.n_threads = 1;
        o.kv_type = DType::F16;
        o.n_ctx = 32;
        o.fuse = fuse;
        Engine e(m, o);
        sim::OpTrace trace;
        e.set_trace(&trace);
        SequenceKv s;
        std::vector<int32_t> toks;
        for (int64_t i = 0; i < seq_len; ++i) toks.push_back(int32_t(i + 1));
        ForwardOutput out;
        SeqInput pre{toks, &s, false};
        ASSERT_EQ(e.forward({&pre, 1}, out), ForwardStatus::OK);
        for (int64_t t = 1; t < gen_len; ++t) {
            const int32_t next = int32_t(t);
            SeqInput step{std::span<const int32_t>(&next, 1), &s, false};
            ASSERT_EQ(e.forward({&step, 1}, out), ForwardStatus::OK);
        }
        s.release(e.kv_cache());

        graph::GraphOptions go;
        go.fuse = fuse;
        const sim::Plan plan = sim::plan_generation(shape_of(m->hparams(), dtype, DType::F16), seq_len, gen_len, 1, go);
        if (fuse) {
            int joined = 0;
            for (const sim::OpRecord& r : plan.ops) joined += r.rmsnorm_fused;
            EXPECT_EQ(joined, int(2 * m->hparams().n_layer + 1) * int(gen_len));
        }
        ASSERT_EQ(trace.size(), plan.ops.size());
        for (size_t i = 0; i < trace.size(); ++i) expect_same(trace[i], plan.ops[i], i);
        const auto spans = sim::split_forwards(trace);
        ASSERT_EQ(spans.size(), plan.forwards.size());
        for (size_t i = 0; i < spans.size(); ++i) EXPECT_EQ(spans[i].n_past, plan.forwards[i].n_past);
    }
}

// Latent attention (and experts): the same records as the plan but for the routed experts' bytes
// — the latent KV rows, per-head matmuls and MLA attention lower alike in the engine and the planner.
TEST(PlannerAgreement, LatentAttentionTraceEqualsThePlan) {
    const int64_t seq_len = 9, gen_len = 4;
    const std::string path = test::generated_model("tiny-deepseek2", "q8_0");
    ASSERT_FALSE(path.empty());
    auto m = Model::load(path);
    EngineOptions o;
    o.n_threads = 1;
    o.kv_type = DType::F16;
    o.n_ctx = 32;
    Engine e(m, o);
    sim::OpTrace trace;
    e.set_trace(&trace);
    SequenceKv s;
    std::vector<int32_t> toks;
    for (int64_t i = 0; i < seq_len; ++i) toks.push_back(int32_t(i + 1));
    ForwardOutput out;
    SeqInput pre{toks, &s, false};
    ASSERT_EQ(e.forward({&pre, 1}, out), ForwardStatus::OK);
    for (int64_t t = 1; t < gen_len; ++t) {
        const int32_t next = int32_t(t);
        SeqInput step{std::span<const int32_t>(&next, 1), &s, false};
        ASSERT_EQ(e.forward({&step, 1}, out), ForwardStatus::OK);
    }
    s.release(e.kv_cache());
    const sim::Plan plan = sim::plan_generation(shape_of(m->hparams(), DType::Q8_0, DType::F16), seq_len, gen_len, 1);
    ASSERT_EQ(trace.size(), plan.ops.size());
    int mla = 0;
    for (size_t i = 0; i < trace.size(); ++i) {
        expect_same(trace[i], plan.ops[i], i);
        mla += trace[i].kind == sim::OpKind::MLA_ATTENTION;
    }
    EXPECT_EQ(mla, 2 * int(gen_len));
}

}  // namespace
