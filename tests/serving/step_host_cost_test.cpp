// The serving simulator pays the serving stack's per-step host work (SimHardware::step_host_ns)
// exactly once per step, whatever the step holds: decode tokens, a prompt chunk or both.
#include <gtest/gtest.h>

#include "fake_hw.h"
#include "sched/block_pool.h"
#include "serving/serving_run.h"
#include "serving/step_cost.h"

namespace duet::serving {
namespace {

constexpr double kStepHostNs = 7000;

struct Models {
    fake::Rig rig;
    sim::SimHardware hw;
    std::unique_ptr<StepCostModel> with, without;
    Models() : hw(rig.hw()) {
        hw.step_host_ns = kStepHostNs;
        sim::RunOptions o;
        o.placement.policy = sim::Policy::NPU_ONLY;
        with = std::make_unique<StepCostModel>(fake::small_shape(), o, hw);
        o.serving_step_cost = false;
        without = std::make_unique<StepCostModel>(fake::small_shape(), o, hw);
    }
};

sched::Step step_of(std::vector<sched::Chunk> chunks) {
    sched::Step s;
    s.chunks = std::move(chunks);
    return s;
}

}  // namespace

TEST(ServingStepHostCost, OncePerStepWhateverItHolds) {
    Models m;
    const sched::Step steps[] = {
        step_of({{0, 40, 1, true}, {1, 90, 1, true}}),          // two decode tokens
        step_of({{2, 0, 128, true}}),                           // one prompt
        step_of({{0, 41, 1, true}, {3, 16, 48, true}}),         // mixed
    };
    for (const sched::Step& s : steps)
        EXPECT_NEAR(m.with->step_ns(s) - m.without->step_ns(s), kStepHostNs, 1e-6) << s.chunks.size() << " chunks";
}

// One request alone: TTFT is one prefill step, end-to-end one prefill and (out - 1) decode
// steps, so TTFT grows by one step cost and TPOT by exactly one (the timer rounds to whole ns).
TEST(ServingStepHostCost, RequestLatenciesGrowByOneStepCostPerStep) {
    Models m;
    const int64_t out = 6;
    const std::vector<ServingRequest> reqs{ServingRequest{0, 64, out, nullptr}};
    sched::SchedulerOptions so;
    so.n_ctx = 1024;
    auto run = [&](StepCostModel& cost) {
        sched::BlockPool pool(256, 16);
        return run_serving(reqs, so, pool, [&](const sched::Step& s, int64_t) { return int64_t(cost.step_ns(s)); });
    };
    const RequestOutcome a = run(*m.with).requests[0], b = run(*m.without).requests[0];
    EXPECT_NEAR(double(a.ttft_ns - b.ttft_ns), kStepHostNs, 1.0);
    EXPECT_NEAR(double(a.e2e_ns - b.e2e_ns), double(out) * kStepHostNs, double(out));
    EXPECT_NEAR(a.tpot_ns() - b.tpot_ns(), kStepHostNs, 2.0);
}

}  // namespace duet::serving
