#pragma once
// The parameters of POST /v1/responses (OpenAI's Responses API), parsed and validated. As for
// the Chat Completions route (completion_request.h), every invalid parameter is an ApiError 400
// naming it, and a parameter duet does not implement is refused when it would change the
// output (responses_refused_fields()), never silently ignored. docs/server.md lists every field.
//
// The conversation is kept as Responses *items* (input messages, output messages,
// function_call, function_call_output), the shapes a client sends and the store keeps;
// items_to_messages() turns a list of them into the chat messages the templates render.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/chat_tools.h"
#include "server/completion_request.h"

namespace duet::server {

struct ResponsesRequest {
    std::string model;
    nlohmann::ordered_json input_items = nlohmann::ordered_json::array();  // normalised items of `input`
    std::string instructions;  // a system message before the items ("" : none)
    bool has_instructions = false;
    std::string previous_response_id;        // "" : a new conversation
    int64_t max_output_tokens = -1;          // -1: until EOS or the context is full
    float temperature = 1.0f, top_p = 1.0f;  // OpenAI's defaults
    std::optional<uint64_t> seed;            // extension (the chat route's seed): reproducible sampling
    bool stream = false;
    bool store = true;
    bool parallel_tool_calls = true;  // false: at most one function call in the output
    std::vector<model::ToolFunction> tools;
    std::vector<bool> tools_strict;             // echoed per tool
    ToolChoice tool_choice = ToolChoice::NONE;  // AUTO by default when tools are given
    std::string tool_choice_name;               // FUNCTION
    ResponseFormat format = ResponseFormat::TEXT;
    nlohmann::ordered_json format_json;  // text.format as given (echoed), {"type": "text"} by default
    nlohmann::ordered_json json_schema;  // JSON_SCHEMA: text.format.schema
    nlohmann::ordered_json metadata = nlohmann::ordered_json::object();  // echoed, at most 16 string pairs
    // Accepted, echoed, no effect on the output.
    std::optional<std::string> user, safety_identifier, prompt_cache_key, service_tier;
};

// `body` is the raw request body.
ResponsesRequest parse_responses_request(const std::string& body);

// Request fields that would change the output and that duet does not implement.
const std::vector<std::string>& responses_refused_fields();

// Validates and normalises a list of items (the `input` array, or a stored conversation):
// messages get {"type": "message", "role", "content": [parts]}; `param` names the list in errors.
nlohmann::ordered_json normalise_items(const nlohmann::ordered_json& items, const std::string& param);

// The chat messages of normalised items, after an optional system message (instructions).
// function_call items become the tool_calls of an assistant message (merged with the
// assistant text right before them), function_call_output items become tool messages.
// Throws ApiError 400 (naming `param`[i]) when an output answers a call_id no call made.
std::vector<Message> items_to_messages(const nlohmann::ordered_json& items, const std::string* instructions,
                                       const std::string& param, size_t first_index = 0);

}  // namespace duet::server
