#pragma once
// settings.json: the runtime and API channel (DESIGN.md "Configuration"). Sections and keys:
//   ascend:  device_id (0..63), soc_version (an NPU preset name), op_precision_mode,
//            enable_pim_coop
//   api:     api_base (http:// or https:// URL), api_key_env (name of the variable holding
//            the key: the key itself never appears in a file or a log), timeout_ms,
//            max_retries, model
//   runtime: seq_len, batch_size, dtype, log_level
// Every key is optional in the file (missing = the default, equal to configs/settings.json);
// unknown keys, wrong types and out-of-range values are errors naming file, key, value and
// what is allowed. DUET_<KEY> environment variables override the file (docs/configuration.md).
// Thread safety: plain value type; loading reads files and the given environment only.
#include <cstdint>
#include <string>
#include <vector>

#include "config/diagnostics.h"
#include "config/env.h"
#include "config/field.h"

namespace duet::config {

struct AscendSettings {
    int64_t device_id = 0;
    std::string soc_version = "Ascend910B";
    std::string op_precision_mode = "allow_fp32_to_fp16";
    bool enable_pim_coop = true;
};

struct ApiSettings {
    std::string api_base = "http://127.0.0.1:8080";
    std::string api_key_env = "DUET_API_KEY";
    int64_t timeout_ms = 30000;
    int64_t max_retries = 3;
    std::string model = "llama2-7b";
};

struct RuntimeSettings {
    int64_t seq_len = 2048;
    int64_t batch_size = 1;
    std::string dtype = "float16";
    std::string log_level = "info";
};

struct Settings {
    AscendSettings ascend;
    ApiSettings api;
    RuntimeSettings runtime;
};

const std::vector<Field<Settings>>& settings_fields();

// Loads `path` (empty: built-in defaults only), then applies DUET_* overrides from `env`.
// `known_socs` are the NPU preset names soc_version must be one of (empty: not checked).
// Errors go to `diag` (throwing unless it collects).
Settings load_settings(const std::string& path, const EnvMap& env, const std::vector<std::string>& known_socs,
                       Diagnostics& diag);
// Same with a throwing Diagnostics.
Settings load_settings(const std::string& path, const EnvMap& env, const std::vector<std::string>& known_socs);

// The API key from the variable named by api_key_env, or "" when unset. Never log it.
std::string api_key(const ApiSettings& api, const EnvMap& env);

}  // namespace duet::config
