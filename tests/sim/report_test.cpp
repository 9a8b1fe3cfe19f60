#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include "core/error.h"
#include "fake_hw.h"
#include "sim/report.h"
#include "sim/report_files.h"

using namespace duet;
using namespace duet::sim;

namespace {

RunReport fake_run(const char* policy, double ttft_ms, double tbt_ms, uint64_t mem) {
    RunReport r;
    r.policy = policy;
    r.timeline.ttft_ns = r.timeline.prefill_ns = ttft_ms * 1e6;
    r.timeline.tbt_ns = {tbt_ms * 1e6, tbt_ms * 1e6};
    fake::npu_pim_devices(r.timeline.decode);
    r.timeline.decode.device[0].busy_ns = 2 * tbt_ms * 1e6;
    r.tbt_mean_ns = tbt_ms * 1e6;
    r.memory.weights_bytes = mem;
    return r;
}

BenchReport real_report(bool events) {
    fake::Rig rig;
    ModelShape s = fake::small_shape();
    Plan p = plan_generation(s, 64, 6, 1);
    RunOptions b, t;
    b.placement.policy = Policy::NPU_ONLY;
    b.record_events = t.record_events = events;
    BenchReport r;
    r.model = s.name;
    r.seq_len = 64;
    r.gen_len = 6;
    r.npu = "fake-npu";
    r.baseline = simulate_run(s, p, 70, 1, b, rig.hw());
    r.target = simulate_run(s, p, 70, 1, t, rig.hw());
    r.verdicts = judge(r.baseline, r.target, r.thresholds, rig.hw());
    r.config = {{"k", 1}};
    return r;
}

}  // namespace

TEST(Verdicts, MetAndNotMetWithBindingLimit) {
    fake::Rig rig;
    SimHardware hw = rig.hw();  // PIM 4x the external bandwidth
    RunReport b = fake_run("npu_only", 100, 10, 1000);
    RunReport good = fake_run("npu_pim_coop", 110, 1.5, 1020);
    good.timeline.decode.device[0].busy_ns = 0;
    auto v = judge(b, good, Thresholds{}, hw);
    ASSERT_EQ(v.size(), 3u);
    EXPECT_TRUE(v[0].met);
    EXPECT_NEAR(v[0].value, 0.85, 1e-12);
    EXPECT_TRUE(v[1].met);
    EXPECT_NEAR(v[1].value, 10, 1e-9);
    EXPECT_TRUE(v[2].met);
    EXPECT_NEAR(v[2].value, 0.02, 1e-12);

    RunReport bad = fake_run("npu_pim_coop", 130, 3, 1100);
    bad.timeline.decode.device[0].busy_ns = 2 * 0.4e6;
    bad.timeline.decode.device[1].busy_ns = 2 * 2.6e6;
    bad.timeline.decode.device[1].ops = 64;
    bad.pim_gemv_gbps = 3200;
    bad.timeline.conversion_exposed_ns = 30e6;
    bad.memory.block_index_bytes = 80;
    v = judge(b, bad, Thresholds{}, hw);
    EXPECT_FALSE(v[0].met);
    EXPECT_EQ(v[0].binding_limit,
              "PIM internal/external bandwidth ratio 4.0x: best possible TBT ratio 0.25; PIM GEMVs reach 3200 GB/s (2.0x "
              "the external 1600 GB/s) and take 0.26 of the baseline TBT");
    EXPECT_FALSE(v[1].met);
    EXPECT_EQ(v[1].binding_limit, "PIM->NZ weight conversion slower than the GEMMs it feeds: 30.00 ms exposed in prefill");
    EXPECT_FALSE(v[2].met);
    EXPECT_EQ(v[2].binding_limit, "PIM layout padding adds 0.0 MiB of weights");
    EXPECT_NE(v[0].line.find("NOT MET"), std::string::npos);
    // thresholds are knobs
    Thresholds loose{0.5, 40, 0.2};
    v = judge(b, bad, loose, hw);
    EXPECT_TRUE(v[0].met && v[1].met && v[2].met);
}

TEST(Verdicts, NpuSideWorkBinds) {
    fake::Rig rig;
    RunReport b = fake_run("npu_only", 100, 10, 1000);
    RunReport t = fake_run("npu_pim_coop", 100, 5, 1000);
    t.timeline.decode.device[0].busy_ns = 2 * 4e6;
    t.timeline.decode.device[1].busy_ns = 2 * 1e6;
    t.timeline.decode.device[1].ops = 2;
    auto v = judge(b, t, Thresholds{}, rig.hw());
    EXPECT_EQ(v[0].binding_limit,
              "operators that stay on the NPU (norms, RoPE, attention, sampling, launch) take 0.40 of the baseline TBT; "
              "PIM work 0.10");
    t.timeline.decode.device[1].ops = 0;
    t.timeline.decode.device[1].busy_ns = 0;
    v = judge(b, t, Thresholds{}, rig.hw());
    EXPECT_EQ(v[0].binding_limit,
              "the PIM ran no decode operator: its model supports none of them (check [pim] precision and [scheduling] "
              "decode_engine against the PIM preset)");
    t.batch = 4;
    v = judge(b, t, Thresholds{}, rig.hw());
    EXPECT_EQ(v[0].binding_limit,
              "the PIM ran no decode operator: with batch 4 and memory.weight_base_shared = true every decode matmul has "
              "4 rows; the PIM re-reads the weights once per vector (at most 8 vectors) and is slower than the NPU for "
              "each of them");
}

