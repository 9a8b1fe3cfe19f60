#pragma once
// The parameters of POST /v1/chat/completions and /v1/completions, parsed and validated.
// Every invalid parameter is an ApiError 400 naming it (OpenAI's `param` field) with the
// value and the allowed range. Parameters duet does not implement are rejected when they
// would change the output (n > 1, logprobs), not silently ignored.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace duet::server {

struct Message {
    std::string role;  // system, user, assistant
    std::string content;
};

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
};

// `body` is the raw request body; chat selects which endpoint's schema applies.
CompletionRequest parse_completion_request(const std::string& body, bool chat);

}  // namespace duet::server
