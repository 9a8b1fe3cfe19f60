#include "config/settings.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "config/coop_config.h"
#include "config/loader.h"
#include "config/runtime_knobs.h"
#include "core/file_read.h"

namespace duet::config {
namespace {

using F = Field<Settings>;

template <class S, class M>
F make(std::string sec, std::string key, FieldKind kind, S Settings::*section, M S::*member) {
    const std::string env = key;  // settings.json keys are unique: DUET_<KEY>
    return member_field(std::move(sec), std::move(key), kind, section, member, env);
}

// A runtime knob in the runtime section: a string validated like the environment variable,
// with no DUET_* override of its own (the knob's own variable is the override).
F knob_field(const std::string& name) {
    F f;
    f.section = "runtime";
    f.key = runtime_knob_key(name);
    f.kind = FieldKind::STRING;
    f.set = [name](Settings& s, const Value& v) { s.runtime.knobs[name] = v.s; };
    f.show = [name](const Settings& s) {
        auto it = s.runtime.knobs.find(name);
        return "\"" + (it == s.runtime.knobs.end() ? std::string() : it->second) + "\"";  // "" = not set
    };
    f.check = [name](const Value& v) { return runtime_knob_rule(name, v.s); };
    return f;
}

std::vector<F> build() {
    using K = FieldKind;
    std::vector<F> v;
    v.push_back(ranged(make("ascend", "device_id", K::INT, &Settings::ascend, &AscendSettings::device_id), 0, 63));
    v.push_back(make("ascend", "soc_version", K::STRING, &Settings::ascend, &AscendSettings::soc_version));
    v.push_back(make("ascend", "cann_path", K::STRING, &Settings::ascend, &AscendSettings::cann_path));
    v.push_back(one_of(make("ascend", "op_precision_mode", K::ENUM, &Settings::ascend, &AscendSettings::op_precision_mode),
                       {"force_fp32", "allow_fp32_to_fp16", "force_fp16", "must_keep_origin_dtype",
                        "allow_mix_precision"}));
    v.push_back(make("ascend", "enable_pim_coop", K::BOOL, &Settings::ascend, &AscendSettings::enable_pim_coop));
    v.push_back(checked(make("api", "api_base", K::STRING, &Settings::api, &ApiSettings::api_base),
                        [](const Value& x) {
                            bool ok = (x.s.rfind("http://", 0) == 0 && x.s.size() > 7) ||
                                      (x.s.rfind("https://", 0) == 0 && x.s.size() > 8);
                            return ok ? std::string() : std::string("an http:// or https:// URL");
                        }));
    v.push_back(checked(make("api", "api_key_env", K::STRING, &Settings::api, &ApiSettings::api_key_env),
                        [](const Value& x) {
                            bool ok = !x.s.empty() && !std::isdigit(static_cast<unsigned char>(x.s[0]));
                            for (char c : x.s) ok = ok && (std::isupper(static_cast<unsigned char>(c)) ||
                                                           std::isdigit(static_cast<unsigned char>(c)) || c == '_');
                            return ok ? std::string() : std::string("an environment variable name like DUET_API_KEY");
                        }));
    v.push_back(make("api", "api_key_file", K::STRING, &Settings::api, &ApiSettings::api_key_file));
    v.push_back(ranged(make("api", "timeout_ms", K::INT, &Settings::api, &ApiSettings::timeout_ms), 1, 3600000));
    v.push_back(ranged(make("api", "max_retries", K::INT, &Settings::api, &ApiSettings::max_retries), 0, 100));
    v.push_back(checked(make("api", "model", K::STRING, &Settings::api, &ApiSettings::model),
                        [](const Value& x) { return x.s.empty() ? std::string("a non-empty model name") : std::string(); }));
    v.push_back(ranged(make("runtime", "seq_len", K::INT, &Settings::runtime, &RuntimeSettings::seq_len), 1, 1048576));
    v.push_back(ranged(make("runtime", "batch_size", K::INT, &Settings::runtime, &RuntimeSettings::batch_size), 1, 4096));
    v.push_back(dtype_enum(make("runtime", "dtype", K::ENUM, &Settings::runtime, &RuntimeSettings::dtype),
                           {"f16", "bf16", "f32"}));
    v.push_back(one_of(make("runtime", "log_level", K::ENUM, &Settings::runtime, &RuntimeSettings::log_level),
                       {"trace", "debug", "info", "warn", "error", "off"}));
    for (const RuntimeKnobInfo& k : runtime_knobs()) v.push_back(knob_field(k.name));
    return v;
}

}  // namespace

const std::vector<Field<Settings>>& settings_fields() {
    static const std::vector<Field<Settings>> fields = build();
    return fields;
}

Settings load_settings(const std::string& path, const EnvMap& env, const std::vector<std::string>& known_socs,
                       Diagnostics& diag) {
    Settings s;
    const auto& fields = settings_fields();
    if (!path.empty()) {
        s.source = path;
        std::optional<std::string> text;
        try {
            text = read_small_file(path, "");  // a regular file of at most 16 MiB (core/file_read.h)
        } catch (const Error& e) {
            diag.error(e.what());
        }
        if (text) {
            nlohmann::json doc = parse_json_checked(*text, path, diag);
            if (doc.is_object() && doc.contains("api") && doc.contains("taotoken"))
                diag.error(fmt::format("{}: sections 'api' and 'taotoken' are both present: 'taotoken' is another name of "
                                       "'api' (allowed: one of the two)", path));
            else if (!doc.is_discarded())
                apply_json(doc, path, fields, s, diag, {{"taotoken", "api"}});
            if (doc.is_object()) s.api_section = doc.contains("taotoken") ? "taotoken" : doc.contains("api") ? "api" : "";
            if (!s.api.api_key_file.empty() && std::filesystem::path(s.api.api_key_file).is_relative())
                s.api.api_key_file = (std::filesystem::path(path).parent_path() / s.api.api_key_file).string();
        }
    }
    const Settings before_env = s;
    apply_env(env, fields, s, diag);
    check_env_names(env, s.api.api_key_env, diag);
    if (!known_socs.empty()) {
        bool ok = false;
        for (const auto& k : known_socs) ok = ok || k == s.ascend.soc_version;
        if (!ok) {
            const bool from_env = env.count("DUET_SOC_VERSION") && s.ascend.soc_version != before_env.ascend.soc_version;
            const std::string where = from_env ? "environment variable DUET_SOC_VERSION"
                                               : (path.empty() ? std::string("built-in settings") : path);
            diag.error(fmt::format("{}: key 'ascend.soc_version' = \"{}\" is not a known NPU preset (allowed: {})", where,
                                   s.ascend.soc_version, join_names(known_socs)));
        }
    }
    return s;
}

Settings load_settings(const std::string& path, const EnvMap& env, const std::vector<std::string>& known_socs) {
    Diagnostics d;
    return load_settings(path, env, known_socs, d);
}

namespace {

// The value of `name` in a KEY=value file (blank lines and # comments skipped, "export "
// and matching quotes allowed); nullopt when absent.
std::optional<std::string> read_env_file(const std::string& file, const std::string& name) {
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) fail("{}: settings api.api_key_file cannot be read ({})", file, std::strerror(errno));
    if (st.st_mode & 077)
        fail("{}: settings api.api_key_file is accessible by group/other (mode {:04o}; allowed: 0600 or 0400, like an "
             "ssh private key: chmod 600 {})", file, unsigned(st.st_mode & 07777), file);
    std::ifstream in(file);
    if (!in) fail("{}: settings api.api_key_file cannot be read", file);
    std::string line;
    while (std::getline(in, line)) {
        auto trim = [](std::string x) {
            const size_t a = x.find_first_not_of(" \t\r"), b = x.find_last_not_of(" \t\r");
            return a == std::string::npos ? std::string() : x.substr(a, b - a + 1);
        };
        line = trim(line);
        if (line.empty() || line[0] == '#') continue;
        if (line.rfind("export ", 0) == 0) line = trim(line.substr(7));
        const size_t eq = line.find('=');
        if (eq == std::string::npos || trim(line.substr(0, eq)) != name) continue;
        std::string v = trim(line.substr(eq + 1));
        if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) v = v.substr(1, v.size() - 2);
        return v;
    }
    return std::nullopt;
}

