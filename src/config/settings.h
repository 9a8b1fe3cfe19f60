#pragma once
// settings.json: the runtime and API channel (docs/design.md "Configuration"). Sections and keys:
//   ascend:  device_id (the NPU of the modelled topology: 0 .. NPUs - 1, checked by
//            check_device_id), soc_version (an NPU preset name), cann_path (where CANN would
//            be; information only: duet models the NPU and needs no CANN), op_precision_mode,
//            enable_pim_coop
//   api:     api_base (http:// or https:// URL, optionally with a path prefix such as
//            https://host/api), api_key_env (name of the variable holding the key: the key
//            itself never appears in settings or a log), api_key_file (optional KEY=value
//            file read when the variable is unset; must not be group/other-readable),
//            timeout_ms, max_retries, model.  The section may also be called "taotoken" (the
//            published guide's name): one of the two, not both.
//   runtime: seq_len, batch_size, dtype, log_level, and the runtime knobs (config/runtime_knobs.h)
//            under their names in lower case with string values ("task_queue_enable": "2");
//            the knob's environment variable wins over the file
// Every key is optional in the file (missing = the default, equal to configs/settings.json);
// unknown keys, duplicate keys, wrong types and out-of-range values are errors naming file,
// key, value and what is allowed. DUET_<KEY> environment variables override the file
// (docs/configuration.md); a DUET_* variable that is one or two letters away from an
// override is an error (a typo would be ignored silently), any other unknown DUET_* variable
// a warning.
// Thread safety: plain value type; loading reads files and the given environment only.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "config/diagnostics.h"
#include "config/env.h"
#include "config/field.h"

namespace duet::config {

struct AscendSettings {
    int64_t device_id = 0;
    std::string soc_version = "Ascend910B";
    std::string cann_path;  // "" = not given
    std::string op_precision_mode = "allow_fp32_to_fp16";
    bool enable_pim_coop = true;
};

struct ApiSettings {
    std::string api_base = "http://127.0.0.1:8080";
    std::string api_key_env = "DUET_API_KEY";
    std::string api_key_file;  // "" = none; relative paths are relative to the settings file
    int64_t timeout_ms = 30000;
    int64_t max_retries = 3;
    std::string model = "llama2-7b";
};

struct RuntimeSettings {
    int64_t seq_len = 2048;
    int64_t batch_size = 1;
    std::string dtype = "f16";  // f16, bf16 or f32 (core/dtype.h names; float16 etc. read as these)
    std::string log_level = "info";
    std::map<std::string, std::string> knobs;  // runtime knob name (TASK_QUEUE_ENABLE) -> value; absent = not set
};

struct Settings {
    AscendSettings ascend;
    ApiSettings api;
    RuntimeSettings runtime;
    std::string source = "built-in settings";  // the file read (for messages)
    std::string api_section;                   // "api" or "taotoken": the name the file used ("" = neither)
};

const std::vector<Field<Settings>>& settings_fields();

// Loads `path` (empty: built-in defaults only), then applies DUET_* overrides from `env`.
// `known_socs` are the NPU preset names soc_version must be one of (empty: not checked).
// Errors go to `diag` (throwing unless it collects).
Settings load_settings(const std::string& path, const EnvMap& env, const std::vector<std::string>& known_socs,
                       Diagnostics& diag);
// Same with a throwing Diagnostics.
Settings load_settings(const std::string& path, const EnvMap& env, const std::vector<std::string>& known_socs);

// The API key: the variable named by api_key_env (from `env`, else the process environment),
// else the line api_key_env=VALUE of api_key_file. `source` says which ("variable X", "file F"),
// "" when neither has it. Throws duet::Error naming the file when api_key_file is unreadable or
// group/other-readable (like an ssh private key: chmod 600). Never log the value.
struct ApiKey {
    std::string value, source;
};
ApiKey find_api_key(const ApiSettings& api, const EnvMap& env);
std::string api_key(const ApiSettings& api, const EnvMap& env);  // find_api_key(...).value

// api_base split for HTTP: origin "https://host:port" and path prefix "/api" (no trailing
// slash; a trailing "/v1" is dropped because every request path starts with /v1/), so
// "https://h/api", "https://h/api/" and "https://h/api/v1" all give prefix "/api".
struct ApiBase {
    std::string origin, prefix;
};
ApiBase parse_api_base(const std::string& api_base);

// device_id must name an NPU of the modelled topology (n_npus of them; 1 until a topology
// models more). Blames DUET_DEVICE_ID when the value came from it, else the settings file.
void check_device_id(const Settings& s, int64_t n_npus, const EnvMap& env, Diagnostics& diag);

// Checks the names of the DUET_* variables in `env` against every override of settings.json
// and config.toml and the other variables duet reads (DUET_ISA, DUET_API_KEY, api_key_env):
// a near miss (edit distance <= 2) is an error naming the variable it resembles, any other
// unknown name a warning.
void check_env_names(const EnvMap& env, const std::string& api_key_env, Diagnostics& diag);

}  // namespace duet::config
