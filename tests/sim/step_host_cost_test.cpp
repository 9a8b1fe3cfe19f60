// The serving stack's per-step host work (SimHardware::step_host_ns, RunOptions::serving_step_cost)
// is charged exactly once per forward: TTFT grows by one step cost, every TBT by one, and nothing
// else moves. Closed forms on the fake devices (fake_hw.h).
#include <gtest/gtest.h>

#include "fake_hw.h"
#include "sim/op_shape.h"
#include "sim/report.h"

using namespace duet;
using namespace duet::sim;

namespace {

constexpr double kStepNs = 7000;  // 7 us of host work per engine step

struct Runs {
    RunReport with, without;
};

Runs run_both(Policy policy, int64_t seq, int64_t gen) {
    fake::Rig rig;
    SimHardware hw = rig.hw();
    hw.step_host_ns = kStepNs;
    const ModelShape shape = fake::small_shape();
    const Plan p = plan_generation(shape, seq, gen, 1);
    RunOptions o;
    o.placement.policy = policy;
    Runs r;
    r.with = simulate_run(shape, p, seq + gen, 1, o, hw);
    o.serving_step_cost = false;
    r.without = simulate_run(shape, p, seq + gen, 1, o, hw);
    return r;
}

}  // namespace

// NPU-only: TTFT = the prefill operators' estimates + one step cost (the closed form of
// Timeline.BaselineIsTheSumOfNpuEstimates plus kStepNs), each TBT = its operators + one.
TEST(StepHostCost, OncePerForwardClosedForm) {
    const int64_t seq = 64, gen = 8;
    const Runs r = run_both(Policy::NPU_ONLY, seq, gen);
    fake::Rig rig;
    const Plan p = plan_generation(fake::small_shape(), seq, gen, 1);
    double prefill = 0;
    for (const auto& rec : p.ops)
        if (rec.phase == Phase::PREFILL) prefill += rig.npu.estimate(to_op_shape(rec)).t_ns;
    EXPECT_NEAR(r.with.timeline.ttft_ns, prefill + kStepNs, 1e-6 * prefill);
    ASSERT_EQ(r.with.timeline.tbt_ns.size(), size_t(gen - 1));
    for (size_t i = 0; i < r.with.timeline.tbt_ns.size(); ++i)
        EXPECT_NEAR(r.with.timeline.tbt_ns[i] - r.without.timeline.tbt_ns[i], kStepNs, 1e-6) << "step " << i;
    EXPECT_DOUBLE_EQ(r.with.timeline.prefill.step_host_ns, kStepNs);
    EXPECT_DOUBLE_EQ(r.with.timeline.decode.step_host_ns, kStepNs * double(gen - 1));
    EXPECT_DOUBLE_EQ(r.without.timeline.prefill.step_host_ns + r.without.timeline.decode.step_host_ns, 0);
    // device work is untouched: busy time and bytes are the same
    EXPECT_DOUBLE_EQ(r.with.timeline.decode.npu().busy_ns, r.without.timeline.decode.npu().busy_ns);
    EXPECT_DOUBLE_EQ(r.with.timeline.prefill.npu().bytes_moved, r.without.timeline.prefill.npu().bytes_moved);
}

// Co-inference pays the same host step (the engine is the same); the PIM work does not change it.
TEST(StepHostCost, CoopPaysTheSameStep) {
    const Runs r = run_both(Policy::NPU_PIM_COOP, 32, 5);
    EXPECT_NEAR(r.with.timeline.ttft_ns - r.without.timeline.ttft_ns, kStepNs, 1e-6);
    EXPECT_NEAR(r.with.tbt_mean_ns - r.without.tbt_mean_ns, kStepNs, 1e-6);
    EXPECT_GT(r.with.timeline.decode.pim().ops, 0);
}

// A machine without a step cost (the default) runs exactly as before.
TEST(StepHostCost, ZeroByDefault) {
    EXPECT_DOUBLE_EQ(SimHardware{}.step_host_ns, 0);
    EXPECT_TRUE(RunOptions{}.serving_step_cost);
}
