#include "server/responses_handler.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <optional>

#include "core/log.h"
#include "model/tokenizer/tokenizer.h"
#include "server/api_error.h"
#include "server/completion_exchange.h"
#include "server/http_front.h"
#include "server/responses_output.h"

namespace duet::server {

using nlohmann::json;
using nlohmann::ordered_json;

struct ResponsesHandler::Turn {
    ResponsesRequest r;
    CompletionRequest cr;
    CompletionHandler::Prepared p;
    std::shared_ptr<CompletionHandler::Exchange> ex;
    ordered_json items;                // the conversation before this response's output
    std::vector<int32_t> prev_tokens;  // the previous response's tokens (prompt + generated)
    std::string id;
    int64_t created_at = 0;
    std::optional<ToolCallStream> calls;
    std::optional<ResponsesOutput> output;
    // Set by finish():
    ordered_json usage, duet, final_json;
    std::string error;
    // Streaming:
    bool started = false;
    int64_t sequence = 0;
};

namespace {

constexpr int kGonePollMs = 50;  // how often a non-streamed request looks for its client

int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string dump(const ordered_json& j) { return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace); }

void replace_all(std::string& s, const std::string& from, const std::string& to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
        s.replace(at, from.size(), to);
}

// The chat route's errors name its own parameters; a Responses client sent other names.
ApiError renamed(const ApiError& e) {
    const json j = e.to_json()["error"];
    std::string msg = j["message"], param = j["param"].is_string() ? j["param"].get<std::string>() : "";
    const std::string code = j["code"].is_string() ? j["code"].get<std::string>() : "";
    replace_all(msg, "response_format.json_schema.schema", "text.format.schema");
    replace_all(msg, "the messages", "the input");
    replace_all(param, "response_format.json_schema.schema", "text.format.schema");
    if (param == "messages") param = "input";
    return ApiError(e.status(), j["type"].get<std::string>(), msg, param, code);
}

ordered_json tool_choice_json(const ResponsesRequest& r) {
    switch (r.tool_choice) {
        case ToolChoice::NONE:
            return "none";
        case ToolChoice::AUTO:
            return "auto";
        case ToolChoice::REQUIRED:
            return "required";
        case ToolChoice::FUNCTION:
            return {{"type", "function"}, {"name", r.tool_choice_name}};
    }
    return "auto";
}

ordered_json tools_json(const ResponsesRequest& r) {
    ordered_json out = ordered_json::array();
    for (size_t i = 0; i < r.tools.size(); ++i)
        out.push_back(
            {{"type", "function"},
             {"name", r.tools[i].name},
             {"description", r.tools[i].description.empty() ? ordered_json() : ordered_json(r.tools[i].description)},
             {"parameters", r.tools[i].parameters},
             {"strict", bool(r.tools_strict[i])}});
    return out;
}

ordered_json or_null(const std::optional<std::string>& s) { return s ? ordered_json(*s) : ordered_json(); }

}  // namespace

void ResponsesHandler::create(const std::string& body, httplib::Response& res) {
    auto t = std::make_shared<Turn>();
    t->r = parse_responses_request(body);
    prepare(*t);
    try {
        t->ex = completions_.schedule(t->cr, t->p);
    } catch (const ApiError& e) {
        throw renamed(e);
    }
    if (t->r.stream)
        render_stream(t, res);
    else
        render_json(t, res);
}

void ResponsesHandler::prepare(Turn& t) {
    const ResponsesRequest& r = t.r;
    const std::string& model_id = completions_.settings_.model_id;
    if (!r.model.empty() && r.model != model_id)
        throw ApiError::not_found(
            fmt::format("The model '{}' does not exist (this server serves '{}')", r.model, model_id), "model");
    t.items = ordered_json::array();
    if (!r.previous_response_id.empty()) {
        auto prev = store_.get(r.previous_response_id);
        if (!prev)
            throw ApiError(400, "invalid_request_error",
                           fmt::format("Previous response with id '{}' not found.", r.previous_response_id),
                           "previous_response_id", "previous_response_not_found");
        t.items = std::move(prev->context);
        t.prev_tokens = std::move(prev->tokens);
    }
    const size_t n_history = t.items.size();
    for (const auto& it : r.input_items) t.items.push_back(it);

    CompletionRequest& c = t.cr;
    c.chat = true;
    c.model = r.model;
    c.messages = items_to_messages(t.items, r.has_instructions ? &r.instructions : nullptr, "input", n_history);
    if (c.messages.empty()) throw ApiError::bad_request("'input' is required", "input");
    c.max_tokens = r.max_output_tokens;
    c.temperature = r.temperature;
    c.top_p = r.top_p;
    c.seed = r.seed;
    c.stream = r.stream;
    c.return_token_ids = true;  // the generated tokens are stored with the response
    c.tools = r.tools;
    c.tool_choice = r.tool_choice;
    c.tool_choice_name = r.tool_choice_name;
    c.response_format = r.format;
    c.json_schema = r.json_schema;
    try {
        t.p = completions_.prepare(c);
    } catch (const ApiError& e) {
        throw renamed(e);
    }
    continue_prompt(t);
    t.id = "resp_" + random_hex(48);
    t.created_at = int64_t(std::time(nullptr));
    t.calls.emplace(t.p.tool_mode, completions_.settings_.chat_template, t.p.tool_names);
    t.output.emplace(r.parallel_tool_calls);
}

