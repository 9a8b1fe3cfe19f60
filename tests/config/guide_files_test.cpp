// The published guide's settings.json loads verbatim; its aliases, the key file, duplicate keys,
// misspelt DUET_* variables, device_id and the blame of environment overrides, with exact messages.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include "config/coop_config.h"
#include "config/settings.h"
#include "core/error.h"
#include "test_files.h"

using namespace duet::config;

namespace {
const std::vector<std::string> kSocs = {"Ascend910B", "Ascend910B2", "Ascend310P3"};

// Verbatim from the guide (issue 10).
const char* kGuide = R"({ "ascend": { "device_id": 0, "soc_version": "Ascend910B", "cann_path": "/usr/local/Ascend/ascend-toolkit/latest",
              "op_precision_mode": "allow_fp32_to_fp16", "enable_pim_coop": true },
  "taotoken": { "api_base": "https://taotoken.net/api", "api_key_env": "TAOTOKEN_API_KEY", "timeout_ms": 30000,
                "max_retries": 3, "model": "your-target-model" },
  "runtime": { "seq_len": 2048, "batch_size": 1, "dtype": "float16", "log_level": "info" } })";

std::string error_of(const std::string& path, const EnvMap& env = {}) {
    try {
        load_settings(path, env, kSocs);
    } catch (const duet::Error& e) {
        return e.what();
    }
    return "no error";
}
}  // namespace

TEST(GuideSettings, LoadsVerbatimWithTaotokenAsApi) {
    const auto p = write_test_file("guide.json", kGuide);
    Settings s = load_settings(p, {}, kSocs);
    EXPECT_EQ(s.api_section, "taotoken");
    EXPECT_EQ(s.api.api_base, "https://taotoken.net/api");
    EXPECT_EQ(s.api.api_key_env, "TAOTOKEN_API_KEY");
    EXPECT_EQ(s.api.model, "your-target-model");
    EXPECT_EQ(s.ascend.cann_path, "/usr/local/Ascend/ascend-toolkit/latest");
    EXPECT_EQ(s.runtime.seq_len, 2048);
    const auto q = write_test_file("api_plain.json", R"({"api": {"model": "llama2-7b"}})");
    EXPECT_EQ(load_settings(q, {}, kSocs).api_section, "api");
}

TEST(GuideSettings, ApiAndTaotokenTogetherIsAnError) {
    const auto p = write_test_file("both.json", R"({"api": {}, "taotoken": {}})");
    EXPECT_EQ(error_of(p), p + ": sections 'api' and 'taotoken' are both present: 'taotoken' is another name of 'api' "
                               "(allowed: one of the two)");
    const auto q = write_test_file("tt_bad.json", R"({"taotoken": {"timeout_ms": 0}})");
    EXPECT_EQ(error_of(q), q + ": key 'taotoken.timeout_ms' = 0 is out of range (allowed: 1 to 3600000)");
    const auto r = write_test_file("tt_unknown.json", R"({"taotoken": {"modle": "x"}})");
    EXPECT_EQ(error_of(r), r + ": unknown key 'taotoken.modle' (allowed here: api_base, api_key_env, api_key_file, "
                               "timeout_ms, max_retries, model)");
}

TEST(GuideSettings, DuplicateJsonKeysAreErrors) {
    const auto p = write_test_file("dup.json", R"({"runtime": {"seq_len": 512, "seq_len": 1024}})");
    EXPECT_EQ(error_of(p), p + ": key 'runtime.seq_len' appears more than once (allowed: once; JSON readers keep only "
                               "one of them)");
}

TEST(GuideSettings, MisspeltDuetVariableIsAnErrorOthersWarn) {
    EXPECT_EQ(error_of("", {{"DUET_SEQ_LNE", "4096"}}),
              "environment variable DUET_SEQ_LNE is not a duet override: did you mean DUET_SEQ_LEN? (a misspelt override "
              "would be ignored)");
    EXPECT_EQ(error_of("", {{"DUET_PIM_ALIGMENT", "256"}}),
              "environment variable DUET_PIM_ALIGMENT is not a duet override: did you mean DUET_PIM_ALIGNMENT? (a "
              "misspelt override would be ignored)");
    Diagnostics d(true);
    load_settings("", {{"DUET_SOMETHING_ELSE_ENTIRELY", "x"}, {"DUET_ISA", "avx2"}}, kSocs, d);
    EXPECT_TRUE(d.errors().empty());
    ASSERT_EQ(d.warnings().size(), 1u);
    EXPECT_EQ(d.warnings()[0], "environment variable DUET_SOMETHING_ELSE_ENTIRELY is not one duet reads (ignored)");
}

