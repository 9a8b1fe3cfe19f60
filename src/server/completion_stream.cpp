// CompletionHandler::render_stream: the SSE side of a completion (OpenAI's chunk shapes),
// one choice index per choice, tool calls as tool_calls deltas.
#include <httplib.h>

#include <chrono>

#include "server/completion_exchange.h"

namespace duet::server {

using nlohmann::json;

namespace {

// What the HTTP thread keeps between calls of the content provider.
struct StreamState {
    std::vector<ToolCallStream> streams;
    std::vector<bool> started, finished;
    std::vector<size_t> logprobs_sent, text_offset;
};

// Per choice, taken from the exchange under its lock.
struct Taken {
    std::deque<std::string> pieces;
    std::vector<TokenLogprob> logprobs;
    bool done = false;
    runtime::GenResult result;
};

}  // namespace

void CompletionHandler::render_stream(const CompletionRequest& r, const Prepared& p, std::shared_ptr<Exchange> ex,
                                      httplib::Response& res) {
    auto st = std::make_shared<StreamState>();
    const size_t n = ex->choices.size();
    for (size_t i = 0; i < n; ++i) st->streams.emplace_back(p.tool_mode, settings_.chat_template, p.tool_names);
    st->started.assign(n, false);
    st->finished.assign(n, false);
    st->logprobs_sent.assign(n, 0);
    st->text_offset.assign(n, 0);
    const bool chat = r.chat, logprobs = r.logprobs, include_usage = r.include_usage;
    const std::string id = p.id, model_id = settings_.model_id;
    const int64_t created = p.created;
    const bool forced = p.tool_mode == ToolCallStream::Mode::FORCED;
    auto duet = [this](const std::vector<runtime::GenResult>& results) { return duet_json(results); };

    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [ex, st, chat, logprobs, include_usage, id, model_id, created, forced, duet, n](size_t,
                                                                                       httplib::DataSink& sink) {
            auto send = [&](const json& j) {
                const std::string line = "data: " + dump_json(j) + "\n\n";
                return sink.write(line.data(), line.size());
            };
            auto envelope = [&](json choices) {
                return json{{"id", id},           {"object", chat ? "chat.completion.chunk" : "text_completion"},
                            {"created", created}, {"model", model_id},
                            {"choices", std::move(choices)}};
            };
            // One chunk of choice i: a chat delta (or completions text), logprobs of the tokens
            // produced since the last chunk that carried some.
            auto chunk = [&](size_t i, const json& delta, const json& finish, std::vector<TokenLogprob>* lps) {
                json c = {{"index", i}, {"finish_reason", finish}, {"logprobs", nullptr}};
                if (logprobs && lps && !lps->empty()) {
                    c["logprobs"] = chat ? chat_logprobs_json(*lps) : completion_logprobs_json(*lps, st->text_offset[i]);
                    for (const auto& t : *lps) st->text_offset[i] += t.piece.size();
                    lps->clear();
                }
                if (chat)
                    c["delta"] = delta;
                else
                    c["text"] = delta.value("content", "");
                return envelope(json::array({c}));
            };
            std::vector<Taken> taken(n);
            {
                std::unique_lock<std::mutex> lock(ex->mu);
                auto ready = [&] {
                    for (size_t i = 0; i < n; ++i)
                        if (!ex->choices[i].pieces.empty() || (ex->choices[i].done && !st->finished[i])) return true;
                    return false;
                };
                ex->cv.wait_for(lock, std::chrono::milliseconds(100), ready);
                for (size_t i = 0; i < n; ++i) {
                    auto& c = ex->choices[i];
                    taken[i].pieces.swap(c.pieces);
                    for (size_t k = st->logprobs_sent[i]; k < c.logprobs.size(); ++k) taken[i].logprobs.push_back(c.logprobs[k]);
                    st->logprobs_sent[i] = c.logprobs.size();
                    taken[i].done = c.done;
                    if (c.done) taken[i].result = c.result;
                }
            }
            bool ok = true;
            for (size_t i = 0; i < n && ok; ++i) {
                if (st->finished[i]) continue;
                auto& t = taken[i];
                if (chat && !st->started[i]) {
                    st->started[i] = true;
                    ok = send(chunk(i, {{"role", "assistant"}, {"content", forced ? json(nullptr) : json("")}}, nullptr,
                                    nullptr));
                }
                for (const auto& piece : t.pieces)
                    for (const json& d : st->streams[i].feed(piece)) ok = ok && send(chunk(i, d, nullptr, &t.logprobs));
                if (!t.done) {
                    if (ok && logprobs && !t.logprobs.empty())  // held-back text: the logprobs go out now
                        ok = send(chunk(i, json::object(), nullptr, &t.logprobs));
                    continue;
                }
                for (const json& d : st->streams[i].finish()) ok = ok && send(chunk(i, d, nullptr, &t.logprobs));
                ok = ok && send(chunk(i, json::object(), finish_reason(t.result, st->streams[i].called()), &t.logprobs));
                st->finished[i] = true;
            }
            if (!ok || !sink.is_writable()) {
                ex->cancelled->store(true);
                return false;
            }
            for (size_t i = 0; i < n; ++i)
                if (!st->finished[i]) return true;
            if (include_usage) {
                std::vector<runtime::GenResult> results;
                {
                    std::lock_guard<std::mutex> lock(ex->mu);
                    for (const auto& c : ex->choices) results.push_back(c.result);
                }
                json u = envelope(json::array());
                u["usage"] = usage_json(results);
                u["duet"] = duet(results);
                ok = send(u);
            }
            static const std::string kDone = "data: [DONE]\n\n";
            if (ok) ok = sink.write(kDone.data(), kDone.size());
            if (ok) sink.done();
            return ok;
        },
        [ex](bool success) {
            if (!success) ex->cancelled->store(true);
        });
}

}  // namespace duet::server
