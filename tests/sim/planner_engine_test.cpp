// The trace-only planner emits exactly the records of the engine's dispatch point, on
// generated models (prefill + decode, batch of 1 and 2, with and without QKV bias).
#include <gtest/gtest.h>

#include "../runtime/test_models.h"
#include "runtime/engine.h"
#include "model/hparams.h"
#include "sim/planner.h"

using namespace duet;

namespace {

graph::ModelShape shape_of(const model::Hparams& hp, DType wdt) {
    return model::model_shape(hp, wdt, DType::F16);
}

void expect_same(const sim::OpRecord& a, const sim::OpRecord& b, size_t i) {
    SCOPED_TRACE(testing::Message() << "record " << i << " " << sim::op_kind_name(b.kind) << " "
                                    << sim::weight_role_name(b.role) << " layer " << b.layer);
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.role, b.role);
    EXPECT_EQ(a.phase, b.phase);
    EXPECT_EQ(a.layer, b.layer);
    EXPECT_EQ(a.n_seq, b.n_seq);
    EXPECT_EQ(a.m, b.m);
    EXPECT_EQ(a.n, b.n);
    EXPECT_EQ(a.k, b.k);
    EXPECT_EQ(a.n_head, b.n_head);
    EXPECT_EQ(a.n_head_kv, b.n_head_kv);
    EXPECT_EQ(a.weight_dtype, b.weight_dtype);
    EXPECT_EQ(a.weight_bytes, b.weight_bytes);
    EXPECT_EQ(a.in_bytes, b.in_bytes);
    EXPECT_EQ(a.out_bytes, b.out_bytes);
    EXPECT_DOUBLE_EQ(a.flops, b.flops);
}

}  // namespace

TEST(PlannerVsEngine, SameRecordsOnGeneratedModels) {
    for (const std::string preset : {"tiny-llama", "tiny-qwen2"}) {
        SCOPED_TRACE(preset);
        const std::string path = test::generated_model(preset, "f16");
        ASSERT_FALSE(path.empty()) << "duet gen-model failed";
        auto m = runtime::Model::load(path);
        for (int batch : {1, 2}) {
            SCOPED_TRACE(testing::Message() << "batch " << batch);
            runtime::EngineOptions o;
            o.n_threads = 1;
            o.kv_type = DType::F16;
            o.n_ctx = 32;
            o.n_seq_max = batch;
            runtime::Engine e(m, o);
            sim::OpTrace trace;
            e.set_trace(&trace);
            const int64_t P = 5, G = 4;
            std::vector<runtime::SequenceKv> kv(static_cast<size_t>(batch));
            std::vector<int32_t> prompt = {1, 2, 3, 4, 5};
            runtime::ForwardOutput out;
            std::vector<runtime::SeqInput> in;
            for (auto& k : kv) in.push_back({prompt, &k, false});
            ASSERT_EQ(e.forward(in, out), runtime::ForwardStatus::OK);
            std::vector<int32_t> one = {7};
            for (int64_t t = 1; t < G; ++t) {
                in.clear();
                for (auto& k : kv) in.push_back({one, &k, false});
                ASSERT_EQ(e.forward(in, out), runtime::ForwardStatus::OK);
            }
            sim::Plan plan = sim::plan_generation(shape_of(m->hparams(), DType::F16), P, G, batch);
            ASSERT_EQ(trace.size(), plan.ops.size());
            for (size_t i = 0; i < trace.size(); ++i) expect_same(plan.ops[i], trace[i], i);
            auto spans = sim::split_forwards(trace);
            ASSERT_EQ(spans.size(), plan.forwards.size());
            for (size_t i = 0; i < spans.size(); ++i) EXPECT_EQ(spans[i].n_past, plan.forwards[i].n_past);
        }
    }
}
