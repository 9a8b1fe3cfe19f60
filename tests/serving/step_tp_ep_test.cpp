// A serving step under --tp N --ep N (serving/step_cost.h): every rank holds every sequence, so
// rank 0's step runs the attention of all the step's decode sequences (over its heads) as under
// --tp N, and its whole experts take the rows of all the step's tokens: under uniform routing the
// step costs what --tp N's does, while --ep N alone runs its share of the sequences.
#include <gtest/gtest.h>

#include <memory>

#include "fake_hw.h"
#include "serving/step_cost.h"

namespace duet::serving {
namespace {

// small_shape with 8 routed experts of 512, 2 per token, in every layer.
graph::ModelShape moe_shape() {
    graph::ModelShape s = fake::small_shape();
    s.name = "small-moe";
    s.n_expert = 8;
    s.n_expert_used = 2;
    s.n_ff_exp = 512;
    return s;
}

sim::SimLink fast_link() {
    sim::SimLink l;
    l.bandwidth_gbps = 100;
    l.latency_ns = 500;
    return l;
}

// Two NPUs of the fake rig on a mesh, NPU only, no host work per step, uniform routing.
double step_ns(const sim::SimHardware& hw, int tp, int ep, const sched::Step& step) {
    sim::RunOptions o;
    o.placement.policy = sim::Policy::NPU_ONLY;
    o.serving_step_cost = false;
    o.parallel.tp = tp;
    o.experts.ep = ep;
    o.experts.routing = std::make_shared<const sim::ExpertRouting>();
    graph::GraphOptions go;
    go.tp = tp;
    go.ep = ep;
    StepCostModel m(moe_shape(), o, hw, go);
    return m.step_ns(step);
}

}  // namespace

TEST(ServingStepTpEp, RankZeroRunsEverySequencesAttention) {
    fake::Rig rig;
    sim::SimHardware hw = rig.hw();
    hw.add_device(sim::DeviceKind::NPU, &rig.npu, fast_link());
    hw.add_mesh(sim::DeviceKind::NPU, fast_link());
    sched::Step decode;  // eight sequences at a long context: the attention's KV reads dominate
    for (int64_t i = 0; i < 8; ++i) decode.chunks.push_back({i, 8192, 1, true});
    const double tp = step_ns(hw, 2, 1, decode), both = step_ns(hw, 2, 2, decode), ep = step_ns(hw, 1, 2, decode);
    EXPECT_NEAR(both, tp, 0.05 * tp);
    EXPECT_GT(both, 0.7 * ep);  // --ep 2 runs 4 sequences' attention over every head: the same KV bytes
}

}  // namespace duet::serving
