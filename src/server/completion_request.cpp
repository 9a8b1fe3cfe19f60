#include "server/completion_request.h"

#include <fmt/format.h>

#include "server/api_error.h"

namespace duet::server {
namespace {

using nlohmann::json;

const char* json_type(const json& v) {
    switch (v.type()) {
        case json::value_t::null: return "null";
        case json::value_t::boolean: return "boolean";
        case json::value_t::string: return "string";
        case json::value_t::array: return "array";
        case json::value_t::object: return "object";
        default: return "number";
    }
}

[[noreturn]] void wrong_type(const std::string& param, const json& v, const char* expected) {
    throw ApiError::bad_request(fmt::format("'{}' must be {}, got {}", param, expected, json_type(v)), param);
}

double number_in(const json& body, const std::string& param, double fallback, double min, double max) {
    auto it = body.find(param);
    if (it == body.end() || it->is_null()) return fallback;
    if (!it->is_number()) wrong_type(param, *it, "a number");
    const double v = it->get<double>();
    if (!(v >= min && v <= max))
        throw ApiError::bad_request(fmt::format("'{}' = {} is out of range (allowed: {} to {})", param, v, min, max),
                                    param);
    return v;
}

bool bool_in(const json& body, const std::string& param, bool fallback) {
    auto it = body.find(param);
    if (it == body.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) wrong_type(param, *it, "a boolean");
    return it->get<bool>();
}

std::string content_text(const json& content, const std::string& param) {
    if (content.is_string()) return content.get<std::string>();
    if (content.is_null()) return "";
    if (!content.is_array()) wrong_type(param, content, "a string or an array of text parts");
    std::string text;  // OpenAI's content parts: [{"type": "text", "text": "..."}]
    for (size_t i = 0; i < content.size(); ++i) {
        const json& part = content[i];
        const std::string p = fmt::format("{}[{}]", param, i);
        // (json::value("type", "") would throw a type_error, a 500, for a non-string "type")
        if (!part.is_object() || !part.contains("type") || part["type"] != "text" || !part.contains("text") ||
            !part["text"].is_string())
            throw ApiError::bad_request(fmt::format("'{}' must be a text part {{\"type\": \"text\", \"text\": ...}}", p), p);
        text += part["text"].get<std::string>();
    }
    return text;
}

}  // namespace

CompletionRequest parse_completion_request(const std::string& body_text, bool chat) {
    json body = json::parse(body_text, nullptr, false);
    if (body.is_discarded()) throw ApiError::bad_request("request body is not valid JSON");
    if (!body.is_object()) throw ApiError::bad_request("request body must be a JSON object");

    CompletionRequest r;
    r.chat = chat;
    if (auto it = body.find("model"); it != body.end() && !it->is_null()) {
        if (!it->is_string()) wrong_type("model", *it, "a string");
        r.model = it->get<std::string>();
    }
    if (chat) {
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
            if (rs != "system" && rs != "user" && rs != "assistant" && rs != "developer")
                throw ApiError::bad_request(
                    fmt::format("'{}.role' = \"{}\" is not allowed (allowed: system, developer, user, assistant)", p, rs),
                    p + ".role");
            auto content = m.find("content");
            r.messages.push_back({rs == "developer" ? "system" : rs,
                                  content == m.end() ? "" : content_text(*content, p + ".content")});
        }
    } else {
        auto it = body.find("prompt");
        if (it == body.end()) throw ApiError::bad_request("'prompt' is required", "prompt");
        if (it->is_string()) {
            r.prompt = it->get<std::string>();
        } else if (it->is_array() && it->size() == 1 && (*it)[0].is_string()) {
            r.prompt = (*it)[0].get<std::string>();
        } else {
            throw ApiError::bad_request("'prompt' must be a string (or an array of one string)", "prompt");
        }
    }

    // max_completion_tokens is the newer name of max_tokens in the chat API.
    for (const char* name : {"max_tokens", "max_completion_tokens"}) {
        auto it = body.find(name);
        if (it == body.end() || it->is_null()) continue;
        if (!it->is_number_integer()) wrong_type(name, *it, "an integer");
        const int64_t v = it->get<int64_t>();
        if (v < 1) throw ApiError::bad_request(fmt::format("'{}' = {} must be at least 1", name, v), name);
        r.max_tokens = v;
    }
    r.temperature = float(number_in(body, "temperature", 1.0, 0.0, 2.0));
    r.top_p = float(number_in(body, "top_p", 1.0, 0.0, 1.0));
    r.presence_penalty = float(number_in(body, "presence_penalty", 0.0, -2.0, 2.0));
    r.frequency_penalty = float(number_in(body, "frequency_penalty", 0.0, -2.0, 2.0));
    if (auto it = body.find("seed"); it != body.end() && !it->is_null()) {
        if (!it->is_number_integer()) wrong_type("seed", *it, "an integer");
        r.seed = it->is_number_unsigned() ? it->get<uint64_t>() : uint64_t(it->get<int64_t>());
    }
    if (auto it = body.find("n"); it != body.end() && !it->is_null()) {
        if (!it->is_number_integer()) wrong_type("n", *it, "an integer");
        if (it->get<int64_t>() != 1)
            throw ApiError::bad_request(fmt::format("'n' = {} is not supported (allowed: 1)", it->get<int64_t>()), "n");
    }
    for (const char* name : {"logprobs", "top_logprobs", "tools", "functions"}) {
        auto it = body.find(name);
        if (it != body.end() && !it->is_null() && !(it->is_boolean() && !it->get<bool>()) &&
            !(it->is_array() && it->empty()))
            throw ApiError::bad_request(fmt::format("'{}' is not supported by duet", name), name);
    }
    if (auto it = body.find("stop"); it != body.end() && !it->is_null()) {
        if (it->is_string()) {
            r.stop.push_back(it->get<std::string>());
        } else if (it->is_array()) {
            if (it->size() > 4)
                throw ApiError::bad_request(fmt::format("'stop' has {} sequences (allowed: at most 4)", it->size()),
                                            "stop");
            for (const auto& s : *it) {
                if (!s.is_string()) wrong_type("stop", s, "a string or an array of strings");
                r.stop.push_back(s.get<std::string>());
            }
        } else {
            wrong_type("stop", *it, "a string or an array of strings");
        }
        for (const auto& s : r.stop)
            if (s.empty()) throw ApiError::bad_request("'stop' sequences must not be empty", "stop");
    }
    r.stream = bool_in(body, "stream", false);
    r.ignore_eos = bool_in(body, "ignore_eos", false);
    if (auto it = body.find("stream_options"); it != body.end() && !it->is_null()) {
        if (!it->is_object()) wrong_type("stream_options", *it, "an object");
        if (!r.stream)
            throw ApiError::bad_request("'stream_options' is only allowed when 'stream' is true", "stream_options");
        if (auto u = it->find("include_usage"); u != it->end() && !u->is_null()) {
            if (!u->is_boolean()) wrong_type("stream_options.include_usage", *u, "a boolean");
            r.include_usage = u->get<bool>();
        }
    }
    return r;
}

}  // namespace duet::server
