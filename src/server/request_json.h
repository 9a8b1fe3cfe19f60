#pragma once
// Helpers of the request parsers (completion_request*.cpp, responses_request.cpp): typed reads of an ordered_json
// body that throw ApiError 400 naming the parameter. Internal to duet_server.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

// A request field duet refuses, with the values it may carry without changing the output
// (null counts as absent): each route keeps one table of these.
struct RefusedField {
    const char* name;
    bool (*neutral)(const json&);
};
inline bool is_false(const json& v) { return v.is_boolean() && !v.get<bool>(); }
inline bool is_empty(const json& v) {
    return v.is_string() ? v.get_ref<const std::string&>().empty() : (v.is_array() || v.is_object()) && v.empty();
}

// Throws 400 "'<name>' is not supported by duet" for the first field of `refused` that the body
// sets to a value other than a neutral one.
template <size_t N>
void refuse_unsupported(const json& body, const RefusedField (&refused)[N]) {
    for (const RefusedField& f : refused) {
        const json* v = field(body, f.name);
        if (v && !f.neutral(*v)) throw ApiError::bad_request(fmt::format("'{}' is not supported by duet", f.name), f.name);
    }
}

// The names of a route's refused fields, in table order (for the docs test and error lists).
template <size_t N>
std::vector<std::string> field_names(const RefusedField (&refused)[N]) {
    std::vector<std::string> v;
    for (const RefusedField& f : refused) v.push_back(f.name);
    return v;
}

// body[param] as a number in [min, max], fallback when absent.
inline double number_in(const json& body, const std::string& param, double fallback, double min, double max) {
    const json* v = field(body, param);
    if (!v) return fallback;
    if (!v->is_number()) wrong_type(param, *v, "a number");
    const double x = v->get<double>();
    if (!(x >= min && x <= max))
        throw ApiError::bad_request(fmt::format("'{}' = {} is out of range (allowed: {} to {})", param, x, min, max),
                                    param);
    return x;
}

inline bool bool_in(const json& body, const std::string& param, bool fallback) {
    const json* v = field(body, param);
    if (!v) return fallback;
    if (!v->is_boolean()) wrong_type(param, *v, "a boolean");
    return v->get<bool>();
}

}  // namespace duet::server::detail
