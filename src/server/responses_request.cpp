#include "server/responses_request.h"

#include <fmt/format.h>

#include "core/json_budget.h"
#include "server/api_error.h"
#include "server/request_json.h"

namespace duet::server {

// responses_items.cpp: the `input` items.
void parse_responses_input(const detail::json& body, ResponsesRequest& r);

namespace {

using detail::json;
using detail::bool_in;
using detail::is_empty;
using detail::is_false;
using detail::number_in;
using detail::wrong_type;

// The one list of refused fields, with the value each may have without changing the output
// (null counts as absent everywhere).
bool is_zero(const json& v) { return v.is_number_integer() && v.get<int64_t>() == 0; }
bool is_disabled(const json& v) { return v == "disabled"; }
bool never(const json&) { return false; }
// {"effort": null, "summary": null} and the like: a reasoning model's knobs, all unset.
bool all_null(const json& v) {
    if (!v.is_object()) return false;
    for (const auto& [k, x] : v.items())
        if (!x.is_null()) return false;
    return true;
}
const detail::RefusedField kRefused[] = {
    {"background", is_false},  {"conversation", never},   {"include", is_empty},
    {"prompt", never},         {"reasoning", all_null},   {"truncation", is_disabled},
    {"top_logprobs", is_zero}, {"max_tool_calls", never}, {"context_management", is_empty},
};

std::optional<std::string> optional_string(const json& body, const std::string& key) {
    if (!detail::field(body, key)) return std::nullopt;
    return detail::string_in(body, key, key);
}

bool valid_name(const std::string& n) {
    if (n.empty() || n.size() > 64) return false;
    for (char c : n)
        if (!std::isalnum(uint8_t(c)) && c != '_' && c != '-') return false;
    return true;
}

// Flat function tools: {"type": "function", "name", "description", "parameters", "strict"}.
void parse_tools(const json& body, ResponsesRequest& r) {
    const json* tools = detail::field(body, "tools");
    if (!tools) return;
    if (!tools->is_array()) wrong_type("tools", *tools, "an array");
    for (size_t i = 0; i < tools->size(); ++i) {
        const json& t = (*tools)[i];
        const std::string p = fmt::format("tools[{}]", i);
        if (!t.is_object()) wrong_type(p, t, "an object");
        const std::string type = detail::string_in(t, "type", p + ".type");
        if (type != "function")
            throw ApiError::bad_request(
                fmt::format("'{}.type' = \"{}\" is not supported by duet (allowed: function)", p, type), p + ".type");
        model::ToolFunction f;
        f.name = detail::string_in(t, "name", p + ".name");
        if (!valid_name(f.name))
            throw ApiError::bad_request(
                fmt::format("'{}.name' = \"{}\" is not allowed (allowed: 1 to 64 of a-z, A-Z, 0-9, _ and -)", p,
                            f.name),
                p + ".name");
        for (const auto& other : r.tools)
            if (other.name == f.name)
                throw ApiError::bad_request(fmt::format("'{}.name' = \"{}\" is given twice", p, f.name), p + ".name");
        f.description = detail::string_in(t, "description", p + ".description");
        if (const json* params = detail::field(t, "parameters")) {
            if (!params->is_object()) wrong_type(p + ".parameters", *params, "an object (a JSON Schema)");
            f.parameters = *params;
        }
        r.tools_strict.push_back(bool_in(t, "strict", true));
        r.tools.push_back(std::move(f));
    }
}

// "none" | "auto" | "required" | {"type": "function", "name": ...}
void parse_tool_choice(const json& body, ResponsesRequest& r) {
    r.tool_choice = r.tools.empty() ? ToolChoice::NONE : ToolChoice::AUTO;
    const json* c = detail::field(body, "tool_choice");
    if (!c) return;
    static const char* kAllowed = "none, auto, required, or {\"type\": \"function\", \"name\": ...}";
    if (c->is_string()) {
        const std::string s = c->get<std::string>();
        if (s == "none")
            r.tool_choice = ToolChoice::NONE;
        else if (s == "auto")
            r.tool_choice = ToolChoice::AUTO;
        else if (s == "required")
            r.tool_choice = ToolChoice::REQUIRED;
        else
            throw ApiError::bad_request(fmt::format("'tool_choice' = \"{}\" is not allowed (allowed: {})", s, kAllowed),
                                        "tool_choice");
    } else if (c->is_object()) {
        const std::string type = detail::string_in(*c, "type", "tool_choice.type");
        if (type != "function")
            throw ApiError::bad_request(
                fmt::format("'tool_choice.type' = \"{}\" is not supported by duet (allowed: {})", type, kAllowed),
                "tool_choice.type");
        r.tool_choice = ToolChoice::FUNCTION;
        r.tool_choice_name = detail::string_in(*c, "name", "tool_choice.name");
    } else {
        wrong_type("tool_choice", *c, "a string or an object");
    }
    check_tool_choice(r.tool_choice, r.tool_choice_name, r.tools, "tool_choice.name");
}

// text: {"format": {"type": "text" | "json_object" | "json_schema", ...}, "verbosity": "medium"}
void parse_text(const json& body, ResponsesRequest& r) {
    r.format_json = json{{"type", "text"}};
    const json* t = detail::field(body, "text");
    if (!t) return;
    if (!t->is_object()) wrong_type("text", *t, "an object");
    if (const json* v = detail::field(*t, "verbosity"); v && *v != "medium")
        throw ApiError::bad_request("'text.verbosity' is not supported by duet (allowed: medium)", "text.verbosity");
    const json* f = detail::field(*t, "format");
    if (!f) return;
    if (!f->is_object()) wrong_type("text.format", *f, "an object");
    const std::string type = detail::string_in(*f, "type", "text.format.type");
    if (type == "json_object") {
        r.format = ResponseFormat::JSON_OBJECT;
    } else if (type == "json_schema") {
        const std::string name = detail::string_in(*f, "name", "text.format.name");
        if (!valid_name(name))
            throw ApiError::bad_request(
                fmt::format("'text.format.name' = \"{}\" is not allowed (allowed: 1 to 64 of a-z, A-Z, 0-9, _ and -)",
                            name),
                "text.format.name");
        const json* schema = detail::field(*f, "schema");
        if (!schema || !schema->is_object())
            throw ApiError::bad_request("'text.format.schema' is required and must be an object", "text.format.schema");
        detail::string_in(*f, "description", "text.format.description");
        bool_in(*f, "strict", false);
        r.format = ResponseFormat::JSON_SCHEMA;
        r.json_schema = *schema;
    } else if (type != "text") {
        throw ApiError::bad_request(
            fmt::format("'text.format.type' = \"{}\" is not allowed (allowed: text, json_object, json_schema)", type),
            "text.format.type");
    }
    r.format_json = *f;
    if (r.format != ResponseFormat::TEXT && r.tool_choice != ToolChoice::NONE)
        throw ApiError::bad_request("'text.format' cannot be combined with 'tools' unless 'tool_choice' is \"none\"",
                                    "text.format");
}

// OpenAI's limits: 16 pairs, keys up to 64 characters, values up to 512.
void parse_metadata(const json& body, ResponsesRequest& r) {
    const json* m = detail::field(body, "metadata");
    if (!m) return;
    if (!m->is_object()) wrong_type("metadata", *m, "an object of strings");
    if (m->size() > 16)
        throw ApiError::bad_request(fmt::format("'metadata' has {} keys (allowed: at most 16)", m->size()), "metadata");
    for (const auto& [k, v] : m->items()) {
        const std::string p = "metadata." + k;
        if (!v.is_string()) wrong_type(p, v, "a string");
        if (k.size() > 64 || v.get_ref<const std::string&>().size() > 512)
            throw ApiError::bad_request(
                fmt::format("'{}' is too long (allowed: keys up to 64 characters, values up to 512)", p), p);
    }
    r.metadata = *m;
}

}  // namespace

const std::vector<std::string>& responses_refused_fields() {
    static const std::vector<std::string> names = detail::field_names(kRefused);
    return names;
}

ResponsesRequest parse_responses_request(const std::string& body_text) {
    // Depth and keys per object are checked on the text, before the parser (core/json_budget.h).
    if (const std::string e = json_budget_error(body_text, {}, "request body"); !e.empty()) throw ApiError::bad_request(e);
    json body = json::parse(body_text, nullptr, false);
    if (body.is_discarded()) throw ApiError::bad_request("request body is not valid JSON");
    if (!body.is_object()) throw ApiError::bad_request("request body must be a JSON object");
    detail::refuse_unsupported(body, kRefused);

    ResponsesRequest r;
    r.model = detail::string_in(body, "model", "model");
    parse_responses_input(body, r);
    if (detail::field(body, "instructions")) {
        r.instructions = detail::string_in(body, "instructions", "instructions");
        r.has_instructions = true;
    }
    r.previous_response_id = detail::string_in(body, "previous_response_id", "previous_response_id");
    if (r.input_items.empty() && r.previous_response_id.empty() && !r.has_instructions)
        throw ApiError::bad_request("'input' is required", "input");
    if (const json* v = detail::field(body, "max_output_tokens")) {
        if (!v->is_number_integer()) wrong_type("max_output_tokens", *v, "an integer");
        if (v->get<int64_t>() < 1)
            throw ApiError::bad_request(fmt::format("'max_output_tokens' = {} must be at least 1", v->get<int64_t>()),
                                        "max_output_tokens");
        r.max_output_tokens = v->get<int64_t>();
    }
    r.temperature = float(number_in(body, "temperature", 1.0, 0.0, 2.0));
    r.top_p = float(number_in(body, "top_p", 1.0, 0.0, 1.0));
    if (const json* v = detail::field(body, "seed")) {
        if (!v->is_number_integer()) wrong_type("seed", *v, "an integer");
        r.seed = v->is_number_unsigned() ? v->get<uint64_t>() : uint64_t(v->get<int64_t>());
    }
    r.stream = bool_in(body, "stream", false);
    if (const json* so = detail::field(body, "stream_options")) {
        if (!so->is_object()) wrong_type("stream_options", *so, "an object");
        if (!r.stream)
            throw ApiError::bad_request("'stream_options' is only allowed when 'stream' is true", "stream_options");
        bool_in(*so, "include_obfuscation", false);  // duet never adds obfuscation padding
    }
    r.store = bool_in(body, "store", true);
    r.parallel_tool_calls = bool_in(body, "parallel_tool_calls", true);
    parse_tools(body, r);
    parse_tool_choice(body, r);
    parse_text(body, r);
    parse_metadata(body, r);
    r.user = optional_string(body, "user");
    r.safety_identifier = optional_string(body, "safety_identifier");
    r.prompt_cache_key = optional_string(body, "prompt_cache_key");
    r.service_tier = optional_string(body, "service_tier");
    if (detail::field(body, "prompt_cache_retention"))
        detail::string_in(body, "prompt_cache_retention", "prompt_cache_retention");
    return r;
}

}  // namespace duet::server