TEST(Report, JsonRoundTrip) {
    BenchReport r = real_report(false);
    nlohmann::json j = report_to_json(r);
    BenchReport back = report_from_json(nlohmann::json::parse(j.dump()));
    EXPECT_EQ(report_to_json(back), j);
    EXPECT_EQ(back.target.timeline.tbt_ns, r.target.timeline.tbt_ns);
    EXPECT_EQ(back.baseline.memory.total_bytes(), r.baseline.memory.total_bytes());
    EXPECT_EQ(j["target"]["memory"]["total_bytes"].get<uint64_t>(), r.target.memory.total_bytes());
    j["schema"] = "other/2";
    EXPECT_THROW(report_from_json(j), Error);
}

TEST(Report, AtomicWriteAndTraceParses) {
    BenchReport r = real_report(true);
    const std::string path = std::string(DUET_BINARY_DIR) + "/sim_test_trace.json";
    write_file_atomic(path, chrome_trace_json(r));
    std::ifstream in(path);
    nlohmann::json j = nlohmann::json::parse(in);
    size_t complete = 0;
    std::map<int, std::string> process;           // pid -> "target npu_pim_coop: pim0"
    std::map<std::pair<int, int>, std::string> thread;  // (pid, tid) -> "compute"
    for (const auto& e : j["traceEvents"]) {
        if (e["ph"] == "M" && e["name"] == "process_name") process[e["pid"].get<int>()] = e["args"]["name"];
        if (e["ph"] == "M" && e["name"] == "thread_name")
            thread[{e["pid"].get<int>(), e["tid"].get<int>()}] = e["args"]["name"];
    }
    std::set<std::string> busy;  // "process / thread" with events
    for (const auto& e : j["traceEvents"]) {
        if (e["ph"] != "X") continue;
        ++complete;
        const int pid = e["pid"].get<int>(), tid = e["tid"].get<int>();
        busy.insert(process[pid] + " / " + thread[{pid, tid}]);
        EXPECT_GE(e["dur"].get<double>(), 0);
        const std::string name = e["name"];
        EXPECT_TRUE(!name.empty() && name.back() != ' ' && name.front() != ' ') << "'" << name << "'";
    }
    EXPECT_GT(complete, 2 * (4 + 15 * 4u));
    // one track group per run and device (and link)
    std::set<std::string> groups;
    for (const auto& [pid, name] : process) groups.insert(name);
    EXPECT_EQ(groups, (std::set<std::string>{"baseline npu_only: npu0", "baseline npu_only: pim0",
                                             "baseline npu_only: pim0-npu0", "target npu_pim_coop: npu0",
                                             "target npu_pim_coop: pim0", "target npu_pim_coop: pim0-npu0"}));
    EXPECT_TRUE(busy.count("baseline npu_only: npu0 / compute"));
    EXPECT_TRUE(busy.count("target npu_pim_coop: pim0 / compute"));
    EXPECT_TRUE(busy.count("target npu_pim_coop: npu0 / conversion (PIM->NZ)"));
    EXPECT_FALSE(busy.count("baseline npu_only: pim0 / compute"));
    EXPECT_THROW(write_file_atomic("/nonexistent-dir/x/../../proc/none/r.json", "x"), Error);
}

TEST(Report, SvgAndTable) {
    BenchReport r = real_report(false);
    std::string svg = svg_chart(r);
    EXPECT_EQ(svg.rfind("<svg", 0), 0u);
    EXPECT_NE(svg.find("</svg>"), std::string::npos);
    EXPECT_EQ(std::count(svg.begin(), svg.end(), '<') - std::count(svg.begin(), svg.end(), '>'), 0);
    std::string table = format_table(r);
    EXPECT_NE(table.find("TBT p99"), std::string::npos);
    EXPECT_NE(table.find("Verdicts:"), std::string::npos);
    EXPECT_NE(table.find(r.verdicts[0].line), std::string::npos);
}

// The TBT chart's x axis carries decode token numbers: 1, a quarter, half, three quarters, last.
TEST(Report, SvgXAxisHasTokenTicks) {
    const BenchReport r = real_report(false);  // gen 6: 5 decode tokens
    const std::string svg = svg_chart(r);
    std::vector<std::string> labels;
    const std::string tag = "class=\"xtick\"";
    for (size_t pos = svg.find(tag); pos != std::string::npos; pos = svg.find(tag, pos + 1)) {
        const size_t open = svg.find('>', pos) + 1;
        labels.push_back(svg.substr(open, svg.find('<', open) - open));
    }
    EXPECT_EQ(labels, (std::vector<std::string>{"1", "2", "3", "4", "5"}));
}

// Event names carry no padding: "L0 rmsnorm", not "L0 rmsnorm " (the role of a non-matmul is empty).
TEST(Report, EventNamesHaveNoTrailingSpaces) {
    const BenchReport r = real_report(true);
    std::set<std::string> names;
    for (const auto& e : r.target.timeline.events) {
        ASSERT_FALSE(e.name.empty());
        EXPECT_NE(e.name.back(), ' ') << "'" << e.name << "'";
        names.insert(e.name);
    }
    EXPECT_TRUE(names.count("L0 rmsnorm"));
    EXPECT_TRUE(names.count("L0 matmul attn_q"));
    EXPECT_TRUE(names.count("embed"));
}
