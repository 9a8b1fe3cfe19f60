#include "config/diagnostics.h"

#include <cstring>

#include "config/env.h"
#include "config/loader.h"
#include "core/error.h"

extern char** environ;

namespace duet::config {

void Diagnostics::error(std::string msg) {
    if (!collect_all_) throw Error(msg);
    errors_.push_back(std::move(msg));
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

}  // namespace duet::config
