#include "server/completion_request.h"

#include <fmt/format.h>

#include "core/json_budget.h"
#include "server/api_error.h"
#include "server/request_json.h"

namespace duet::server {

// completion_request_chat.cpp: messages, tools, tool_choice, response_format.
void parse_chat_fields(const detail::json& body, CompletionRequest& r);

namespace {

using detail::json;
using detail::bool_in;
using detail::is_empty;
using detail::is_false;
using detail::number_in;
using detail::wrong_type;

// The one list of refused fields, with the value each may have without changing the output.
bool is_one(const json& v) { return v.is_number_integer() && v.get<int64_t>() == 1; }
bool is_text_only(const json& v) { return v == json::array({"text"}); }
const detail::RefusedField kRefused[] = {
    {"logit_bias", is_empty},  {"best_of", is_one},    {"suffix", is_empty},       {"echo", is_false},
    {"functions", is_empty},   {"function_call", is_empty}, {"audio", is_empty},   {"modalities", is_text_only},
    {"prediction", is_empty},
};

int64_t integer_in(const json& body, const std::string& param, int64_t fallback, int64_t min, int64_t max) {
    const json* v = detail::field(body, param);
    if (!v) return fallback;
    if (!v->is_number_integer()) wrong_type(param, *v, "an integer");
    const int64_t x = v->get<int64_t>();
    if (x < min || x > max)
        throw ApiError::bad_request(fmt::format("'{}' = {} is out of range (allowed: {} to {})", param, x, min, max),
                                    param);
    return x;
}

void parse_prompt(const json& body, CompletionRequest& r) {
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

void parse_stop(const json& body, CompletionRequest& r) {
    const json* v = detail::field(body, "stop");
    if (!v) return;
    if (v->is_string()) {
        r.stop.push_back(v->get<std::string>());
    } else if (v->is_array()) {
        if (v->size() > 4)
            throw ApiError::bad_request(fmt::format("'stop' has {} sequences (allowed: at most 4)", v->size()), "stop");
        for (const auto& s : *v) {
            if (!s.is_string()) wrong_type("stop", s, "a string or an array of strings");
            r.stop.push_back(s.get<std::string>());
        }
    } else {
        wrong_type("stop", *v, "a string or an array of strings");
    }
    for (const auto& s : r.stop)
        if (s.empty()) throw ApiError::bad_request("'stop' sequences must not be empty", "stop");
}

// Chat: logprobs (boolean) + top_logprobs (0..20). Completions: logprobs = 0..5 alternatives.
void parse_logprobs(const json& body, CompletionRequest& r) {
    if (r.chat) {
        r.logprobs = bool_in(body, "logprobs", false);
        r.top_logprobs = int(integer_in(body, "top_logprobs", 0, 0, 20));
        if (r.top_logprobs > 0 && !r.logprobs)
            throw ApiError::bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
    } else if (const json* v = detail::field(body, "logprobs")) {
        if (v->is_boolean()) wrong_type("logprobs", *v, "an integer (0 to 5) on /v1/completions");
        r.top_logprobs = int(integer_in(body, "logprobs", 0, 0, 5));
        r.logprobs = true;
    }
}

void parse_stream(const json& body, CompletionRequest& r) {
    r.stream = bool_in(body, "stream", false);
    const json* so = detail::field(body, "stream_options");
    if (!so) return;
    if (!so->is_object()) wrong_type("stream_options", *so, "an object");
    if (!r.stream) throw ApiError::bad_request("'stream_options' is only allowed when 'stream' is true", "stream_options");
    if (const json* u = detail::field(*so, "include_usage")) {
        if (!u->is_boolean()) wrong_type("stream_options.include_usage", *u, "a boolean");
        r.include_usage = u->get<bool>();
    }
}

}  // namespace

const std::vector<std::string>& refused_fields() {
    static const std::vector<std::string> names = detail::field_names(kRefused);
    return names;
}

CompletionRequest parse_completion_request(const std::string& body_text, bool chat) {
    // Depth and keys per object are checked on the text, before the parser (core/json_budget.h).
    if (const std::string e = json_budget_error(body_text, {}, "request body"); !e.empty()) throw ApiError::bad_request(e);
    json body = json::parse(body_text, nullptr, false);
    if (body.is_discarded()) throw ApiError::bad_request("request body is not valid JSON");
    if (!body.is_object()) throw ApiError::bad_request("request body must be a JSON object");
    detail::refuse_unsupported(body, kRefused);

    CompletionRequest r;
    r.chat = chat;
    r.model = detail::string_in(body, "model", "model");
    if (chat)
        parse_chat_fields(body, r);
    else
        parse_prompt(body, r);

    // max_completion_tokens is the newer name of max_tokens in the chat API.
    for (const char* name : {"max_tokens", "max_completion_tokens"}) {
        const json* v = detail::field(body, name);
        if (!v) continue;
        if (!v->is_number_integer()) wrong_type(name, *v, "an integer");
        if (v->get<int64_t>() < 1)
            throw ApiError::bad_request(fmt::format("'{}' = {} must be at least 1", name, v->get<int64_t>()), name);
        r.max_tokens = v->get<int64_t>();
    }
    r.temperature = float(number_in(body, "temperature", 1.0, 0.0, 2.0));
    r.top_p = float(number_in(body, "top_p", 1.0, 0.0, 1.0));
    r.presence_penalty = float(number_in(body, "presence_penalty", 0.0, -2.0, 2.0));
    r.frequency_penalty = float(number_in(body, "frequency_penalty", 0.0, -2.0, 2.0));
    if (const json* v = detail::field(body, "seed")) {
        if (!v->is_number_integer()) wrong_type("seed", *v, "an integer");
        r.seed = v->is_number_unsigned() ? v->get<uint64_t>() : uint64_t(v->get<int64_t>());
    }
    r.n = int(integer_in(body, "n", 1, 1, 128));
    parse_logprobs(body, r);
    parse_stop(body, r);
    parse_stream(body, r);
    r.ignore_eos = bool_in(body, "ignore_eos", false);
    r.return_token_ids = bool_in(body, "return_token_ids", false);
    r.parse_special = bool_in(body, "parse_special", false);
    return r;
}

}  // namespace duet::server
