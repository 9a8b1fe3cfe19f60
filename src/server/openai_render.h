#pragma once
// OpenAI response shapes duet writes (docs/server.md): logprobs of a token (computed from the
// logits it was sampled from, the log-softmax `duet logits` gives), the chat and legacy
// completions logprobs objects, tool_calls arrays and usage.
//
// Thread safety: free functions; token_logprob may run on the batcher's engine thread.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/chat_tools.h"
#include "runtime/batcher.h"

namespace duet::model {
class Tokenizer;
}

namespace duet::server {

struct TokenLogprob {
    std::string piece;  // the token's bytes (may be part of a UTF-8 character)
    double logprob = 0; // natural log of its probability under the model's logits (<= 0)
    std::vector<std::pair<std::string, double>> top;  // the most likely tokens, best first
};

// log_softmax(logits)[token] and the top_n most likely tokens (ties: lower id first).
TokenLogprob token_logprob(const model::Tokenizer& tok, int32_t token, const float* logits, int64_t n_vocab,
                           int top_n);

// Chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}], "refusal": null}.
nlohmann::json chat_logprobs_json(const std::vector<TokenLogprob>& lps);
// Completions: {"tokens", "token_logprobs", "top_logprobs": [{token: logprob}], "text_offset"}.
nlohmann::json completion_logprobs_json(const std::vector<TokenLogprob>& lps, size_t first_offset);

// [{"index", "id", "type": "function", "function": {"name", "arguments"}}]
nlohmann::json tool_calls_json(const std::vector<model::ChatToolCall>& calls);

// usage of the choices of one request: the prompt counts once, completion tokens add up.
nlohmann::json usage_json(const std::vector<runtime::GenResult>& results);

// JSON text; bytes that are not UTF-8 become U+FFFD instead of failing the response.
std::string dump_json(const nlohmann::json& j);

// Random lower-case hex of n characters (response and tool call ids).
std::string random_hex(int n);

}  // namespace duet::server
