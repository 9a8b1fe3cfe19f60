#pragma once
// The parameters of POST /v1/chat/completions and /v1/completions, parsed and validated.
// Every invalid parameter is an ApiError 400 naming it (OpenAI's `param` field) with the
// value and the allowed range. Parameters duet does not implement are refused when they
// would change the output (refused_fields()), never silently ignored; docs/server.md lists
// every field.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/chat_template.h"
#include "model/chat_tools.h"

namespace duet::server {

struct Message {
    std::string role;  // system, user, assistant, tool ("developer" is read as system)
    std::string content;
    std::vector<model::ChatToolCall> tool_calls;  // assistant
    std::string tool_call_id;                     // tool
};

enum class ToolChoice { NONE, AUTO, REQUIRED, FUNCTION };
enum class ResponseFormat { TEXT, JSON_OBJECT, JSON_SCHEMA };

// The tool_choice checks both routes share: a choice other than none needs tools, and a named
// function (its name read from `name_param`) must be one of them. Throws ApiError 400.
void check_tool_choice(ToolChoice choice, const std::string& name, const std::vector<model::ToolFunction>& tools,
                       const char* name_param);

struct CompletionRequest {
    bool chat = true;
    std::string model;
    std::vector<Message> messages;  // chat
    std::string prompt;             // completions
    int64_t max_tokens = -1;        // -1: until EOS or the context is full
    float temperature = 1.0f;       // OpenAI's default
    float top_p = 1.0f;
    float presence_penalty = 0, frequency_penalty = 0;
    std::optional<uint64_t> seed;
    std::vector<std::string> stop;  // at most 4
    bool stream = false;
    bool include_usage = false;     // stream_options.include_usage
    bool ignore_eos = false;        // extension (as in vLLM / llama.cpp): generate past end-of-generation
    int n = 1;                      // completions of the prompt (choices)
    bool logprobs = false;
    int top_logprobs = 0;           // 0..20 alternatives per token (completions: logprobs = 0..5)
    bool return_token_ids = false;  // extension (as in vLLM): token ids in the response
    // extension: control-token text inside messages / the prompt becomes control tokens
    // (default: only the chat template writes them; docs/server.md "Special tokens")
    bool parse_special = false;
    // chat only
    std::vector<model::ToolFunction> tools;
    ToolChoice tool_choice = ToolChoice::NONE;  // AUTO by default when tools are given
    std::string tool_choice_name;               // FUNCTION
    ResponseFormat response_format = ResponseFormat::TEXT;
    nlohmann::ordered_json json_schema;         // JSON_SCHEMA: response_format.json_schema.schema
};

// `body` is the raw request body; chat selects which endpoint's schema applies.
CompletionRequest parse_completion_request(const std::string& body, bool chat);

// Request fields that would change the output and that duet does not implement: a request
// that sets one (to anything but its neutral value) gets a 400 naming it.
const std::vector<std::string>& refused_fields();

}  // namespace duet::server
