#include "workload/serving_trace.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "core/error.h"
#include "core/log.h"

namespace duet::workload {

std::vector<int64_t> arrival_times_ns(const ArrivalSpec& spec, int64_t n) {
    std::vector<int64_t> t(size_t(std::max<int64_t>(n, 0)), 0);
    if (std::isinf(spec.rate_rps)) return t;
    DUET_CHECK(spec.rate_rps > 0 && spec.burstiness_cv > 0);
    const double cv2 = spec.burstiness_cv * spec.burstiness_cv;
    std::mt19937_64 rng(spec.seed);
    std::gamma_distribution<double> gap(1.0 / cv2, cv2 / spec.rate_rps);  // mean 1/rate seconds
    double s = 0;
    for (size_t i = 1; i < t.size(); ++i) {
        s += gap(rng);
        t[i] = int64_t(std::llround(s * 1e9));
    }
    return t;
}

std::vector<serving::ServingRequest> synthetic_requests(const ArrivalSpec& spec, int64_t n, int64_t prompt_tokens,
                                                        int64_t output_tokens) {
    std::vector<serving::ServingRequest> out;
    for (int64_t t : arrival_times_ns(spec, n)) out.push_back({t, prompt_tokens, output_tokens, nullptr});
    return out;
}

void give_shared_prefix(std::vector<serving::ServingRequest>& reqs, int64_t shared) {
    int32_t next = int32_t(shared);  // ids 0 .. shared-1 are the common prefix
    for (serving::ServingRequest& r : reqs) {
        if (r.prompt_tokens <= shared)
            fail("--shared-prefix {} is not below a prompt of {} tokens (allowed: 0 to {})", shared, r.prompt_tokens,
                 r.prompt_tokens - 1);
        auto t = std::make_shared<std::vector<int32_t>>(size_t(r.prompt_tokens));
        for (int64_t i = 0; i < r.prompt_tokens; ++i) (*t)[size_t(i)] = i < shared ? int32_t(i) : next++;
        r.tokens = std::move(t);
    }
}

std::vector<serving::ServingRequest> agent_session_requests(const AgentTrace& trace, int64_t n_sessions,
                                                            const ArrivalSpec& spec, int64_t think_ns, int64_t n_ctx) {
    const std::vector<AgentRequest> calls = agent_requests(trace);
    for (const AgentRequest& c : calls)
        if (c.n_prompt + c.n_generate > n_ctx)
            fail("{}: the call at message {} needs {} + {} tokens, beyond the context of {} tokens (allowed: at most {} "
                 "in all, or --ctx)", trace.source, c.message + 1, c.n_prompt, c.n_generate, n_ctx, n_ctx);
    int32_t next_id = 0;
    std::vector<int32_t> system_ids;  // the same in every session
    for (const AgentMessage& m : trace.messages)
        if (m.role == Role::SYSTEM)
            for (int64_t k = 0; k < m.n_tokens; ++k) system_ids.push_back(next_id++);
    std::vector<serving::ServingRequest> out;
    const std::vector<int64_t> starts = arrival_times_ns(spec, n_sessions);
    for (int64_t s = 0; s < n_sessions; ++s) {
        auto transcript = std::make_shared<std::vector<int32_t>>();
        size_t sys = 0;
        for (const AgentMessage& m : trace.messages)
            for (int64_t k = 0; k < m.n_tokens; ++k)
                transcript->push_back(m.role == Role::SYSTEM ? system_ids[sys++] : next_id++);
        int64_t prev = -1;
        for (const AgentRequest& c : calls) {
            serving::ServingRequest r;
            r.arrival_ns = prev < 0 ? starts[size_t(s)] : 0;
            r.prompt_tokens = c.n_prompt;
            r.output_tokens = c.n_generate;
            r.tokens = std::make_shared<const std::vector<int32_t>>(transcript->begin(),
                                                                    transcript->begin() + (c.n_prompt + c.n_generate));
            r.after = prev;
            r.think_ns = prev < 0 ? 0 : think_ns;
            prev = int64_t(out.size());
            out.push_back(std::move(r));
        }
    }
    return out;
}

bool is_agent_session_file(const std::string& path) {
    std::ifstream f(path);
    for (std::string line; std::getline(f, line);) {
        const size_t b = line.find_first_not_of(" \t\r");
        if (b == std::string::npos || line[b] == '#') continue;
        return line.find("\"role\"") != std::string::npos;
    }
    return false;
}

namespace {

struct Where {
    const std::string& path;
    std::string unit;  // "line 3", "entry 7"
};

[[noreturn]] void bad(const Where& w, const std::string& field, const std::string& what) {
    fail("{} {}: field \"{}\" {}", w.path, w.unit, field, what);
}

std::string shown(const nlohmann::json& v) {
    std::string s = v.dump();
    return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

double seconds_field(const nlohmann::json& o, const Where& w, const char* field) {
    if (!o.contains(field)) bad(w, field, "is missing (allowed: seconds >= 0)");
    const nlohmann::json& v = o[field];
    if (!v.is_number()) bad(w, field, fmt::format("= {} is not a number (allowed: seconds >= 0)", shown(v)));
    const double s = v.get<double>();
    if (!std::isfinite(s) || s < 0) bad(w, field, fmt::format("= {} is negative (allowed: seconds >= 0)", shown(v)));
    return s;
}

int64_t count_field(const nlohmann::json& o, const Where& w, const char* field) {
    const nlohmann::json& v = o[field];
    if (!v.is_number_integer() && !(v.is_number_unsigned()))
        bad(w, field, fmt::format("= {} is not a whole number (allowed: tokens >= 1)", shown(v)));
    const int64_t n = v.get<int64_t>();
    if (n < 1) bad(w, field, fmt::format("= {} is out of range (allowed: tokens >= 1)", n));
    return n;
}

std::shared_ptr<const std::vector<int32_t>> text_tokens(const std::string& text, const Where& w, const char* field,
                                                        const TokenCounter& count) {
    if (!count)
        bad(w, field, "is text, and the model has no tokenizer to count it (allowed: a GGUF --model, or "
                      "\"prompt_tokens\" as a number)");
    auto ids = std::make_shared<std::vector<int32_t>>(count(text));
    if (ids->empty()) ids->push_back(0);  // an empty text still costs its one position
    return ids;
}

void check_context(const Where& w, int64_t prompt, int64_t output, int64_t n_ctx) {
    if (prompt + output > n_ctx)
        fail("{} {}: field \"output_tokens\": prompt {} + output {} = {} tokens exceeds the context of {} tokens "
             "(allowed: at most {} in all)", w.path, w.unit, prompt, output, prompt + output, n_ctx, n_ctx);
}

std::vector<serving::ServingRequest> load_jsonl(const std::string& path, std::istream& in, int64_t n_ctx,
                                                const TokenCounter& count, int64_t max_requests) {
    std::vector<serving::ServingRequest> out;
    std::string line;
    for (int64_t no = 1; std::getline(in, line); ++no) {
        if (max_requests >= 0 && int64_t(out.size()) >= max_requests) break;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const Where w{path, fmt::format("line {}", no)};
        const nlohmann::json o = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (o.is_discarded() || !o.is_object())
            fail("{} line {}: not a JSON object (allowed: {{\"arrival_s\", \"prompt_tokens\" or \"prompt\", "
                 "\"output_tokens\"}})", path, no);
        serving::ServingRequest r;
        r.arrival_ns = int64_t(std::llround(seconds_field(o, w, "arrival_s") * 1e9));
        if (o.contains("prompt_tokens")) {
            r.prompt_tokens = count_field(o, w, "prompt_tokens");
        } else if (o.contains("prompt")) {
            if (!o["prompt"].is_string()) bad(w, "prompt", fmt::format("= {} is not text", shown(o["prompt"])));
            r.tokens = text_tokens(o["prompt"].get<std::string>(), w, "prompt", count);
            r.prompt_tokens = int64_t(r.tokens->size());
        } else {
            bad(w, "prompt_tokens", "is missing (allowed: \"prompt_tokens\": tokens >= 1, or \"prompt\": text)");
        }
        if (!o.contains("output_tokens")) bad(w, "output_tokens", "is missing (allowed: tokens >= 1)");
        r.output_tokens = count_field(o, w, "output_tokens");
        check_context(w, r.prompt_tokens, r.output_tokens, n_ctx);
        out.push_back(r);
    }
    if (out.empty()) fail("{}: no requests (allowed: one JSON object per line)", path);
    return out;
}

std::vector<serving::ServingRequest> load_sharegpt(const std::string& path, const std::string& text, int64_t n_ctx,
                                                   const TokenCounter& count, const ArrivalSpec& spec,
                                                   int64_t max_requests) {
    const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded() || !doc.is_array())
        fail("{}: not a JSON array of conversations (allowed: ShareGPT JSON, or JSONL)", path);
    std::vector<serving::ServingRequest> out;
    int64_t skipped = 0;
    for (size_t i = 0; i < doc.size(); ++i) {
        if (max_requests >= 0 && int64_t(out.size()) >= max_requests) break;
        const Where w{path, fmt::format("entry {}", i)};
        const nlohmann::json& e = doc[i];
        const char* key = e.is_object() && e.contains("conversations") ? "conversations" : "conversation";
        if (!e.is_object() || !e.contains(key) || !e[key].is_array())
            bad(w, "conversations", "is missing (allowed: an array of {\"from\", \"value\"} turns)");
        const nlohmann::json& turns = e[key];
        for (size_t t = 0; t + 1 < turns.size(); ++t) {
            const nlohmann::json &a = turns[t], &b = turns[t + 1];
            auto text_of = [&](const nlohmann::json& turn) -> std::string {
                if (!turn.is_object() || !turn.contains("value") || !turn["value"].is_string())
                    bad(w, "value", "is missing or not text in a turn (allowed: {\"from\", \"value\": text})");
                return turn["value"].get<std::string>();
            };
            if (!a.is_object() || a.value("from", "") != "human") continue;
            auto prompt = text_tokens(text_of(a), w, "value", count);
            const int64_t p = int64_t(prompt->size());
            const int64_t o = int64_t(text_tokens(text_of(b), w, "value", count)->size());
            if (p + o > n_ctx) ++skipped;  // vLLM's benchmark filters these too
            else out.push_back({0, p, o, std::move(prompt)});
            break;
        }
    }
    if (skipped > 0)
        DUET_LOG_WARN("{}: {} conversation(s) longer than the context of {} tokens skipped", path, skipped, n_ctx);
    if (out.empty())
        fail("{}: no human/gpt turn pair within the context of {} tokens in any entry (allowed: ShareGPT "
             "conversations)", path, n_ctx);
    const std::vector<int64_t> t = arrival_times_ns(spec, int64_t(out.size()));
    for (size_t i = 0; i < out.size(); ++i) out[i].arrival_ns = t[i];
    return out;
}

}  // namespace

bool is_sharegpt_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    char ch = 0;
    while (f.get(ch))
        if (!std::isspace(static_cast<unsigned char>(ch))) return ch == '[';
    return false;
}

std::vector<serving::ServingRequest> load_serving_trace(const std::string& path, int64_t n_ctx,
                                                        const TokenCounter& count_tokens, const ArrivalSpec& spec,
                                                        int64_t max_requests) {
    std::ifstream f(path, std::ios::binary);
    if (!f) fail("--workload-file {}: cannot open the file", path);
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string text = ss.str();
    const size_t first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '[')
        return load_sharegpt(path, text, n_ctx, count_tokens, spec, max_requests);
    std::istringstream lines(text);
    return load_jsonl(path, lines, n_ctx, count_tokens, max_requests);
}

}  // namespace duet::workload
