// The simulator's records of a ragged step (serving/step_cost.h) against the engine's own: the
// real Engine::forward over decode tokens at different contexts and a prompt chunk, traced at its
// dispatch point, emits exactly the records the simulator times for that step.
#include <gtest/gtest.h>

#include "runtime/engine.h"
#include "model/hparams.h"
#include "serving/step_cost.h"
#include "test_models.h"

namespace duet::serving {
namespace {

TEST(StepRecords, EqualTheEnginesTraceOfTheSameRaggedStep) {
    const std::string path = test::generated_model("tiny-llama");
    ASSERT_FALSE(path.empty());
    const auto model = runtime::Model::load(path);
    runtime::EngineOptions o;
    o.n_threads = 1;
    o.kv_type = DType::F16;
    o.n_ctx = 64;
    runtime::Engine e(model, o);
    // Three sequences computed to 10, 14 and 5 tokens.
    const int64_t past[3] = {10, 14, 5};
    runtime::SequenceKv kv[3];
    std::vector<int32_t> toks(20);
    for (size_t i = 0; i < toks.size(); ++i) toks[i] = int32_t(i + 3);
    runtime::ForwardOutput out;
    for (int s = 0; s < 3; ++s) {
        runtime::SeqInput in{std::span<const int32_t>(toks).first(size_t(past[s])), &kv[s], false};
        ASSERT_EQ(e.forward({&in, 1}, out), runtime::ForwardStatus::OK);
    }
    // The step: one decode token each for the first two, a 7-token prompt chunk for the third.
    sim::OpTrace trace;
    e.set_trace(&trace);
    const runtime::SeqInput step[3] = {{std::span<const int32_t>(toks).first(1), &kv[0], false},
                                       {std::span<const int32_t>(toks).first(1), &kv[1], false},
                                       {std::span<const int32_t>(toks).first(7), &kv[2], false}};
    ASSERT_EQ(e.forward(step, out), runtime::ForwardStatus::OK);
    e.set_trace(nullptr);
    for (auto& k : kv) k.release(e.kv_cache());

    const graph::ModelShape shape = model::model_shape(model->hparams(), DType::F32, DType::F16, "test");
    const std::vector<sched::Chunk> chunks{{0, 10, 1, true}, {1, 14, 1, true}, {2, 5, 7, false}};
    const sim::OpTrace mine = step_records(graph::build_graph(shape), chunks);
    ASSERT_EQ(mine.size(), trace.size());
    for (size_t i = 0; i < trace.size(); ++i) {
        SCOPED_TRACE(::testing::Message() << "record " << i << " (" << sim::op_kind_name(trace[i].kind) << ", layer "
                                          << trace[i].layer << ")");
        EXPECT_EQ(mine[i].kind, trace[i].kind);
        EXPECT_EQ(mine[i].phase, trace[i].phase);
        EXPECT_EQ(mine[i].n_seq, trace[i].n_seq);
        EXPECT_EQ(mine[i].m, trace[i].m);
        EXPECT_EQ(mine[i].n, trace[i].n);
        EXPECT_EQ(mine[i].weight_bytes, trace[i].weight_bytes);
        EXPECT_EQ(mine[i].in_bytes, trace[i].in_bytes);
        EXPECT_EQ(mine[i].out_bytes, trace[i].out_bytes);
        EXPECT_DOUBLE_EQ(mine[i].flops, trace[i].flops);
    }
}

}  // namespace
}  // namespace duet::serving
