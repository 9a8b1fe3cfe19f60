// The hardware rig is built once per configuration and shared: a bench, every sweep point and
// every served request reuse it (workload/rig_cache.h). Concurrent runs on one rig agree.
#include <gtest/gtest.h>

#include <thread>

#include "workload/rig_cache.h"
#include "workload/trace_bench.h"

using namespace duet;

namespace {

workload::TraceBenchInputs small_bench() {
    workload::TraceBenchInputs in;
    in.model = "llama2-7b";
    in.seq_len = 32;
    in.gen_len = 4;
    return in;
}

}  // namespace

TEST(RigCache, OneRigPerConfiguration) {
    config::Settings st;
    config::CoopConfig cfg;
    const int64_t before = workload::hardware_rigs_built();
    auto a = workload::cached_hardware_rig(st, cfg, "", "");
    auto b = workload::cached_hardware_rig(st, cfg, "", "");
    EXPECT_EQ(a.get(), b.get());
    EXPECT_EQ(workload::hardware_rigs_built(), before + 1);
    ASSERT_EQ(a->hw.devices.size(), 2u);
    config::CoopConfig two = cfg;
    two.topology.pims = 2;
    auto c = workload::cached_hardware_rig(st, two, "", "");
    EXPECT_NE(c.get(), a.get());
    EXPECT_EQ(c->hw.devices.size(), 3u);
    EXPECT_EQ(workload::hardware_rigs_built(), before + 2);
    // a bench on an already built configuration builds nothing
    const sim::BenchReport r1 = workload::run_trace_bench(st, cfg, small_bench());
    const sim::BenchReport r2 = workload::run_trace_bench(st, cfg, small_bench());
    EXPECT_EQ(workload::hardware_rigs_built(), before + 2);
    EXPECT_EQ(sim::report_to_json(r1), sim::report_to_json(r2));
}

TEST(RigCache, ConcurrentRunsOnOneRigAgree) {
    config::Settings st;
    config::CoopConfig cfg;
    cfg.reorder.block_size_kb = 64;  // a configuration no other test built: a cold layout memo
    std::vector<nlohmann::json> got(4);
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i)
        threads.emplace_back([&, i] { got[size_t(i)] = sim::report_to_json(workload::run_trace_bench(st, cfg, small_bench())); });
    for (auto& t : threads) t.join();
    for (int i = 1; i < 4; ++i) EXPECT_EQ(got[size_t(i)], got[0]);
    EXPECT_EQ(sim::report_to_json(workload::run_trace_bench(st, cfg, small_bench())), got[0]);
}
