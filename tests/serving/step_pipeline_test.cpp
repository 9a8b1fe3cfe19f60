// A pipelined step (serving/step_cost.h, go.pp stages): its time is the forward through every
// stage, and it holds the pipeline's entry for its slowest stage only.
#include <gtest/gtest.h>

#include "fake_hw.h"
#include "serving/step_cost.h"

namespace duet::serving {
namespace {

sim::SimLink fast_link() {
    sim::SimLink l;
    l.bandwidth_gbps = 100;
    l.latency_ns = 500;
    return l;
}

// One NPU per stage (the fake rig's, twice), NPU only, no host work per step.
StepCostModel model(const sim::SimHardware& hw, int pp) {
    sim::RunOptions o;
    o.placement.policy = sim::Policy::NPU_ONLY;
    o.serving_step_cost = false;
    o.parallel.pp = pp;
    graph::GraphOptions go;
    go.pp = pp;
    return StepCostModel(fake::small_shape(), o, hw, go);
}

sched::Step step_of(std::vector<sched::Chunk> chunks) {
    sched::Step s;
    s.chunks = std::move(chunks);
    return s;
}

}  // namespace

TEST(ServingStepPipeline, AStepHoldsTheEntryForItsSlowestStage) {
    fake::Rig rig;
    const sim::SimHardware hw1 = rig.hw();
    sim::SimHardware hw2 = rig.hw();
    hw2.add_device(sim::DeviceKind::NPU, &rig.npu, fast_link());
    StepCostModel one = model(hw1, 1), two = model(hw2, 2);
    for (const sched::Step& s : {step_of({{0, 40, 1, true}, {1, 90, 1, true}}), step_of({{2, 0, 128, true}})}) {
        const double whole = one.step_ns(s);
        EXPECT_DOUBLE_EQ(one.last_issue_ns(), whole);  // no stages: the step holds everything
        const double through = two.step_ns(s), entry = two.last_issue_ns();
        // both stages in turn plus the boundary's send, on the same fake NPUs
        EXPECT_GT(through, whole);
        EXPECT_LT(through, whole * 1.2);
        // the slowest stage: at least half the layers' work, well under all of it
        EXPECT_GE(entry, through / 2 * 0.9);
        EXPECT_LT(entry, through * 0.8);
    }
}

}  // namespace duet::serving
