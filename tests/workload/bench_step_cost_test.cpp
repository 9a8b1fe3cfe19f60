// `duet bench` on the real presets pays the NPU preset's [serving_step] value exactly once per
// forward: TTFT and every TBT of the NPU-only baseline move by eager_step_us under eager and the
// TASK_QUEUE_ENABLE levels and by graph_step_us under graph (configs/hw/ascend910b2.toml:
// 10630 and 1270 us), and by nothing when the serving step cost is off.
#include <gtest/gtest.h>

#include "workload/trace_bench.h"

using namespace duet;

namespace {

sim::BenchReport bench(const std::string& dispatch, bool step_cost) {
    config::Settings st;
    st.ascend.soc_version = "Ascend910B2";
    config::CoopConfig cfg;
    workload::TraceBenchInputs in;
    in.model = "llama2-7b";
    in.seq_len = 128;
    in.gen_len = 6;
    in.baseline = in.target = "npu_only";
    in.dispatch = dispatch;
    in.serving_step_cost = step_cost;
    return workload::run_trace_bench(st, cfg, in);
}

}  // namespace

TEST(BenchStepCost, OncePerForwardAsTheDispatchFamilySays) {
    const std::pair<const char*, double> modes[] = {
        {"eager", 10630e3}, {"queue0", 10630e3}, {"queue1", 10630e3}, {"queue2", 10630e3}, {"graph", 1270e3}};
    for (const auto& [mode, step_ns] : modes) {
        SCOPED_TRACE(mode);
        const sim::RunReport with = bench(mode, true).baseline, without = bench(mode, false).baseline;
        EXPECT_NEAR(with.timeline.ttft_ns - without.timeline.ttft_ns, step_ns, 1e-3);
        ASSERT_EQ(with.timeline.tbt_ns.size(), 5u);
        for (size_t i = 0; i < with.timeline.tbt_ns.size(); ++i)
            EXPECT_NEAR(with.timeline.tbt_ns[i] - without.timeline.tbt_ns[i], step_ns, 1e-3) << "step " << i;
        EXPECT_DOUBLE_EQ(with.timeline.prefill.step_host_ns, step_ns);
        EXPECT_DOUBLE_EQ(with.timeline.decode.step_host_ns, 5 * step_ns);
        EXPECT_DOUBLE_EQ(without.timeline.decode.step_host_ns, 0);
    }
}
