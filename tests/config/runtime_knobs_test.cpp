// Runtime knobs (config/runtime_knobs.h): values, exact errors, the dispatch mode
// TASK_QUEUE_ENABLE selects, settings.json `runtime` with the environment winning, near-miss
// spellings; and their effects through the real binary: TASK_QUEUE_ENABLE changes the
// modelled NPU launch cost of `duet bench`, VLLM_ATTENTION_BACKEND the modelled attention,
// VLLM_ASCEND_ENABLE_PREFETCH_MLP the modelled decode step, ASCEND_RT_VISIBLE_DEVICES the
// NPUs of the topology, VLLM_ASCEND_MODEL_EXECUTE_TIME_OBSERVE logs one line per modelled step;
// doctor lists them with their source. (MULTI_STREAM_MEMORY_REUSE: tests/graph/memory_plan_test.)
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "config/runtime_knobs.h"
#include "config/settings.h"
#include "core/error.h"

using namespace duet;
using namespace duet::config;

namespace {

std::string error_of(const std::map<std::string, std::string>& env, const std::map<std::string, std::string>& st = {}) {
    try {
        read_runtime_knobs(env, st, "s.json");
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

TEST(RuntimeKnobs, TheOtherFiveKnobs) {
    const RuntimeKnobs d = read_runtime_knobs({});
    EXPECT_EQ(d.multi_stream_memory_reuse, 1);  // torch_npu's default
    EXPECT_FALSE(d.prefetch_mlp);
    EXPECT_FALSE(d.execute_time_observe);
    EXPECT_EQ(d.attention_backend, AttentionBackend::FLASH_ATTN);
    EXPECT_FALSE(d.visible_devices);
    EXPECT_EQ(visible_npu_count(d, 4), 4);
    const RuntimeKnobs k = read_runtime_knobs({{"MULTI_STREAM_MEMORY_REUSE", "0"},
                                               {"VLLM_ASCEND_ENABLE_PREFETCH_MLP", "1"},
                                               {"VLLM_ASCEND_MODEL_EXECUTE_TIME_OBSERVE", "1"},
                                               {"VLLM_ATTENTION_BACKEND", "TORCH_SDPA"},
                                               {"ASCEND_RT_VISIBLE_DEVICES", "2,0"}});
    EXPECT_EQ(k.multi_stream_memory_reuse, 0);
    EXPECT_TRUE(k.prefetch_mlp);
    EXPECT_TRUE(k.execute_time_observe);
    EXPECT_EQ(k.attention_backend, AttentionBackend::TORCH_SDPA);
    EXPECT_EQ(*k.visible_devices, (std::vector<int>{2, 0}));
    EXPECT_EQ(visible_npu_count(k, 3), 2);
}

TEST(RuntimeKnobs, TheEnvironmentWinsOverSettings) {
    const std::map<std::string, std::string> st = {{"TASK_QUEUE_ENABLE", "0"}, {"VLLM_ATTENTION_BACKEND", "TORCH_SDPA"}};
    const RuntimeKnobs k = read_runtime_knobs({{"TASK_QUEUE_ENABLE", "2"}}, st, "s.json");
    EXPECT_EQ(*k.task_queue_enable, 2);
    EXPECT_EQ(k.source.at("TASK_QUEUE_ENABLE"), "TASK_QUEUE_ENABLE");
    EXPECT_EQ(k.attention_backend, AttentionBackend::TORCH_SDPA);
    EXPECT_EQ(k.source.at("VLLM_ATTENTION_BACKEND"), "s.json: key 'runtime.vllm_attention_backend'");
    // a bad file value that the environment overrides is not read
    EXPECT_EQ(*read_runtime_knobs({{"TASK_QUEUE_ENABLE", "1"}}, {{"TASK_QUEUE_ENABLE", "9"}}).task_queue_enable, 1);
}

TEST(RuntimeKnobs, BadValuesOfTheOtherKnobsNameTheVariableOrKey) {
    EXPECT_EQ(error_of({{"VLLM_ATTENTION_BACKEND", "XFORMERS"}}),
              "VLLM_ATTENTION_BACKEND = \"XFORMERS\" is not allowed (allowed: FLASH_ATTN, TORCH_SDPA)");
    EXPECT_EQ(error_of({{"MULTI_STREAM_MEMORY_REUSE", "4"}}),
              "MULTI_STREAM_MEMORY_REUSE = \"4\" is not allowed (allowed: 0, 1, 2, 3)");
    EXPECT_EQ(error_of({{"VLLM_ASCEND_ENABLE_PREFETCH_MLP", "true"}}),
              "VLLM_ASCEND_ENABLE_PREFETCH_MLP = \"true\" is not allowed (allowed: 0, 1)");
    EXPECT_EQ(error_of({{"VLLM_ASCEND_MODEL_EXECUTE_TIME_OBSERVE", "2"}}),
              "VLLM_ASCEND_MODEL_EXECUTE_TIME_OBSERVE = \"2\" is not allowed (allowed: 0, 1)");
    for (const char* bad : {"", "0,,1", "1,1", "-1", "a", "0,"})
        EXPECT_EQ(error_of({{"ASCEND_RT_VISIBLE_DEVICES", bad}}),
                  fmt::format("ASCEND_RT_VISIBLE_DEVICES = \"{}\" is not allowed (allowed: comma-separated distinct NPU "
                              "ids, e.g. 0,1)", bad));
    EXPECT_EQ(error_of({}, {{"VLLM_ATTENTION_BACKEND", "flash"}}),
              "s.json: key 'runtime.vllm_attention_backend' = \"flash\" is not allowed (allowed: FLASH_ATTN, TORCH_SDPA)");
    try {
        visible_npu_count(read_runtime_knobs({{"ASCEND_RT_VISIBLE_DEVICES", "0,2"}}), 2);
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "ASCEND_RT_VISIBLE_DEVICES = \"0,2\" names NPU 2, but the modelled topology has 2 NPUs "
                               "(allowed: distinct ids from 0 to 1; config.toml topology.npus)");
    }
}

TEST(RuntimeKnobs, SettingsJsonRuntimeKeys) {
    const std::string path = std::string(DUET_BINARY_DIR) + "/knobs_settings." + std::to_string(::getpid()) + ".json";
    auto load = [&](const std::string& body) {
        std::ofstream(path) << body;
        return load_settings(path, {}, {});
    };
    const Settings st = load(R"({"runtime": {"task_queue_enable": "0", "ascend_rt_visible_devices": "1"}})");
    EXPECT_EQ(st.runtime.knobs, (std::map<std::string, std::string>{{"TASK_QUEUE_ENABLE", "0"},
                                                                      {"ASCEND_RT_VISIBLE_DEVICES", "1"}}));
    try {
        load(R"({"runtime": {"multi_stream_memory_reuse": "7"}})");
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), path + ": key 'runtime.multi_stream_memory_reuse' = \"7\" is not allowed "
                                                "(allowed: 0, 1, 2, 3)");
    }
    std::remove(path.c_str());
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

nlohmann::json bench_report(const std::string& env, const std::string& flags = "", std::string* out = nullptr,
                            int seq_len = 128) {
    const std::string r = std::string(DUET_BINARY_DIR) + "/knobs_bench." + std::to_string(::getpid()) + ".json";
    const Cmd c = run(fmt::format("env {} '{}/duet' --log-level warn bench --model llama2-7b --seq-len {} --gen-len 4 "
                                  "--baseline npu_only --target npu_only --no-verdict-exit --report '{}' {}",
                                  env, DUET_BINARY_DIR, seq_len, r, flags));
    if (out) *out = c.out;
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

double ttft(const nlohmann::json& j) { return j["baseline"]["timeline"]["ttft_ns"].get<double>(); }
double tbt(const nlohmann::json& j) { return j["baseline"]["tbt_mean_ns"].get<double>(); }

// TORCH_SDPA: the modelled attention writes and reads its score matrix in device memory, so a
// 2048-token prefill (2048 x 2048 scores per head, ~0.5 GB per layer) takes longer; FLASH_ATTN
// is the default.
TEST(RuntimeKnobsCli, AttentionBackendSelectsTheModelledAttention) {
    const nlohmann::json flash = bench_report("-u VLLM_ATTENTION_BACKEND", "", nullptr, 2048),
                         flash2 = bench_report("VLLM_ATTENTION_BACKEND=FLASH_ATTN", "", nullptr, 2048),
                         sdpa = bench_report("VLLM_ATTENTION_BACKEND=TORCH_SDPA", "", nullptr, 2048);
    ASSERT_TRUE(flash.is_object() && sdpa.is_object());
    EXPECT_EQ(ttft(flash), ttft(flash2));
    EXPECT_GT(ttft(sdpa), ttft(flash));
    const Cmd bad = run(fmt::format("env VLLM_ATTENTION_BACKEND=XFORMERS '{}/duet' bench --model llama2-7b", DUET_BINARY_DIR));
    EXPECT_EQ(bad.rc, 2);
    EXPECT_NE(bad.out.find("duet: error: VLLM_ATTENTION_BACKEND = \"XFORMERS\" is not allowed (allowed: FLASH_ATTN, "
                           "TORCH_SDPA)"), std::string::npos) << bad.out;
}

// The MLP prefetch shortens the modelled decode step (gate/up read partly from L2), not the prefill.
TEST(RuntimeKnobsCli, PrefetchMlpShortensTheModelledDecodeStep) {
    const nlohmann::json off = bench_report("VLLM_ASCEND_ENABLE_PREFETCH_MLP=0"),
                         on = bench_report("VLLM_ASCEND_ENABLE_PREFETCH_MLP=1");
    ASSERT_TRUE(off.is_object() && on.is_object());
    EXPECT_LT(tbt(on), tbt(off));
    EXPECT_EQ(ttft(on), ttft(off));
}

TEST(RuntimeKnobsCli, VisibleDevicesPickTheNpusOfTheTopology) {
    const nlohmann::json all = bench_report("-u ASCEND_RT_VISIBLE_DEVICES", "--npus 2"),
                         one = bench_report("ASCEND_RT_VISIBLE_DEVICES=1", "--npus 2");
    ASSERT_TRUE(all.is_object() && one.is_object());
    EXPECT_EQ(all["topology"]["devices"].size(), 3u) << all["topology"];  // npu0, npu1, pim0
    EXPECT_EQ(one["topology"]["devices"].size(), 2u) << one["topology"];
    EXPECT_NE(ttft(all), ttft(one));  // matmuls split over two NPUs or not
    const Cmd bad = run(fmt::format("env ASCEND_RT_VISIBLE_DEVICES=0,2 '{}/duet' bench --model llama2-7b --npus 2",
                                    DUET_BINARY_DIR));
    EXPECT_EQ(bad.rc, 2);
    EXPECT_NE(bad.out.find("duet: error: ASCEND_RT_VISIBLE_DEVICES = \"0,2\" names NPU 2, but the modelled topology "
                           "has 2 NPUs (allowed: distinct ids from 0 to 1; config.toml topology.npus)"),
              std::string::npos) << bad.out;
}

TEST(RuntimeKnobsCli, ExecuteTimeObserveLogsEveryModelledStep) {
    std::string out;
    bench_report("VLLM_ASCEND_MODEL_EXECUTE_TIME_OBSERVE=1", "", &out);
    const nlohmann::json j = bench_report("-u VLLM_ASCEND_MODEL_EXECUTE_TIME_OBSERVE", "", nullptr);
    size_t lines = 0;
    for (size_t at = out.find("execute time (modelled, npu_only): forward "); at != std::string::npos;
         at = out.find("execute time (modelled, npu_only): forward ", at + 1))
        ++lines;
    EXPECT_EQ(lines, 2u * 4u) << out;  // baseline and target, prefill + 3 decode steps each
    EXPECT_NE(out.find(fmt::format("forward 0 (prefill): {:.3f} ms", j["baseline"]["timeline"]["prefill_ns"].get<double>() / 1e6)),
              std::string::npos) << out;
    std::string quiet;
    bench_report("-u VLLM_ASCEND_MODEL_EXECUTE_TIME_OBSERVE", "", &quiet);
    EXPECT_EQ(quiet.find("execute time"), std::string::npos) << quiet;
}

TEST(RuntimeKnobsCli, SettingsJsonSetsAKnobAndTheEnvironmentWins) {
    const std::string path = std::string(DUET_BINARY_DIR) + "/knobs_cli_settings." + std::to_string(::getpid()) + ".json";
    std::ofstream(path) << R"({"runtime": {"task_queue_enable": "0"}})";
    const nlohmann::json file = bench_report("-u TASK_QUEUE_ENABLE", "--settings '" + path + "'"),
                         env = bench_report("TASK_QUEUE_ENABLE=2", "--settings '" + path + "'");
    EXPECT_NE(file["devices"]["npu"].get<std::string>().find("(queue0)"), std::string::npos) << file["devices"];
    EXPECT_NE(env["devices"]["npu"].get<std::string>().find("(queue2)"), std::string::npos) << env["devices"];
    const Cmd doc = run(fmt::format("env TASK_QUEUE_ENABLE=2 '{}/duet' doctor --settings '{}'", DUET_BINARY_DIR, path));
    EXPECT_NE(doc.out.find("TASK_QUEUE_ENABLE                        = \"2\" (environment; overrides settings \"0\")"),
              std::string::npos) << doc.out;
    std::remove(path.c_str());
}

TEST(RuntimeKnobsCli, DoctorListsTheKnobsAndFlagsNearMisses) {
    const Cmd c = run(fmt::format("env TASK_QUEUE_ENABLE=2 TASK_QUEUE_ENABLED=1 '{}/duet' doctor", DUET_BINARY_DIR));
    EXPECT_NE(c.out.find("runtime knobs (environment, else settings.json runtime; the environment wins):"),
              std::string::npos) << c.out;
    EXPECT_NE(c.out.find("TASK_QUEUE_ENABLE                        = \"2\" (environment)"), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("CPU_AFFINITY_CONF                        not set"), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("WARNING TASK_QUEUE_ENABLED is set but is not a knob duet reads: did you mean "
                         "TASK_QUEUE_ENABLE?"),
              std::string::npos) << c.out;
}

}  // namespace