size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (size_t j = 1; j <= b.size(); ++j)
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

}  // namespace

ApiKey find_api_key(const ApiSettings& api, const EnvMap& env) {
    auto it = env.find(api.api_key_env);
    if (it != env.end()) return {it->second, "variable " + api.api_key_env};
    if (const char* v = std::getenv(api.api_key_env.c_str())) return {v, "variable " + api.api_key_env};
    if (!api.api_key_file.empty())
        if (auto v = read_env_file(api.api_key_file, api.api_key_env))
            return {*v, "file " + api.api_key_file + " (" + api.api_key_env + "=...)"};
    return {};
}

std::string api_key(const ApiSettings& api, const EnvMap& env) { return find_api_key(api, env).value; }

ApiBase parse_api_base(const std::string& api_base) {
    ApiBase b;
    const size_t scheme = api_base.find("://");
    const size_t slash = api_base.find('/', scheme == std::string::npos ? 0 : scheme + 3);
    b.origin = api_base.substr(0, slash);
    b.prefix = slash == std::string::npos ? "" : api_base.substr(slash);
    while (!b.prefix.empty() && b.prefix.back() == '/') b.prefix.pop_back();
    if (b.prefix.size() >= 3 && b.prefix.compare(b.prefix.size() - 3, 3, "/v1") == 0) b.prefix.resize(b.prefix.size() - 3);
    while (!b.prefix.empty() && b.prefix.back() == '/') b.prefix.pop_back();
    return b;
}

