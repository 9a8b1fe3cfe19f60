// The simulator executor on closed-form cases, the serving metrics, and the ragged step records.
#include <gtest/gtest.h>

#include "sched/block_pool.h"
#include "serving/serving_metrics.h"
#include "serving/serving_run.h"
#include "serving/step_cost.h"
#include "sim/planner.h"

namespace duet::serving {
namespace {

constexpr int64_t kStepNs = 10'000'000;  // 10 ms per step, whatever it holds

sched::SchedulerOptions opts(int64_t n_parallel, int64_t budget = 4096) {
    sched::SchedulerOptions o;
    o.n_parallel = n_parallel;
    o.step_token_budget = budget;
    o.n_ctx = 4096;
    return o;
}

ServingResult fixed_step_run(const std::vector<ServingRequest>& reqs, const sched::SchedulerOptions& o,
                             int64_t n_blocks = 1024) {
    sched::BlockPool pool(n_blocks, 16);
    return run_serving(reqs, o, pool, [](const sched::Step&, int64_t) { return kStepNs; });
}

// Rate inf, identical requests, a fixed step time: all prompts in the first step, then one
// token per step: TTFT = T, TPOT = T, end-to-end = O T, output tokens/s = N / T.
TEST(ServingRun, AllAtOnceWithAFixedStepTimeIsClosedForm) {
    const int64_t n = 4, prompt = 100, out = 8;
    std::vector<ServingRequest> reqs(size_t(n), ServingRequest{0, prompt, out, nullptr});
    const ServingResult r = fixed_step_run(reqs, opts(8));
    EXPECT_EQ(r.steps, out);
    for (const RequestOutcome& o : r.requests) {
        EXPECT_EQ(o.queue_ns, 0);
        EXPECT_EQ(o.ttft_ns, kStepNs);
        EXPECT_EQ(o.e2e_ns, out * kStepNs);
        EXPECT_DOUBLE_EQ(o.tpot_ns(), double(kStepNs));
    }
    const ServingSummary s = summarize(r, {});
    EXPECT_DOUBLE_EQ(s.duration_s, out * 0.010);
    EXPECT_DOUBLE_EQ(s.output_tokens_per_s, double(n) / 0.010);
    EXPECT_DOUBLE_EQ(s.total_tokens_per_s, double(n * (prompt + out)) / (out * 0.010));
    EXPECT_DOUBLE_EQ(s.requests_per_s, double(n) / (out * 0.010));
    EXPECT_DOUBLE_EQ(s.ttft_ms.p99, 10.0);
    EXPECT_DOUBLE_EQ(s.tpot_ms.mean, 10.0);
    EXPECT_DOUBLE_EQ(s.e2e_ms.p50, out * 10.0);
}

// Two slots for four requests: the second pair waits for the first to finish (O steps),
// then runs the same O steps: queue = O T, TTFT = (O + 1) T, end-to-end = 2 O T.
TEST(ServingRun, SlotsQueueTheRestClosedForm) {
    const int64_t out = 5;
    std::vector<ServingRequest> reqs(4, ServingRequest{0, 20, out, nullptr});
    const ServingResult r = fixed_step_run(reqs, opts(2));
    for (size_t i = 0; i < 4; ++i) {
        const bool late = i >= 2;
        EXPECT_EQ(r.requests[i].queue_ns, late ? out * kStepNs : 0) << i;
        EXPECT_EQ(r.requests[i].ttft_ns, (late ? out + 1 : 1) * kStepNs) << i;
        EXPECT_EQ(r.requests[i].e2e_ns, (late ? 2 * out : out) * kStepNs) << i;
    }
    // Goodput: a TTFT SLO of 20 ms admits the first pair only.
    const ServingSummary s = summarize(r, {20.0, -1});
    EXPECT_EQ(s.good, 2);
    EXPECT_DOUBLE_EQ(s.goodput_rps, 2 / (2 * out * 0.010));
}

// A request arriving during a step joins at the next step, as in the real batcher.
TEST(ServingRun, ArrivalsJoinAtTheNextStep) {
    std::vector<ServingRequest> reqs{{0, 10, 3, nullptr}, {kStepNs / 2, 10, 1, nullptr}, {50 * kStepNs, 10, 1, nullptr}};
    const ServingResult r = fixed_step_run(reqs, opts(4));
    EXPECT_EQ(r.requests[1].queue_ns, kStepNs / 2);   // admitted at the end of step 1
    EXPECT_EQ(r.requests[1].ttft_ns, kStepNs / 2 + kStepNs);
    EXPECT_EQ(r.requests[2].queue_ns, 0);             // the machine was idle: starts at once
    EXPECT_EQ(r.requests[2].e2e_ns, kStepNs);
    EXPECT_EQ(r.end_ns, 51 * kStepNs);
}

// Closed loop: the second call arrives think time after the first one's last token.
TEST(ServingRun, AClosedLoopCallArrivesAfterItsPredecessorAndTheThinkTime) {
    std::vector<ServingRequest> reqs{{0, 10, 2, nullptr}, {0, 30, 3, nullptr}};
    reqs[1].after = 0;
    reqs[1].think_ns = kStepNs / 2;
    const ServingResult r = fixed_step_run(reqs, opts(4));
    EXPECT_EQ(r.requests[0].e2e_ns, 2 * kStepNs);
    EXPECT_EQ(r.requests[1].arrival_ns, 2 * kStepNs + kStepNs / 2);
    EXPECT_EQ(r.requests[1].queue_ns, 0);  // the machine was idle
    EXPECT_EQ(r.requests[1].e2e_ns, 3 * kStepNs);
    EXPECT_EQ(r.end_ns, 5 * kStepNs + kStepNs / 2);
}

TEST(ServingRun, TooLongForTheContextOrThePoolIsRefused) {
    sched::SchedulerOptions o = opts(4);
    o.n_ctx = 64;
    std::vector<ServingRequest> reqs{{0, 64, 1, nullptr}, {0, 10, 2, nullptr}};
    const ServingResult r = fixed_step_run(reqs, o, 2);
    EXPECT_EQ(r.requests[0].queue_ns, -1);
    EXPECT_EQ(r.requests[1].e2e_ns, 2 * kStepNs);
    const ServingSummary s = summarize(r, {});
    EXPECT_EQ(s.refused, 1);
    EXPECT_EQ(s.completed, 1);
}

TEST(ServingMetrics, PercentilesInterpolateLikeNumpy) {
    // numpy.percentile([1, 2, 3, 4, 10], [50, 90, 99]) = 3, 7.6, 9.76
    const std::vector<double> v{10, 1, 3, 2, 4};
    EXPECT_DOUBLE_EQ(percentile_linear(v, 0.50), 3.0);
    EXPECT_NEAR(percentile_linear(v, 0.90), 7.6, 1e-12);
    EXPECT_NEAR(percentile_linear(v, 0.99), 9.76, 1e-12);
    EXPECT_DOUBLE_EQ(distribution(v).mean, 4.0);
}

TEST(StepCost, LengthBucketsAreExactBelowSixteenThenEightPerOctave) {
    EXPECT_EQ(length_bucket(1), 1);
    EXPECT_EQ(length_bucket(16), 16);
    EXPECT_EQ(length_bucket(17), 18);   // octave 16..31 in steps of 2
    EXPECT_EQ(length_bucket(1000), 1024);  // octave 512..1023 in steps of 64: 1000 -> 1024
    EXPECT_EQ(length_bucket(1100), 1152);  // steps of 128 from 1024
    for (int64_t x = 17; x < 100000; x += 37)
        EXPECT_LE(std::abs(double(length_bucket(x) - x)) / double(x), 0.0625) << x;
}

// A step of decode tokens at one context is exactly the planner's uniform decode forward; a
// prompt chunk beside them adds its tokens to every matmul and reads each matrix once.
TEST(StepCost, RaggedStepRecordsMergeThePlannersGroups) {
    graph::ModelShape shape;
    shape.name = "t";
    shape.n_vocab = 256, shape.n_embd = 64, shape.n_layer = 2, shape.n_head = 4, shape.n_head_kv = 2;
    shape.n_ff = 128, shape.head_dim = 16;
    const graph::Graph g = graph::build_graph(shape);
    sim::OpTrace uniform;
    sim::plan_forward(g, 3, 40, 1, sim::Phase::DECODE, uniform);
    std::vector<sched::Chunk> dec{{0, 40, 1, true}, {1, 40, 1, true}, {2, 40, 1, true}};
    EXPECT_EQ(step_records(g, dec), uniform);
    // Contexts 30, 40, 50: attention reads and computes what three at the mean 40 would; its n is
    // the longest context (tests/serving/step_records_test.cpp checks ragged steps against the engine).
    dec = {{0, 30, 1, true}, {1, 40, 1, true}, {2, 50, 1, true}};
    const sim::OpTrace ragged = step_records(g, dec);
    for (size_t i = 0; i < ragged.size(); ++i) {
        sim::OpRecord r = ragged[i];
        if (r.kind == sim::OpKind::ATTENTION) {
            EXPECT_EQ(r.n, 51) << i;
            r.n = uniform[i].n;
        }
        EXPECT_EQ(r, uniform[i]) << i;
    }

    std::vector<sched::Chunk> mixed{{0, 40, 1, true}, {1, 40, 1, true}, {2, 40, 1, true}, {3, 0, 20, true}};
    const sim::OpTrace m = step_records(g, mixed);
    sim::OpTrace chunk;
    sim::plan_forward(g, 1, 0, 20, sim::Phase::PREFILL, chunk);
    ASSERT_EQ(m.size(), uniform.size());
    for (size_t i = 0; i < m.size(); ++i) {
        EXPECT_EQ(m[i].phase, sim::Phase::PREFILL);
        EXPECT_EQ(m[i].m, uniform[i].m + chunk[i].m) << i;
        EXPECT_EQ(m[i].n_seq, 4) << i;
        EXPECT_DOUBLE_EQ(m[i].flops, uniform[i].flops + chunk[i].flops) << i;
        if (m[i].kind == sim::OpKind::MATMUL) {
            EXPECT_EQ(m[i].weight_bytes, uniform[i].weight_bytes) << i;
        }
        if (m[i].kind == sim::OpKind::ATTENTION) {
            EXPECT_EQ(m[i].weight_bytes, uniform[i].weight_bytes + chunk[i].weight_bytes) << i;
            EXPECT_EQ(m[i].n, 41) << i;  // longest context after the step
        }
    }
}

}  // namespace
}  // namespace duet::serving