TEST(GuideSettings, KeyFromVariableOrPrivateKeyFile) {
    const auto kf = write_test_file("key.env", "# the key\nexport TAOTOKEN_API_KEY=\"sk-from-file\"\nOTHER=1\n");
    ::chmod(kf.c_str(), 0600);
    const auto p = write_test_file("keyfile.json", R"({"api": {"api_key_env": "TAOTOKEN_API_KEY", "api_key_file": "config_test_key.env"}})");
    Settings s = load_settings(p, {}, kSocs);
    EXPECT_EQ(s.api.api_key_file, std::string(DUET_BINARY_DIR) + "/config_test_key.env");  // relative to the settings file
    ::unsetenv("TAOTOKEN_API_KEY");
    ApiKey k = find_api_key(s.api, {});
    EXPECT_EQ(k.value, "sk-from-file");
    EXPECT_EQ(k.source, "file " + kf + " (TAOTOKEN_API_KEY=...)");
    k = find_api_key(s.api, {{"TAOTOKEN_API_KEY", "sk-var"}});
    EXPECT_EQ(k.value, "sk-var");
    EXPECT_EQ(k.source, "variable TAOTOKEN_API_KEY");
    ::chmod(kf.c_str(), 0644);
    try {
        find_api_key(s.api, {});
        FAIL();
    } catch (const duet::Error& e) {
        EXPECT_EQ(std::string(e.what()), kf + ": settings api.api_key_file is accessible by group/other (mode 0644; "
                                              "allowed: 0600 or 0400, like an ssh private key: chmod 600 " + kf + ")");
    }
}

TEST(GuideSettings, ApiBaseJoinsWithOrWithoutV1) {
    EXPECT_EQ(parse_api_base("https://taotoken.net/api").origin, "https://taotoken.net");
    for (const char* b : {"https://taotoken.net/api", "https://taotoken.net/api/", "https://taotoken.net/api/v1",
                          "https://taotoken.net/api/v1/"})
        EXPECT_EQ(parse_api_base(b).prefix, "/api") << b;
    EXPECT_EQ(parse_api_base("http://127.0.0.1:8080").prefix, "");
    EXPECT_EQ(parse_api_base("http://127.0.0.1:8080/v1").prefix, "");
    EXPECT_EQ(parse_api_base("http://127.0.0.1:8080/v1").origin, "http://127.0.0.1:8080");
}

TEST(GuideSettings, DeviceIdMustNameAModelledNpu) {
    const auto p = write_test_file("dev.json", R"({"ascend": {"device_id": 1}})");
    Settings s = load_settings(p, {}, kSocs);
    Diagnostics d;
    try {
        check_device_id(s, 1, {}, d);
        FAIL();
    } catch (const duet::Error& e) {
        EXPECT_EQ(std::string(e.what()), p + ": key 'ascend.device_id' = 1 is out of range (allowed: 0 to 0: the modelled "
                                             "topology has 1 NPU)");
    }
    check_device_id(s, 2, {}, d);  // a topology of two NPUs accepts it
    try {
        check_device_id(load_settings("", {{"DUET_DEVICE_ID", "3"}}, kSocs), 2, {{"DUET_DEVICE_ID", "3"}}, d);
        FAIL();
    } catch (const duet::Error& e) {
        EXPECT_EQ(std::string(e.what()), "environment variable DUET_DEVICE_ID: key 'ascend.device_id' = 3 is out of range "
                                         "(allowed: 0 to 1: the modelled topology has 2 NPUs)");
    }
}

TEST(GuideSettings, EnvOverrideIsBlamedNotTheFile) {
    const auto c = write_test_file("blame.toml", "[pim]\nlayout = \"row_major_128bit\"\nalignment = 128\n");
    try {
        load_coop_config(c, {{"DUET_PIM_ALIGNMENT", "256"}});
        FAIL();
    } catch (const duet::Error& e) {
        EXPECT_STREQ(e.what(), "environment variable DUET_PIM_ALIGNMENT: key 'pim.layout' = \"row_major_128bit\" needs "
                               "pim.alignment = 128 (found 256)");
    }
    try {
        load_coop_config("/nonexistent/dir/my.toml", {});
        FAIL();
    } catch (const duet::Error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/my.toml"), std::string::npos) << e.what();
    }
}
