#include "config/settings.h"

#include <fstream>
#include <sstream>

#include "config/loader.h"

namespace duet::config {
namespace {

using F = Field<Settings>;

template <class S, class M>
F make(std::string sec, std::string key, FieldKind kind, S Settings::*section, M S::*member) {
    const std::string env = key;  // settings.json keys are unique: DUET_<KEY>
    return member_field(std::move(sec), std::move(key), kind, section, member, env);
}

std::vector<F> build() {
    using K = FieldKind;
    std::vector<F> v;
    v.push_back(ranged(make("ascend", "device_id", K::INT, &Settings::ascend, &AscendSettings::device_id), 0, 63));
    v.push_back(make("ascend", "soc_version", K::STRING, &Settings::ascend, &AscendSettings::soc_version));
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
    v.push_back(ranged(make("api", "timeout_ms", K::INT, &Settings::api, &ApiSettings::timeout_ms), 1, 3600000));
    v.push_back(ranged(make("api", "max_retries", K::INT, &Settings::api, &ApiSettings::max_retries), 0, 100));
    v.push_back(checked(make("api", "model", K::STRING, &Settings::api, &ApiSettings::model),
                        [](const Value& x) { return x.s.empty() ? std::string("a non-empty model name") : std::string(); }));
    v.push_back(ranged(make("runtime", "seq_len", K::INT, &Settings::runtime, &RuntimeSettings::seq_len), 1, 1048576));
    v.push_back(ranged(make("runtime", "batch_size", K::INT, &Settings::runtime, &RuntimeSettings::batch_size), 1, 4096));
    v.push_back(one_of(make("runtime", "dtype", K::ENUM, &Settings::runtime, &RuntimeSettings::dtype),
                       {"float16", "bfloat16", "float32"}));
    v.push_back(one_of(make("runtime", "log_level", K::ENUM, &Settings::runtime, &RuntimeSettings::log_level),
                       {"trace", "debug", "info", "warn", "error", "off"}));
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
        std::ifstream in(path, std::ios::binary);
        if (!in) {
            diag.error(fmt::format("{}: cannot open file", path));
        } else {
            std::stringstream ss;
            ss << in.rdbuf();
            nlohmann::json doc;
            try {
                doc = nlohmann::json::parse(ss.str());
                apply_json(doc, path, fields, s, diag);
            } catch (const nlohmann::json::parse_error& e) {
                diag.error(fmt::format("{}: JSON parse error at byte {}: {}", path, e.byte,
                                       std::string(e.what()).substr(std::string(e.what()).find("parse error"))));
            }
        }
    }
    const Settings before_env = s;
    apply_env(env, fields, s, diag);
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

std::string api_key(const ApiSettings& api, const EnvMap& env) {
    auto it = env.find(api.api_key_env);
    if (it != env.end()) return it->second;
    const char* v = std::getenv(api.api_key_env.c_str());
    return v ? v : "";
}

}  // namespace duet::config