void check_device_id(const Settings& s, int64_t n_npus, const EnvMap& env, Diagnostics& diag) {
    if (s.ascend.device_id >= 0 && s.ascend.device_id < n_npus) return;
    const std::string where = env.count("DUET_DEVICE_ID") ? "environment variable DUET_DEVICE_ID" : s.source;
    diag.error(fmt::format("{}: key 'ascend.device_id' = {} is out of range (allowed: 0 to {}: the modelled topology has "
                           "{} NPU{})", where, s.ascend.device_id, n_npus - 1, n_npus, n_npus == 1 ? "" : "s"));
}

void check_env_names(const EnvMap& env, const std::string& api_key_env, Diagnostics& diag) {
    std::vector<std::string> overrides;
    for (const auto& f : settings_fields()) overrides.push_back(f.env);
    for (const auto& f : coop_config_fields()) overrides.push_back(f.env);
    std::vector<std::string> known = overrides;
    // Read elsewhere: kernel ISA cap, the default key variable, demo/bench script knobs.
    for (const char* x : {"DUET_ISA", "DUET_API_KEY", "DUET_CONFIG_DIR", "DUET_DEMO_MODEL", "DUET_BENCH_THREADS", "DUET_BENCH_DTYPES",
                          "DUET_SHARED_MODELS", "DUET_PRINT_GOLDEN", "DUET_PRINT_ORACLE", "DUET_REFERENCE_PYTHON"})
        known.push_back(x);
    known.push_back(api_key_env);
    for (const auto& [name, _] : env) {
        if (std::find(known.begin(), known.end(), name) != known.end()) continue;
        std::string near;
        for (const auto& o : overrides)
            if (edit_distance(name, o) <= 2) near = o;
        if (!near.empty())
            diag.error(fmt::format("environment variable {} is not a duet override: did you mean {}? (a misspelt "
                                   "override would be ignored)", name, near));
        else
            diag.warn(fmt::format("environment variable {} is not one duet reads (ignored)", name));
    }
}

}  // namespace duet::config
