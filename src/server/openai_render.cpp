#include "server/openai_render.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "model/tokenizer/tokenizer.h"

namespace duet::server {

using nlohmann::json;

TokenLogprob token_logprob(const model::Tokenizer& tok, int32_t token, const float* logits, int64_t n_vocab,
                           int top_n) {
    const float max = *std::max_element(logits, logits + n_vocab);
    double sum = 0;
    for (int64_t i = 0; i < n_vocab; ++i) sum += std::exp(double(logits[i]) - max);
    const double lse = double(max) + std::log(sum);
    TokenLogprob out;
    out.piece = tok.token_to_piece(token, false);
    out.logprob = std::min(0.0, double(logits[token]) - lse);
    if (top_n > 0) {
        std::vector<int32_t> ids(static_cast<size_t>(n_vocab));
        std::iota(ids.begin(), ids.end(), 0);
        const size_t k = std::min<size_t>(size_t(top_n), ids.size());
        std::partial_sort(ids.begin(), ids.begin() + long(k), ids.end(), [&](int32_t a, int32_t b) {
            return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
        });
        for (size_t i = 0; i < k; ++i)
            out.top.emplace_back(tok.token_to_piece(ids[i], false), std::min(0.0, double(logits[ids[i]]) - lse));
    }
    return out;
}

namespace {

json bytes_of(const std::string& s) {
    json b = json::array();
    for (char c : s) b.push_back(int(uint8_t(c)));
    return b;
}

}  // namespace

json chat_logprobs_json(const std::vector<TokenLogprob>& lps) {
    json content = json::array();
    for (const auto& t : lps) {
        json top = json::array();
        for (const auto& [piece, lp] : t.top) top.push_back({{"token", piece}, {"logprob", lp}, {"bytes", bytes_of(piece)}});
        content.push_back({{"token", t.piece}, {"logprob", t.logprob}, {"bytes", bytes_of(t.piece)}, {"top_logprobs", top}});
    }
    return {{"content", content}, {"refusal", nullptr}};
}

json completion_logprobs_json(const std::vector<TokenLogprob>& lps, size_t first_offset) {
    json tokens = json::array(), values = json::array(), tops = json::array(), offsets = json::array();
    size_t offset = first_offset;
    for (const auto& t : lps) {
        tokens.push_back(t.piece);
        values.push_back(t.logprob);
        json top = json::object();
        for (const auto& [piece, lp] : t.top) top[piece] = lp;
        tops.push_back(top);
        offsets.push_back(offset);
        offset += t.piece.size();
    }
    return {{"tokens", tokens}, {"token_logprobs", values}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

json tool_calls_json(const std::vector<model::ChatToolCall>& calls) {
    json out = json::array();
    for (size_t i = 0; i < calls.size(); ++i)
        out.push_back({{"index", i},
                       {"id", calls[i].id},
                       {"type", "function"},
                       {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}});
    return out;
}

json usage_json(const std::vector<runtime::GenResult>& results) {
    int64_t completion = 0;
    for (const auto& r : results) completion += r.completion_tokens;
    const int64_t prompt = results.empty() ? 0 : results[0].prompt_tokens;
    const int64_t cached = results.empty() ? 0 : results[0].cached_tokens;
    return {{"prompt_tokens", prompt},
            {"completion_tokens", completion},
            {"total_tokens", prompt + completion},
            {"prompt_tokens_details", {{"cached_tokens", cached}}}};
}

std::string dump_json(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string random_hex(int n) {
    static std::mutex mu;
    static std::mt19937_64 rng{std::random_device{}()};
    std::lock_guard<std::mutex> lock(mu);
    std::string s;
    while (int(s.size()) < n) s += fmt::format("{:016x}", rng());
    return s.substr(0, size_t(n));
}

}  // namespace duet::server