// The template renders the previous turn's output from its text (a tool call's arguments
// re-serialised), which need not tokenize to the tokens the model sampled. The new prompt is
// therefore the longest run of the previous turn's tokens whose text is a prefix of the new
// prompt's text and ends on one of the new prompt's token boundaries, followed by the new
// prompt's own tokens from that boundary: the same text, the tokens the model saw for the part
// it has seen (every full KV block of that run is a prefix cache hit), the template's tokens
// for the rest.
void ResponsesHandler::continue_prompt(Turn& t) const {
    const std::vector<int32_t>& prev = t.prev_tokens;
    std::vector<int32_t>& prompt = t.p.prompt;
    if (prev.empty()) return;
    const model::Tokenizer& tok = completions_.batcher_.model().tokenizer();
    const int32_t n_vocab = int32_t(completions_.batcher_.model().hparams().n_vocab);
    auto piece = [&](int32_t id) { return id >= 0 && id < n_vocab ? tok.token_to_piece(id, true) : std::string(); };
    std::string want;
    std::vector<size_t> ends;  // text offset after each token of the prompt
    for (int32_t id : prompt) ends.push_back((want += piece(id)).size());
    size_t best_prev = 0, best_prompt = 0, len = 0, j = 0;
    for (size_t k = 0; k < prev.size(); ++k) {
        const std::string p = piece(prev[k]);
        if (want.compare(len, p.size(), p) != 0) break;
        len += p.size();
        while (j < ends.size() && ends[j] < len) ++j;
        if (j < ends.size() && ends[j] == len && j + 1 < ends.size()) best_prev = k + 1, best_prompt = j + 1;
    }
    if (best_prev == 0 ||
        (best_prev == best_prompt && std::equal(prev.begin(), prev.begin() + long(best_prev), prompt.begin())))
        return;  // nothing shared, or the template's tokens are the previous turn's already
    std::vector<int32_t> joined(prev.begin(), prev.begin() + long(best_prev));
    joined.insert(joined.end(), prompt.begin() + long(best_prompt), prompt.end());
    const int64_t reserve = std::max<int64_t>(1, t.cr.max_tokens);
    if (int64_t(joined.size()) + reserve > completions_.batcher_.n_ctx()) return;  // keep the prompt prepare() checked
    DUET_LOG_DEBUG(
        "POST /v1/responses: the prompt continues {} of the previous turn's {} tokens (the template's "
        "tokenization of that text had {})",
        best_prev, prev.size(), best_prompt);
    prompt = std::move(joined);
}

