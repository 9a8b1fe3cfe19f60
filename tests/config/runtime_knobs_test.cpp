// Runtime knobs (config/runtime_knobs.h): values, exact errors, the dispatch mode
// TASK_QUEUE_ENABLE selects, near-miss spellings; and their effects through the real binary:
// TASK_QUEUE_ENABLE changes the modelled NPU launch cost of `duet bench`, doctor lists them.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "config/runtime_knobs.h"
#include "core/error.h"

using namespace duet;
using namespace duet::config;

namespace {

std::string error_of(const std::map<std::string, std::string>& env) {
    try {
        read_runtime_knobs(env);
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(RuntimeKnobs, ValuesAndDispatchModes) {
    EXPECT_FALSE(read_runtime_knobs({}).task_queue_enable);
    EXPECT_EQ(read_runtime_knobs({}).cpu_affinity, 0);
    const RuntimeKnobs k = read_runtime_knobs({{"TASK_QUEUE_ENABLE", "2"}, {"CPU_AFFINITY_CONF", "1"}});
    EXPECT_EQ(*k.task_queue_enable, 2);
    EXPECT_EQ(k.cpu_affinity, 1);
    EXPECT_EQ(effective_npu_dispatch("", k), "queue2");
    EXPECT_EQ(effective_npu_dispatch("graph", k), "graph");  // the flag wins
    EXPECT_EQ(effective_npu_dispatch("", RuntimeKnobs{}), "");
    EXPECT_EQ(dispatch_for_task_queue(0), "queue0");
    EXPECT_EQ(runtime_knobs().size(), 9u);
    const RuntimeKnobs s = read_runtime_knobs({{"HCCL_OP_EXPANSION_MODE", "AIV"}, {"VLLM_ASCEND_ENABLE_FLASHCOMM", "1"}});
    EXPECT_EQ(s.hccl_op_expansion_mode, "AIV");
    EXPECT_TRUE(s.flashcomm);
    EXPECT_FALSE(read_runtime_knobs({{"VLLM_ASCEND_ENABLE_FLASHCOMM", "0"}}).flashcomm);
}

TEST(RuntimeKnobs, BadValuesAreExactErrors) {
    EXPECT_EQ(error_of({{"TASK_QUEUE_ENABLE", "3"}}), "TASK_QUEUE_ENABLE = \"3\" is not allowed (allowed: 0, 1, 2)");
    EXPECT_EQ(error_of({{"TASK_QUEUE_ENABLE", "on"}}), "TASK_QUEUE_ENABLE = \"on\" is not allowed (allowed: 0, 1, 2)");
    EXPECT_EQ(error_of({{"CPU_AFFINITY_CONF", ""}}), "CPU_AFFINITY_CONF = \"\" is not allowed (allowed: 0, 1, 2)");
    EXPECT_EQ(error_of({{"HCCL_OP_EXPANSION_MODE", "aiv"}}),
              "HCCL_OP_EXPANSION_MODE = \"aiv\" is not allowed (allowed: AI_CPU, AIV, HOST, HOST_TS)");
    EXPECT_EQ(error_of({{"VLLM_ASCEND_ENABLE_FLASHCOMM", "2"}}),
              "VLLM_ASCEND_ENABLE_FLASHCOMM = \"2\" is not allowed (allowed: 0, 1)");
}

TEST(RuntimeKnobs, NearMissSpellingsAreFlagged) {
    const auto m = misspelled_runtime_knobs({"TASK_QUEUE_ENABLED", "TASK_QUEUE_ENABLE", "PATH", "CPU_AFINITY_CONF"});
    ASSERT_EQ(m.size(), 2u);
    EXPECT_EQ(m[0], std::make_pair(std::string("TASK_QUEUE_ENABLED"), std::string("TASK_QUEUE_ENABLE")));
    EXPECT_EQ(m[1], std::make_pair(std::string("CPU_AFINITY_CONF"), std::string("CPU_AFFINITY_CONF")));
}

struct Cmd {
    int rc;
    std::string out;
};
Cmd run(const std::string& cmdline) {
    const std::string o = std::string(DUET_BINARY_DIR) + "/knobs_test." + std::to_string(::getpid());
    const int st = std::system(fmt::format("{} > '{}' 2>&1", cmdline, o).c_str());
    std::ifstream f(o);
    Cmd c{WEXITSTATUS(st), std::string(std::istreambuf_iterator<char>(f), {})};
    std::remove(o.c_str());
    return c;
}

nlohmann::json bench_report(const std::string& env) {
    const std::string r = std::string(DUET_BINARY_DIR) + "/knobs_bench." + std::to_string(::getpid()) + ".json";
    const Cmd c = run(fmt::format("env {} '{}/duet' --log-level warn bench --model llama2-7b --seq-len 128 --gen-len 4 "
                                  "--baseline npu_only --target npu_only --no-verdict-exit --report '{}'",
                                  env, DUET_BINARY_DIR, r));
    EXPECT_EQ(c.rc, 0) << c.out;
    std::ifstream f(r);
    nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
    std::remove(r.c_str());
    return j;
}

// TASK_QUEUE_ENABLE selects the NPU model's dispatch mode: the report names it and the modelled
// TTFT (launch-bound operators) changes with it; unset is the preset default (queue1).
TEST(RuntimeKnobsCli, TaskQueueEnableSetsTheModelledDispatch) {
    const nlohmann::json q0 = bench_report("TASK_QUEUE_ENABLE=0"), q2 = bench_report("TASK_QUEUE_ENABLE=2"),
                         unset = bench_report("-u TASK_QUEUE_ENABLE"), q1 = bench_report("TASK_QUEUE_ENABLE=1");
    ASSERT_TRUE(q0.is_object() && q2.is_object() && unset.is_object());
    EXPECT_NE(q0["devices"]["npu"].get<std::string>().find("(queue0)"), std::string::npos) << q0["devices"];
    EXPECT_NE(q2["devices"]["npu"].get<std::string>().find("(queue2)"), std::string::npos) << q2["devices"];
    EXPECT_NE(q0["baseline"]["timeline"]["ttft_ns"], q2["baseline"]["timeline"]["ttft_ns"]);
    EXPECT_EQ(unset["baseline"]["timeline"]["ttft_ns"], q1["baseline"]["timeline"]["ttft_ns"]);
    const Cmd bad = run(fmt::format("env TASK_QUEUE_ENABLE=5 '{}/duet' bench --model llama2-7b", DUET_BINARY_DIR));
    EXPECT_EQ(bad.rc, 2);
    EXPECT_NE(bad.out.find("duet: error: TASK_QUEUE_ENABLE = \"5\" is not allowed (allowed: 0, 1, 2)"),
              std::string::npos) << bad.out;
}

TEST(RuntimeKnobsCli, DoctorListsTheKnobsAndFlagsNearMisses) {
    const Cmd c = run(fmt::format("env TASK_QUEUE_ENABLE=2 TASK_QUEUE_ENABLED=1 '{}/duet' doctor", DUET_BINARY_DIR));
    EXPECT_NE(c.out.find("runtime knobs (environment):"), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("TASK_QUEUE_ENABLE                        = \"2\""), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("CPU_AFFINITY_CONF                        not set"), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("WARNING TASK_QUEUE_ENABLED is set but is not a knob duet reads: did you mean "
                         "TASK_QUEUE_ENABLE?"),
              std::string::npos) << c.out;
}

}  // namespace
