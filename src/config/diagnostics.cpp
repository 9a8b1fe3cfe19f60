#include "config/diagnostics.h"

#include <cstring>

#include "config/env.h"
#include "config/loader.h"
#include "core/error.h"
#include "core/json_budget.h"
#include "core/log.h"

extern char** environ;

namespace duet::config {

void Diagnostics::error(std::string msg) {
    if (!collect_all_) throw Error(msg);
    errors_.push_back(std::move(msg));
}

void Diagnostics::warn(std::string msg) {
    if (!collect_all_) DUET_LOG_WARN("{}", msg);
    warnings_.push_back(std::move(msg));
}

EnvMap process_env() {
    EnvMap env;
    for (char** e = environ; e && *e; ++e) {
        if (std::strncmp(*e, "DUET_", 5) != 0) continue;
        const char* eq = std::strchr(*e, '=');
        if (!eq) continue;
        env.emplace(std::string(static_cast<const char*>(*e), eq), std::string(eq + 1));
    }
    return env;
}

const char* json_type_name(const nlohmann::json& j) {
    if (j.is_number_integer()) return "integer";
    if (j.is_number()) return "number";
    if (j.is_boolean()) return "boolean";
    if (j.is_string()) return "string";
    if (j.is_object()) return "object";
    if (j.is_array()) return "array";
    return "null";
}

nlohmann::json parse_json_checked(const std::string& text, const std::string& file, Diagnostics& diag) {
    // Depth and keys per object before the parser (core/json_budget.h); the duplicate-key
    // frames below then stay as shallow.
    if (const std::string e = json_budget_error(text, {}, file); !e.empty()) {
        diag.error(e);
        return nlohmann::json(nlohmann::json::value_t::discarded);
    }
    struct Frame {
        std::set<std::string> seen;
        std::string key;  // the key being parsed in this object
    };
    std::vector<Frame> stack;
    std::vector<std::string> dups;
    auto cb = [&](int, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
        using E = nlohmann::json::parse_event_t;
        if (ev == E::object_start) stack.push_back({});
        else if (ev == E::object_end && !stack.empty()) stack.pop_back();
        else if (ev == E::key && !stack.empty()) {
            const std::string k = parsed.get<std::string>();
            stack.back().key = k;
            if (!stack.back().seen.insert(k).second) {
                std::string dotted;
                for (const auto& f : stack) dotted += (dotted.empty() ? "" : ".") + f.key;
                dups.push_back(dotted);
            }
        }
        return true;
    };
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(text, cb);
    } catch (const nlohmann::json::parse_error& e) {
        const std::string what = e.what();
        diag.error(fmt::format("{}: JSON parse error at byte {}: {}", file, e.byte, what.substr(what.find("parse error"))));
        return nlohmann::json(nlohmann::json::value_t::discarded);
    } catch (const nlohmann::json::out_of_range& e) {  // a number past double's range (1e400)
        const std::string what = e.what();
        const size_t at = what.find("number overflow");
        diag.error(fmt::format("{}: JSON number out of range: {} (allowed: numbers within +-1.8e308)", file,
                               at == std::string::npos ? what : what.substr(at)));
        return nlohmann::json(nlohmann::json::value_t::discarded);
    }
    for (const auto& d : dups)
        diag.error(fmt::format("{}: key '{}' appears more than once (allowed: once; JSON readers keep only one of them)",
                               file, d));
    return doc;
}

}  // namespace duet::config
