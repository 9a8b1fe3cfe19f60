#include "config/settings.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "test_files.h"

using namespace duet::config;

namespace {
const std::vector<std::string> kSocs = {"Ascend910B", "Ascend910B2", "Ascend310P3"};

std::string error_of(const std::string& path, const EnvMap& env = {}) {
    try {
        load_settings(path, env, kSocs);
    } catch (const duet::Error& e) {
        return e.what();
    }
    return "no error";
}
}  // namespace

TEST(Settings, ShippedFileEqualsBuiltInDefaults) {
    Settings s = load_settings(std::string(DUET_SOURCE_DIR) + "/configs/settings.json", {}, kSocs);
    Settings d;
    for (const auto& f : settings_fields()) EXPECT_EQ(f.show(s), f.show(d)) << f.dotted();
    EXPECT_EQ(s.runtime.seq_len, 2048);
    EXPECT_EQ(s.api.api_key_env, "DUET_API_KEY");
}

TEST(Settings, PartialFileKeepsOtherDefaults) {
    auto p = write_test_file("partial.json", R"({"runtime": {"seq_len": 512}})");
    Settings s = load_settings(p, {}, kSocs);
    EXPECT_EQ(s.runtime.seq_len, 512);
    EXPECT_EQ(s.runtime.batch_size, 1);
    EXPECT_EQ(s.ascend.soc_version, "Ascend910B");
}

TEST(Settings, UnknownKeyNamesAllowed) {
    auto p = write_test_file("unknown.json", R"({"runtime": {"seqlen": 512}})");
    EXPECT_EQ(error_of(p), p + ": unknown key 'runtime.seqlen' (allowed here: seq_len, batch_size, dtype, log_level, task_queue_enable, cpu_affinity_conf, hccl_op_expansion_mode, vllm_ascend_enable_flashcomm, multi_stream_memory_reuse, "
              "vllm_ascend_enable_prefetch_mlp, vllm_ascend_model_execute_time_observe, vllm_attention_backend, "
              "ascend_rt_visible_devices)");
    auto q = write_test_file("unknown_sec.json", R"({"npu": {}})");
    EXPECT_EQ(error_of(q), q + ": unknown key 'npu' (allowed here: ascend, api, runtime, taotoken)");
}

TEST(Settings, WrongTypeAndRange) {
    auto p = write_test_file("type.json", R"({"runtime": {"seq_len": "long"}})");
    EXPECT_EQ(error_of(p), p + ": key 'runtime.seq_len' has type string, expected integer");
    auto q = write_test_file("range.json", R"({"runtime": {"seq_len": 0}})");
    EXPECT_EQ(error_of(q), q + ": key 'runtime.seq_len' = 0 is out of range (allowed: 1 to 1048576)");
    auto r = write_test_file("enum.json", R"({"runtime": {"dtype": "fp8"}})");
    EXPECT_EQ(error_of(r), r + ": key 'runtime.dtype' = \"fp8\" is not allowed (allowed: f16, bf16, f32; "
              "also read as one of those: float32, fp32, float16, fp16, bfloat16)");
    // an alias is read as its one spelling (core/dtype.h), from the file and from DUET_DTYPE
    auto a = write_test_file("alias.json", R"({"runtime": {"dtype": "bfloat16"}})");
    EXPECT_EQ(load_settings(a, {}, kSocs).runtime.dtype, "bf16");
    EXPECT_EQ(load_settings(a, {{"DUET_DTYPE", "fp16"}}, kSocs).runtime.dtype, "f16");
    auto u = write_test_file("url.json", R"({"api": {"api_base": "localhost:8080"}})");
    EXPECT_EQ(error_of(u), u + ": key 'api.api_base' = \"localhost:8080\" is not allowed (allowed: an http:// or https:// URL)");
}

TEST(Settings, UnknownSocListsPresets) {
    auto p = write_test_file("soc.json", R"({"ascend": {"soc_version": "Ascend999"}})");
    EXPECT_EQ(error_of(p),
              p + ": key 'ascend.soc_version' = \"Ascend999\" is not a known NPU preset (allowed: Ascend910B, Ascend910B2, Ascend310P3)");
}

