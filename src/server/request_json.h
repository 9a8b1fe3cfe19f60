#pragma once
// Helpers of the request parsers (completion_request*.cpp): typed reads of an ordered_json
// body that throw ApiError 400 naming the parameter. Internal to duet_server.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>

#include "server/api_error.h"

namespace duet::server::detail {

using json = nlohmann::ordered_json;

inline const char* json_type(const json& v) {
    switch (v.type()) {
        case json::value_t::null: return "null";
        case json::value_t::boolean: return "boolean";
        case json::value_t::string: return "string";
        case json::value_t::array: return "array";
        case json::value_t::object: return "object";
        default: return "number";
    }
}

[[noreturn]] inline void wrong_type(const std::string& param, const json& v, const char* expected) {
    throw ApiError::bad_request(fmt::format("'{}' must be {}, got {}", param, expected, json_type(v)), param);
}

// body[key] when present and not null, else nullptr.
inline const json* field(const json& body, const std::string& key) {
    auto it = body.find(key);
    return it == body.end() || it->is_null() ? nullptr : &*it;
}

inline std::string string_in(const json& body, const std::string& key, const std::string& param) {
    const json* v = field(body, key);
    if (!v) return "";
    if (!v->is_string()) wrong_type(param, *v, "a string");
    return v->get<std::string>();
}

}  // namespace duet::server::detail
