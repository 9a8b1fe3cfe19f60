// The chat-only fields of a completion request: messages (with tool calls and tool results),
// tools, tool_choice and response_format.
#include <fmt/format.h>

#include "core/json_budget.h"
#include "server/api_error.h"
#include "server/completion_request.h"
#include "server/request_json.h"

namespace duet::server {
namespace {

// o["type"] == want. (json::value("type", "") throws a type_error, a 500, for a non-string "type".)
bool has_type(const nlohmann::ordered_json& o, const char* want) {
    if (!o.is_object()) return false;
    const auto it = o.find("type");
    return it != o.end() && it->is_string() && it->get<std::string>() == want;
}


using detail::json;
using detail::wrong_type;

std::string content_text(const json& content, const std::string& param) {
    if (content.is_string()) return content.get<std::string>();
    if (content.is_null()) return "";
    if (!content.is_array()) wrong_type(param, content, "a string or an array of text parts");
    std::string text;  // OpenAI's content parts: [{"type": "text", "text": "..."}]
    for (size_t i = 0; i < content.size(); ++i) {
        const json& part = content[i];
        const std::string p = fmt::format("{}[{}]", param, i);
        if (!part.is_object() || !has_type(part, "text") || !part.contains("text") ||
            !part["text"].is_string())
            throw ApiError::bad_request(fmt::format("'{}' must be a text part {{\"type\": \"text\", \"text\": ...}}", p), p);
        text += part["text"].get<std::string>();
    }
    return text;
}

std::vector<model::ChatToolCall> tool_calls_of(const json& m, const std::string& p) {
    std::vector<model::ChatToolCall> calls;
    const json* tc = detail::field(m, "tool_calls");
    if (!tc) return calls;
    if (!tc->is_array()) wrong_type(p + ".tool_calls", *tc, "an array");
    for (size_t i = 0; i < tc->size(); ++i) {
        const json& c = (*tc)[i];
        const std::string q = fmt::format("{}.tool_calls[{}]", p, i);
        const json* fn = c.is_object() ? detail::field(c, "function") : nullptr;
        if (!fn || !fn->is_object())
            throw ApiError::bad_request(fmt::format("'{}.function' is required and must be an object", q), q + ".function");
        model::ChatToolCall call;
        call.id = detail::string_in(c, "id", q + ".id");
        call.name = detail::string_in(*fn, "name", q + ".function.name");
        call.arguments = detail::string_in(*fn, "arguments", q + ".function.arguments");
        if (const std::string e = json_budget_error(call.arguments, {}, "'" + q + ".function.arguments'"); !e.empty())
            throw ApiError::bad_request(e, q + ".function.arguments");
        if (call.name.empty())
            throw ApiError::bad_request(fmt::format("'{}.function.name' is required", q), q + ".function.name");
        calls.push_back(call);
    }
    return calls;
}

void parse_messages(const json& body, CompletionRequest& r) {
    auto it = body.find("messages");
    if (it == body.end()) throw ApiError::bad_request("'messages' is required", "messages");
    if (!it->is_array()) wrong_type("messages", *it, "an array");
    if (it->empty()) throw ApiError::bad_request("'messages' must not be empty", "messages");
    for (size_t i = 0; i < it->size(); ++i) {
        const json& m = (*it)[i];
        const std::string p = fmt::format("messages[{}]", i);
        if (!m.is_object()) wrong_type(p, m, "an object");
        auto role = m.find("role");
        if (role == m.end() || !role->is_string())
            throw ApiError::bad_request(fmt::format("'{}.role' is required and must be a string", p), p + ".role");
        const std::string rs = role->get<std::string>();
        if (rs != "system" && rs != "user" && rs != "assistant" && rs != "developer" && rs != "tool")
            throw ApiError::bad_request(
                fmt::format("'{}.role' = \"{}\" is not allowed (allowed: system, developer, user, assistant, tool)", p, rs),
                p + ".role");
        Message msg;
        msg.role = rs == "developer" ? "system" : rs;
        auto content = m.find("content");
        msg.content = content == m.end() ? "" : content_text(*content, p + ".content");
        if (rs == "assistant") msg.tool_calls = tool_calls_of(m, p);
        if (rs == "tool") msg.tool_call_id = detail::string_in(m, "tool_call_id", p + ".tool_call_id");
        r.messages.push_back(std::move(msg));
    }
}

bool valid_function_name(const std::string& n) {
    if (n.empty() || n.size() > 64) return false;
    for (char c : n)
        if (!std::isalnum(uint8_t(c)) && c != '_' && c != '-') return false;
    return true;
}

void parse_tools(const json& body, CompletionRequest& r) {
    const json* tools = detail::field(body, "tools");
    if (!tools) return;
    if (!tools->is_array()) wrong_type("tools", *tools, "an array");
    for (size_t i = 0; i < tools->size(); ++i) {
        const json& t = (*tools)[i];
        const std::string p = fmt::format("tools[{}]", i);
        if (!t.is_object() || !has_type(t, "function"))
            throw ApiError::bad_request(fmt::format("'{}.type' must be \"function\"", p), p + ".type");
        const json* fn = detail::field(t, "function");
        if (!fn || !fn->is_object())
            throw ApiError::bad_request(fmt::format("'{}.function' is required and must be an object", p), p + ".function");
        model::ToolFunction f;
        f.name = detail::string_in(*fn, "name", p + ".function.name");
        if (!valid_function_name(f.name))
            throw ApiError::bad_request(fmt::format("'{}.function.name' = \"{}\" is not allowed (allowed: 1 to 64 of "
                                                    "a-z, A-Z, 0-9, _ and -)",
                                                    p, f.name),
                                        p + ".function.name");
        for (const auto& other : r.tools)
            if (other.name == f.name)
                throw ApiError::bad_request(fmt::format("'{}.function.name' = \"{}\" is given twice", p, f.name),
                                            p + ".function.name");
        f.description = detail::string_in(*fn, "description", p + ".function.description");
        if (const json* params = detail::field(*fn, "parameters")) {
            if (!params->is_object()) wrong_type(p + ".function.parameters", *params, "an object (a JSON Schema)");
            f.parameters = *params;
        }
        r.tools.push_back(std::move(f));
    }
}

void parse_tool_choice(const json& body, CompletionRequest& r) {
    r.tool_choice = r.tools.empty() ? ToolChoice::NONE : ToolChoice::AUTO;
    const json* c = detail::field(body, "tool_choice");
    if (!c) return;
    if (c->is_string()) {
        const std::string s = c->get<std::string>();
        if (s == "none") r.tool_choice = ToolChoice::NONE;
        else if (s == "auto") r.tool_choice = ToolChoice::AUTO;
        else if (s == "required") r.tool_choice = ToolChoice::REQUIRED;
        else
            throw ApiError::bad_request(
                fmt::format("'tool_choice' = \"{}\" is not allowed (allowed: none, auto, required, or "
                            "{{\"type\": \"function\", \"function\": {{\"name\": ...}}}})",
                            s),
                "tool_choice");
    } else if (c->is_object()) {
        const json* fn = detail::field(*c, "function");
        if (!has_type(*c, "function") || !fn || !fn->is_object())
            throw ApiError::bad_request(
                "'tool_choice' must be none, auto, required, or {\"type\": \"function\", \"function\": {\"name\": ...}}",
                "tool_choice");
        r.tool_choice = ToolChoice::FUNCTION;
        r.tool_choice_name = detail::string_in(*fn, "name", "tool_choice.function.name");
    } else {
        wrong_type("tool_choice", *c, "a string or an object");
    }
    check_tool_choice(r.tool_choice, r.tool_choice_name, r.tools, "tool_choice.function.name");
}

void parse_response_format(const json& body, CompletionRequest& r) {
    const json* f = detail::field(body, "response_format");
    if (!f) return;
    if (!f->is_object()) wrong_type("response_format", *f, "an object");
    const std::string type = detail::string_in(*f, "type", "response_format.type");
    if (type == "text") return;
    if (type == "json_object") {
        r.response_format = ResponseFormat::JSON_OBJECT;
    } else if (type == "json_schema") {
        const json* js = detail::field(*f, "json_schema");
        if (!js || !js->is_object())
            throw ApiError::bad_request("'response_format.json_schema' is required and must be an object",
                                        "response_format.json_schema");
        const json* schema = detail::field(*js, "schema");
        if (!schema || !schema->is_object())
            throw ApiError::bad_request("'response_format.json_schema.schema' is required and must be an object",
                                        "response_format.json_schema.schema");
        r.response_format = ResponseFormat::JSON_SCHEMA;
        r.json_schema = *schema;
    } else {
        throw ApiError::bad_request(
            fmt::format("'response_format.type' = \"{}\" is not allowed (allowed: text, json_object, json_schema)", type),
            "response_format.type");
    }
    if (r.tool_choice != ToolChoice::NONE)
        throw ApiError::bad_request("'response_format' cannot be combined with 'tools' unless 'tool_choice' is \"none\"",
                                    "response_format");
}

}  // namespace

void parse_chat_fields(const json& body, CompletionRequest& r) {
    parse_messages(body, r);
    parse_tools(body, r);
    parse_tool_choice(body, r);
    parse_response_format(body, r);
}

void check_tool_choice(ToolChoice choice, const std::string& name, const std::vector<model::ToolFunction>& tools,
                       const char* name_param) {
    if (choice != ToolChoice::NONE && tools.empty())
        throw ApiError::bad_request("'tool_choice' needs 'tools'", "tool_choice");
    if (choice != ToolChoice::FUNCTION) return;
    for (const auto& t : tools)
        if (t.name == name) return;
    throw ApiError::bad_request(fmt::format("'{}' = \"{}\" is not one of the 'tools'", name_param, name), name_param);
}

}  // namespace duet::server