TEST(Settings, ParseErrorNamesFile) {
    auto p = write_test_file("broken.json", "{\"runtime\": ");
    EXPECT_EQ(error_of(p).rfind(p + ": JSON parse error at byte", 0), 0u) << error_of(p);
    EXPECT_EQ(error_of("/nonexistent/settings.json"), "/nonexistent/settings.json: cannot open file");
}

// Found by config_fuzz: a number past double's range escaped as nlohmann's
// out_of_range instead of an error naming the file.
TEST(Settings, NumberOutOfRangeNamesFile) {
    auto p = write_test_file("huge.json", R"({"runtime": {"seq_len": 4E444}})");
    EXPECT_EQ(error_of(p), p + ": JSON number out of range: number overflow parsing '4E444' (allowed: numbers within +-1.8e308)");
}

TEST(Settings, EnvironmentOverridesFile) {
    auto p = write_test_file("env.json", R"({"runtime": {"seq_len": 512}})");
    Settings s = load_settings(p, {{"DUET_SEQ_LEN", "4096"}, {"DUET_SOC_VERSION", "Ascend310P3"},
                                   {"DUET_ENABLE_PIM_COOP", "false"}, {"DUET_UNRELATED", "x"}},
                               kSocs);
    EXPECT_EQ(s.runtime.seq_len, 4096);
    EXPECT_EQ(s.ascend.soc_version, "Ascend310P3");
    EXPECT_FALSE(s.ascend.enable_pim_coop);
}

TEST(Settings, BadEnvironmentValueNamesVariable) {
    EXPECT_EQ(error_of("", {{"DUET_SEQ_LEN", "abc"}}),
              "environment variable DUET_SEQ_LEN: key 'runtime.seq_len' = \"abc\" is not allowed (allowed: an integer "
              "from 1 to 1048576)");
    EXPECT_EQ(error_of("", {{"DUET_BATCH_SIZE", "0"}}),
              "environment variable DUET_BATCH_SIZE: key 'runtime.batch_size' = 0 is out of range (allowed: 1 to 4096)");
    EXPECT_EQ(error_of("", {{"DUET_SOC_VERSION", "X"}}),
              "environment variable DUET_SOC_VERSION: key 'ascend.soc_version' = \"X\" is not a known NPU preset "
              "(allowed: Ascend910B, Ascend910B2, Ascend310P3)");
}

TEST(Settings, CollectAllReportsEveryError) {
    auto p = write_test_file("many.json",
                             R"({"runtime": {"seq_len": -1, "dtype": 3, "x": 1}, "ascend": {"soc_version": "Z"}})");
    Diagnostics d(true);
    Settings s = load_settings(p, {}, kSocs, d);
    ASSERT_EQ(d.errors().size(), 4u);
    // nlohmann's object keeps keys sorted: ascend before runtime; bad values keep defaults.
    EXPECT_EQ(d.errors()[0], p + ": key 'runtime.dtype' has type integer, expected string");
    EXPECT_EQ(d.errors()[1], p + ": key 'runtime.seq_len' = -1 is out of range (allowed: 1 to 1048576)");
    EXPECT_EQ(d.errors()[2], p + ": unknown key 'runtime.x' (allowed here: seq_len, batch_size, dtype, log_level, task_queue_enable, cpu_affinity_conf, hccl_op_expansion_mode, vllm_ascend_enable_flashcomm, multi_stream_memory_reuse, "
              "vllm_ascend_enable_prefetch_mlp, vllm_ascend_model_execute_time_observe, vllm_attention_backend, "
              "ascend_rt_visible_devices)");
    EXPECT_EQ(d.errors()[3],
              p + ": key 'ascend.soc_version' = \"Z\" is not a known NPU preset (allowed: Ascend910B, Ascend910B2, Ascend310P3)");
    EXPECT_EQ(s.runtime.seq_len, 2048);
}

TEST(Settings, ApiKeyComesFromNamedVariable) {
    ApiSettings api;
    api.api_key_env = "DUET_TEST_KEY_VAR";
    EXPECT_EQ(api_key(api, {{"DUET_TEST_KEY_VAR", "sk-123"}}), "sk-123");
    EXPECT_EQ(api_key(api, {}), "");
}