ordered_json ResponsesHandler::response_json(const Turn& t, const char* status) const {
    const ResponsesRequest& r = t.r;
    const std::string st = status;
    ordered_json j = {
        {"id", t.id},
        {"object", "response"},
        {"created_at", t.created_at},
        {"status", st},
        {"background", false},
        {"completed_at", st == "completed" ? ordered_json(int64_t(std::time(nullptr))) : ordered_json()},
        {"error", t.error.empty() ? ordered_json() : ordered_json{{"code", "server_error"}, {"message", t.error}}},
        {"incomplete_details", st == "incomplete" ? ordered_json{{"reason", "max_output_tokens"}} : ordered_json()},
        {"instructions", r.has_instructions ? ordered_json(r.instructions) : ordered_json()},
        {"max_output_tokens", r.max_output_tokens > 0 ? ordered_json(r.max_output_tokens) : ordered_json()},
        {"model", completions_.settings_.model_id},
        {"output", st == "in_progress" ? ordered_json::array() : t.output->items()},
        {"parallel_tool_calls", r.parallel_tool_calls},
        {"previous_response_id",
         r.previous_response_id.empty() ? ordered_json() : ordered_json(r.previous_response_id)},
        {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
        {"service_tier", r.service_tier ? *r.service_tier : "default"},
        {"store", r.store},
        {"temperature", r.temperature},
        {"text", {{"format", r.format_json}, {"verbosity", "medium"}}},
        {"tool_choice", tool_choice_json(r)},
        {"tools", tools_json(r)},
        {"top_p", r.top_p},
        {"truncation", "disabled"},
        {"usage", t.usage},
        {"user", or_null(r.user)},
        {"metadata", r.metadata},
    };
    if (r.safety_identifier) j["safety_identifier"] = *r.safety_identifier;
    if (r.prompt_cache_key) j["prompt_cache_key"] = *r.prompt_cache_key;
    if (!t.duet.is_null()) j["duet"] = t.duet;
    return j;
}

// Usage, timings, the final object and, when asked, the stored record.
void ResponsesHandler::finish(Turn& t, const runtime::GenResult& res, const std::vector<int32_t>& generated) {
    t.usage = {{"input_tokens", res.prompt_tokens},
               {"input_tokens_details", {{"cached_tokens", res.cached_tokens}}},
               {"output_tokens", res.completion_tokens},
               {"output_tokens_details", {{"reasoning_tokens", 0}}},
               {"total_tokens", res.prompt_tokens + res.completion_tokens}};
    t.duet = ordered_json(completions_.duet_json({res}));
    const bool incomplete = res.finish_reason == "length";
    t.final_json = response_json(t, incomplete ? "incomplete" : "completed");
    if (!t.r.store) return;
    StoredResponse s;
    s.id = t.id;
    s.created_ms = now_ms();
    s.response = t.final_json;
    s.context = t.items;
    for (const auto& it : normalise_items(t.output->items(), "output")) s.context.push_back(it);
    s.tokens = t.p.prompt;
    s.tokens.insert(s.tokens.end(), generated.begin(), generated.end());
    store_.put(s);
}

void ResponsesHandler::render_json(std::shared_ptr<Turn> t, httplib::Response& res) {
    CompletionHandler::Exchange& ex = *t->ex;
    std::unique_lock<std::mutex> lock(ex.mu);
    // As on the chat route: a client that leaves is noticed within kGonePollMs and its request
    // cancelled (the batcher drops it at its next step).
    while (!ex.cv.wait_for(lock, std::chrono::milliseconds(kGonePollMs), [&] { return ex.all_done(); })) {
        if (client_gone()) {
            ex.cancelled->store(true);
            completions_.metrics_.inc("duet_requests_abandoned_total");
            throw ApiError::client_closed();
        }
    }
    auto& c = ex.choices[0];
    if (c.result.finish_reason == "error") throw ApiError(500, "server_error", c.result.error);
    for (const auto& piece : c.pieces)
        for (const json& d : t->calls->feed(piece)) t->output->feed(d);
    for (const json& d : t->calls->finish()) t->output->feed(d);
    const runtime::GenResult result = c.result;
    const std::vector<int32_t> generated = c.token_ids;
    lock.unlock();
    t->output->finish(result.finish_reason == "length");
    finish(*t, result, generated);
    res.status = 200;
    res.set_content(dump(t->final_json), "application/json");
}

void ResponsesHandler::render_stream(std::shared_ptr<Turn> t, httplib::Response& res) {
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, t](size_t, httplib::DataSink& sink) {
            // SSE as OpenAI sends it: the event's type as `event:`, the event as `data:`.
            auto send = [&](ordered_json ev) {
                ev["sequence_number"] = t->sequence++;
                const std::string text = "event: " + ev["type"].get<std::string>() + "\ndata: " + dump(ev) + "\n\n";
                return sink.write(text.data(), text.size());
            };
            bool ok = true;
            if (!t->started) {
                t->started = true;
                const ordered_json r = response_json(*t, "in_progress");
                ok = send({{"type", "response.created"}, {"response", r}}) &&
                     send({{"type", "response.in_progress"}, {"response", r}});
            }
            std::deque<std::string> pieces;
            bool done = false;
            runtime::GenResult result;
            std::vector<int32_t> generated;
            {
                CompletionHandler::Exchange& ex = *t->ex;
                std::unique_lock<std::mutex> lock(ex.mu);
                auto& c = ex.choices[0];
                ex.cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return !c.pieces.empty() || c.done; });
                pieces.swap(c.pieces);
                if ((done = c.done)) result = c.result, generated = c.token_ids;
            }
            for (const auto& piece : pieces)
                for (const json& d : t->calls->feed(piece))
                    for (const auto& ev : t->output->feed(d)) ok = ok && send(ev);
            if (!ok || !sink.is_writable()) {
                t->ex->cancelled->store(true);
                return false;
            }
            if (!done) return true;
            if (result.finish_reason == "error") {
                t->error = result.error;
                ok = send({{"type", "response.failed"}, {"response", response_json(*t, "failed")}});
                if (ok) sink.done();
                return ok;
            }
            const bool incomplete = result.finish_reason == "length";
            for (const json& d : t->calls->finish())
                for (const auto& ev : t->output->feed(d)) ok = ok && send(ev);
            for (const auto& ev : t->output->finish(incomplete)) ok = ok && send(ev);
            try {
                finish(*t, result, generated);
            } catch (const std::exception& e) {  // the store failed: the client still gets its answer
                DUET_LOG_WARN("POST /v1/responses: {} was not stored: {}", t->id, e.what());
            }
            ok = ok && send({{"type", incomplete ? "response.incomplete" : "response.completed"},
                             {"response", t->final_json}});
            if (ok) sink.done();
            return ok;
        },
        [t](bool success) {
            if (!success) t->ex->cancelled->store(true);
        });
}

ordered_json ResponsesHandler::get(const std::string& id) const {
    auto s = store_.get(id);
    if (!s) throw ApiError::not_found(fmt::format("Response with id '{}' not found.", id));
    return s->response;
}

ordered_json ResponsesHandler::remove(const std::string& id) {
    if (!store_.remove(id)) throw ApiError::not_found(fmt::format("Response with id '{}' not found.", id));
    return {{"id", id}, {"object", "response"}, {"deleted", true}};
}

}  // namespace duet::server
