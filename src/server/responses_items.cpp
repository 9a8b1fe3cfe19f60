// The items of a Responses conversation: `input` (a string or a list of items) validated and
// normalised to the shapes the store keeps, and turned into chat messages for the template.
#include <fmt/format.h>

#include <set>

#include "server/api_error.h"
#include "server/request_json.h"
#include "server/responses_request.h"

namespace duet::server {
namespace {

using detail::json;
using detail::wrong_type;

std::string required_string(const json& o, const char* key, const std::string& p) {
    const json* v = detail::field(o, key);
    if (!v) throw ApiError::bad_request(fmt::format("'{}.{}' is required", p, key), p + "." + key);
    if (!v->is_string()) wrong_type(p + "." + key, *v, "a string");
    return v->get<std::string>();
}

// The text of a content: a string, or a list of parts whose type is one of `allowed`.
std::string parts_text(const json& content, const std::string& p, const std::set<std::string>& allowed) {
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) wrong_type(p, content, "a string or an array of content parts");
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    std::string text;
    for (size_t i = 0; i < content.size(); ++i) {
        const json& part = content[i];
        const std::string q = fmt::format("{}[{}]", p, i);
        if (!part.is_object()) wrong_type(q, part, "an object");
        const std::string type = detail::string_in(part, "type", q + ".type");
        if (!allowed.count(type))
            throw ApiError::bad_request(
                fmt::format("'{}.type' = \"{}\" is not supported by duet (allowed: {})", q, type, list), q + ".type");
        text += required_string(part, "text", q);
    }
    return text;
}

json normalise_message(const json& it, const std::string& p) {
    const std::string role = required_string(it, "role", p);
    if (role != "user" && role != "assistant" && role != "system" && role != "developer")
        throw ApiError::bad_request(
            fmt::format("'{}.role' = \"{}\" is not allowed (allowed: user, assistant, system, developer)", p, role),
            p + ".role");
    const json* content = detail::field(it, "content");
    if (!content) throw ApiError::bad_request(fmt::format("'{}.content' is required", p), p + ".content");
    // An assistant message is usually an output item sent back (output_text parts).
    const bool assistant = role == "assistant";
    const std::string text = parts_text(
        *content, p + ".content",
        assistant ? std::set<std::string>{"output_text", "input_text"} : std::set<std::string>{"input_text"});
    return {{"type", "message"},
            {"role", role},
            {"content", json::array({{{"type", assistant ? "output_text" : "input_text"}, {"text", text}}})}};
}

json normalise_item(const json& it, const std::string& p) {
    if (!it.is_object()) wrong_type(p, it, "an object");
    const std::string type = detail::field(it, "type") ? detail::string_in(it, "type", p + ".type") : "message";
    if (type == "message") return normalise_message(it, p);
    if (type == "function_call")
        return {{"type", "function_call"},
                {"call_id", required_string(it, "call_id", p)},
                {"name", required_string(it, "name", p)},
                {"arguments", required_string(it, "arguments", p)}};
    if (type == "function_call_output") {
        const json* out = detail::field(it, "output");
        if (!out) throw ApiError::bad_request(fmt::format("'{}.output' is required", p), p + ".output");
        return {{"type", "function_call_output"},
                {"call_id", required_string(it, "call_id", p)},
                {"output", parts_text(*out, p + ".output", {"input_text"})}};
    }
    throw ApiError::bad_request(fmt::format("'{}.type' = \"{}\" is not supported by duet (allowed: message, "
                                            "function_call, function_call_output)",
                                            p, type),
                                p + ".type");
}

}  // namespace

json normalise_items(const json& items, const std::string& param) {
    if (!items.is_array()) wrong_type(param, items, "an array of items");
    json out = json::array();
    for (size_t i = 0; i < items.size(); ++i) out.push_back(normalise_item(items[i], fmt::format("{}[{}]", param, i)));
    return out;
}

void parse_responses_input(const json& body, ResponsesRequest& r) {
    const json* in = detail::field(body, "input");
    if (!in) return;
    if (in->is_string()) {
        r.input_items = json::array({{{"type", "message"},
                                      {"role", "user"},
                                      {"content", json::array({{{"type", "input_text"}, {"text", *in}}})}}});
        return;
    }
    if (!in->is_array()) wrong_type("input", *in, "a string or an array of items");
    r.input_items = normalise_items(*in, "input");
}

std::vector<Message> items_to_messages(const json& items, const std::string* instructions, const std::string& param,
                                       size_t first_index) {
    std::vector<Message> msgs;
    if (instructions) msgs.push_back({"system", *instructions, {}, ""});
    std::set<std::string> calls;  // call_ids made so far
    for (size_t i = 0; i < items.size(); ++i) {
        const json& it = items[i];
        const std::string type = it.at("type").get<std::string>();
        if (type == "message") {
            const std::string role = it.at("role").get<std::string>();
            msgs.push_back(
                {role == "developer" ? "system" : role, it.at("content").at(0).at("text").get<std::string>(), {}, ""});
        } else if (type == "function_call") {
            // Calls join the assistant turn right before them (its text, or earlier calls).
            if (msgs.empty() || msgs.back().role != "assistant") msgs.push_back({"assistant", "", {}, ""});
            const std::string id = it.at("call_id").get<std::string>();
            msgs.back().tool_calls.push_back(
                {id, it.at("name").get<std::string>(), it.at("arguments").get<std::string>()});
            calls.insert(id);
        } else {  // function_call_output
            const std::string id = it.at("call_id").get<std::string>();
            if (!calls.count(id)) {
                const std::string p = fmt::format("{}[{}].call_id", param, i - first_index);
                throw ApiError::bad_request(
                    fmt::format("'{}' = \"{}\" answers no function_call of the conversation", p, id), p);
            }
            msgs.push_back({"tool", it.at("output").get<std::string>(), {}, id});
        }
    }
    return msgs;
}

}  // namespace duet::server
