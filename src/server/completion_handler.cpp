#include "server/completion_handler.h"

#include <fmt/format.h>
#include <httplib.h>

#include <chrono>
#include <ctime>
#include <random>

#include "core/error.h"
#include "core/log.h"
#include "model/grammar/json_schema.h"
#include "model/tokenizer/tokenizer.h"
#include "server/api_error.h"
#include "server/completion_exchange.h"
#include "server/http_front.h"

namespace duet::server {

using nlohmann::json;

constexpr int kGonePollMs = 50;  // how often a non-streamed request looks for its client

CompletionHandler::CompletionHandler(CompletionSettings settings, runtime::Batcher& batcher, Metrics& metrics,
                                     ModelledTimings timings)
    : settings_(std::move(settings)), batcher_(batcher), metrics_(metrics), timings_(std::move(timings)) {}

CompletionHandler::~CompletionHandler() = default;

void CompletionHandler::handle(const std::string& body, bool chat, httplib::Response& res) {
    const CompletionRequest r = parse_completion_request(body, chat);
    if (!r.model.empty() && r.model != settings_.model_id)
        throw ApiError::not_found(
            fmt::format("The model '{}' does not exist (this server serves '{}')", r.model, settings_.model_id), "model");
    if (r.n > batcher_.n_parallel())
        throw ApiError::bad_request(fmt::format("'n' = {} is more than this server runs at once (allowed: 1 to {}, "
                                                "the server's --parallel)",
                                                r.n, batcher_.n_parallel()),
                                    "n");
    const Prepared p = prepare(r);
    auto ex = schedule(r, p);
    if (r.stream)
        render_stream(r, p, ex, res);
    else
        render_json(r, p, *ex, res);
}

std::shared_ptr<const model::grammar::TokenTable> CompletionHandler::token_table() {
    std::lock_guard<std::mutex> lock(table_mu_);
    if (!table_) table_ = model::grammar::TokenTable::from_tokenizer(batcher_.model().tokenizer());
    return table_;
}

namespace {

using ojson = nlohmann::ordered_json;

// Every string and key of j defused (Tokenizer::defuse_special); depth is bounded by the
// request body's JSON budget.
ojson defuse_json(const model::Tokenizer& tok, const ojson& j) {
    if (j.is_string()) return tok.defuse_special(j.get<std::string>());
    if (j.is_array()) {
        ojson out = ojson::array();
        for (const auto& v : j) out.push_back(defuse_json(tok, v));
        return out;
    }
    if (j.is_object()) {
        ojson out = ojson::object();
        for (const auto& [k, v] : j.items()) out[tok.defuse_special(k)] = defuse_json(tok, v);
        return out;
    }
    return j;
}

// Tool-call arguments are JSON text that the template parses and writes back: defuse the
// strings inside (an escaped "\u003c|im_end|>" is a control token's text once re-written).
std::string defuse_arguments(const model::Tokenizer& tok, const std::string& args) {
    const ojson a = ojson::parse(args, nullptr, false);  // within the body's JSON budget
    return a.is_discarded() ? tok.defuse_special(args) : defuse_json(tok, a).dump();
}

}  // namespace

// Control tokens come only from the template (docs/server.md, "Special tokens"): the prompt is
// rendered twice, from the request's strings and from the same strings defused, and only the
// control-token texts both renderings have at one offset become control tokens.
std::vector<int32_t> CompletionHandler::prompt_tokens(const CompletionRequest& r,
                                                      const std::vector<model::ToolFunction>& shown) {
    const auto& tok = batcher_.model().tokenizer();
    if (!r.chat) return tok.encode(r.prompt, tok.add_bos_default(), r.parse_special);
    std::vector<model::ToolChatMessage> tool_msgs, tool_msgs_defused;
    bool tool_messages = false;
    for (const auto& m : r.messages) {
        tool_msgs.push_back({m.role, m.content, m.tool_calls, m.tool_call_id});
        tool_messages = tool_messages || m.role == "tool" || !m.tool_calls.empty();
        model::ToolChatMessage d{m.role, tok.defuse_special(m.content), m.tool_calls, m.tool_call_id};
        for (auto& c : d.tool_calls) {
            c.name = tok.defuse_special(c.name);
            c.arguments = defuse_arguments(tok, c.arguments);
        }
        tool_msgs_defused.push_back(std::move(d));
    }
    std::vector<model::ToolFunction> shown_defused;
    for (const auto& f : shown)
        shown_defused.push_back(
            {tok.defuse_special(f.name), tok.defuse_special(f.description), defuse_json(tok, f.parameters)});
    const std::string bos = tok.bos() >= 0 ? tok.token_to_piece(tok.bos(), true) : "";
    const std::string eos = tok.eos() >= 0 ? tok.token_to_piece(tok.eos(), true) : "";
    auto render = [&](const std::vector<model::ToolChatMessage>& tm, const std::vector<model::ToolFunction>& tools) {
        if (!tools.empty() || tool_messages)
            return model::render_chat_tools(settings_.chat_template, tm, tools, true, bos, eos);
        std::vector<model::ChatMessage> msgs;
        for (const auto& m : tm) msgs.push_back({m.role, m.content});
        return model::render_chat(settings_.chat_template, msgs, true, bos, eos);
    };
    try {
        const std::string text = render(tool_msgs, shown);
        if (r.parse_special) return tok.encode(text, false, true);
        const std::string shape = render(tool_msgs_defused, shown_defused);
        // Same length unless defusing merged two keys of one object: then the defused text is the prompt.
        return shape.size() == text.size() ? tok.encode_chat(text, shape, false) : tok.encode(shape, false, true);
    } catch (const Error& e) {
        throw ApiError::bad_request(e.what(), shown.empty() ? "messages" : "tools");
    }
}

namespace {

// The compilers' cancel callback (SchemaLimits/GrammarLimits::cancelled, asked once per rule):
// true once the current request's client has closed its connection or the server is stopping.
// client_gone() is a poll(2), so it runs at most every kCompileGonePollMs of compilation.
constexpr int kCompileGonePollMs = 10;
std::function<bool()> client_gone_poller() {
    return [next = std::chrono::steady_clock::now(), gone = false]() mutable {
        if (gone) return true;
        const auto now = std::chrono::steady_clock::now();
        if (now < next) return false;
        next = now + std::chrono::milliseconds(kCompileGonePollMs);
        return gone = server_stopping() || client_gone();
    };
}

}  // namespace

// The grammar the output must match: a forced tool call, a JSON schema or any JSON object.
// Compiling a schema can take seconds within every limit (docs/server.md, "Limits"): it stops
// when the client leaves (499) or the server stops (503), counted in
// duet_grammar_compilations_cancelled_total.
std::shared_ptr<const model::grammar::Grammar> CompletionHandler::grammar_for(const CompletionRequest& r) {
    namespace g = model::grammar;
    const bool forced = r.tool_choice == ToolChoice::REQUIRED || r.tool_choice == ToolChoice::FUNCTION;
    const std::string param = forced ? "tools" : "response_format.json_schema.schema";
    g::SchemaLimits schema_limits;
    schema_limits.max_copied_values = settings_.max_schema_work;
    schema_limits.cancelled = client_gone_poller();
    g::GrammarLimits grammar_limits;
    grammar_limits.cancelled = schema_limits.cancelled;
    const auto t0 = std::chrono::steady_clock::now();
    try {
        if (forced) {
            std::vector<model::ToolFunction> allowed;
            for (const auto& t : r.tools)
                if (r.tool_choice == ToolChoice::REQUIRED || t.name == r.tool_choice_name) allowed.push_back(t);
            return g::Grammar::parse(model::tool_call_grammar(settings_.chat_template, allowed, schema_limits), param,
                                     grammar_limits);
        }
        if (r.response_format == ResponseFormat::JSON_OBJECT)
            return g::Grammar::parse(g::json_object_grammar(), "json_object");
        if (r.response_format == ResponseFormat::JSON_SCHEMA)
            return g::Grammar::parse(g::json_schema_to_grammar(r.json_schema, param, schema_limits), param,
                                     grammar_limits);
    } catch (const g::GrammarCancelled&) {
        metrics_.inc("duet_grammar_compilations_cancelled_total");
        const bool stopping = server_stopping();
        DUET_LOG_INFO("{}: grammar compilation stopped after {} ms: {}", param,
                      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
                          .count(),
                      stopping ? "the server is stopping" : "the client closed the connection");
        if (stopping) throw ApiError::unavailable("The server is shutting down");
        throw ApiError::client_closed();
    } catch (const Error& e) {
        throw ApiError::bad_request(e.what(), param);
    }
    return nullptr;
}

CompletionHandler::Prepared CompletionHandler::prepare(const CompletionRequest& r) {
    Prepared p;
    const bool tools_on = r.tool_choice != ToolChoice::NONE;
    if (tools_on && !model::chat_template_has_tools(settings_.chat_template))
        throw ApiError::bad_request(fmt::format("'tools' cannot be used: this server's chat template ({}) has no tool "
                                                "format (tools work with llama3, chatml, mistral)",
                                                model::chat_template_name(settings_.chat_template)),
                                    "tools");
    p.prompt = prompt_tokens(r, tools_on ? r.tools : std::vector<model::ToolFunction>{});
    if (r.tool_choice == ToolChoice::AUTO) p.tool_mode = ToolCallStream::Mode::AUTO;
    if (r.tool_choice == ToolChoice::REQUIRED || r.tool_choice == ToolChoice::FUNCTION) {
        p.tool_mode = ToolCallStream::Mode::FORCED;
        for (const auto& t : r.tools)
            if (r.tool_choice == ToolChoice::REQUIRED || t.name == r.tool_choice_name) p.tool_names.push_back(t.name);
    }
    p.id = (r.chat ? "chatcmpl-" : "cmpl-") + random_hex(24);
    p.created = int64_t(std::time(nullptr));

    const char* param = r.chat ? "messages" : "prompt";
    if (p.prompt.empty()) throw ApiError::bad_request(fmt::format("'{}' is empty", param), param);
    const int64_t n_ctx = batcher_.n_ctx();
    const int64_t n_prompt = int64_t(p.prompt.size());
    if (n_prompt + 1 > n_ctx || (r.max_tokens > 0 && n_prompt + r.max_tokens > n_ctx)) {
        const std::string msg =
            r.max_tokens > 0
                ? fmt::format("This model's maximum context length is {} tokens. However, you requested {} tokens "
                              "({} in the {}, {} in the completion). Please reduce the length of the {} or completion.",
                              n_ctx, n_prompt + r.max_tokens, n_prompt, param, r.max_tokens, param)
                : fmt::format("This model's maximum context length is {} tokens. However, your {} resulted in {} "
                              "tokens. Please reduce the length of the {}.",
                              n_ctx, param, n_prompt, param);
        throw ApiError(400, "invalid_request_error", msg, param, "context_length_exceeded");
    }
    p.grammar = grammar_for(r);  // last: compiling a schema is the expensive part
    return p;
}

std::shared_ptr<CompletionHandler::Exchange> CompletionHandler::schedule(const CompletionRequest& r, const Prepared& p) {
    auto ex = std::make_shared<Exchange>();
    ex->choices.resize(size_t(r.n));
    model::SamplerParams sp;
    sp.temperature = r.temperature;
    sp.top_p = r.top_p;
    sp.top_k = 0;
    sp.min_p = 0;
    sp.repeat_penalty = 1.0f;
    sp.presence_penalty = r.presence_penalty;
    sp.frequency_penalty = r.frequency_penalty;
    if (p.grammar) {
        sp.grammar = p.grammar;
        sp.grammar_tokens = token_table();
        // the budget the grammar must close within (docs/grammar.md): max_tokens, else the context
        sp.max_tokens = r.max_tokens > 0 ? r.max_tokens : batcher_.n_ctx() - int64_t(p.prompt.size());
    }
    const uint64_t seed = r.seed ? *r.seed : std::random_device{}();
    const model::Tokenizer& tok = batcher_.model().tokenizer();
    const int64_t n_vocab = batcher_.model().hparams().n_vocab;
    std::vector<runtime::GenRequest> reqs;
    for (int i = 0; i < r.n; ++i) {
        runtime::GenRequest g;
        g.prompt = p.prompt;
        g.sampling = sp;
        g.sampling.seed = seed + uint64_t(i);  // choice i: its own stream of draws
        g.max_tokens = r.max_tokens;
        g.stop = r.stop;
        g.ignore_eos = r.ignore_eos;
        g.cancelled = ex->cancelled;
        // Batcher callbacks run on its engine thread, possibly after this handler is gone
        // (shutdown): they capture only the exchange and what outlives the batcher.
        g.on_text = [ex, i](const std::string& t) {
            std::lock_guard<std::mutex> lock(ex->mu);
            ex->choices[size_t(i)].pieces.push_back(t);
            ex->cv.notify_all();
        };
        if (r.logprobs || r.return_token_ids)
            g.on_token = [ex, i, &tok, n_vocab, want = r.logprobs, top = r.top_logprobs, keep_eog = r.ignore_eos](
                             int32_t t, const float* logits) {
                if (tok.is_eog(t) && !keep_eog) return;  // the end, not part of the output
                TokenLogprob lp;
                if (want) lp = token_logprob(tok, t, logits, n_vocab, top);
                std::lock_guard<std::mutex> lock(ex->mu);
                if (want) ex->choices[size_t(i)].logprobs.push_back(std::move(lp));
                ex->choices[size_t(i)].token_ids.push_back(t);
            };
        g.on_done = [ex, i, m = &metrics_](const runtime::GenResult& res) {
            m->inc("duet_completions_total");
            m->inc("duet_prompt_tokens_total", double(res.prompt_tokens));
            m->inc("duet_generation_tokens_total", double(res.completion_tokens));
            if (res.completion_tokens > 0) {
                m->observe("duet_ttft_seconds", res.ttft_ms / 1e3);
                m->observe("duet_request_seconds", res.total_ms / 1e3);
            }
            if (res.completion_tokens > 1)
                m->observe("duet_tbt_seconds", (res.total_ms - res.ttft_ms) / 1e3 / double(res.completion_tokens - 1));
            std::lock_guard<std::mutex> lock(ex->mu);
            ex->choices[size_t(i)].result = res;
            ex->choices[size_t(i)].done = true;
            ex->cv.notify_all();
        };
        reqs.push_back(std::move(g));
    }
    const char* param = r.chat ? "messages" : "prompt";
    const int64_t n_prompt = int64_t(p.prompt.size());
    switch (batcher_.submit_group(std::move(reqs))) {
        case runtime::SubmitStatus::ACCEPTED: break;
        case runtime::SubmitStatus::QUEUE_FULL:
            throw ApiError::rate_limited("The server's request queue is full; retry later");
        case runtime::SubmitStatus::PROMPT_TOO_LONG:
            throw ApiError(400, "invalid_request_error",
                           fmt::format("This model's maximum context length is {} tokens. However, your {} resulted "
                                       "in {} tokens.", batcher_.n_ctx(), param, n_prompt),
                           param, "context_length_exceeded");
        case runtime::SubmitStatus::KV_TOO_SMALL:
            throw ApiError::unavailable(fmt::format(
                "The KV cache pool ({} blocks) cannot hold a prompt of {} tokens even when empty; start the server "
                "with a larger --kv-blocks (or, with --kv-blocks 0, a larger --ctx or --parallel)",
                batcher_.stats().kv_blocks_total, n_prompt));
        case runtime::SubmitStatus::GROUP_TOO_LARGE:
            throw ApiError::bad_request(fmt::format("'n' = {} is more than this server runs at once", r.n), "n");
        case runtime::SubmitStatus::STOPPED: throw ApiError::unavailable("The server is shutting down");
    }
    return ex;
}

void CompletionHandler::observe_in_batch(const json& in_batch) const {
    for (const char* side : {"baseline", "target"}) {
        const auto it = in_batch.find(side);
        if (it == in_batch.end() || !it->is_object() || it->value("tokens", 0) < 1) continue;
        metrics_.observe(fmt::format("duet_modelled_{}_ttft_seconds", side), (*it)["ttft_ms"].get<double>() / 1e3);
        if ((*it)["tokens"].get<int64_t>() > 1)
            metrics_.observe(fmt::format("duet_modelled_{}_tpot_seconds", side), (*it)["tpot_ms"].get<double>() / 1e3);
    }
}

json CompletionHandler::duet_json(const std::vector<runtime::GenResult>& results) const {
    const auto& first = results.at(0);
    int64_t completion = 0, shared = 0;
    for (const auto& r : results) completion += r.completion_tokens, shared += r.forked_tokens;
    json d = timings_.by_size ? timings_.by_size(first.prompt_tokens, completion) : json::object();
    if (timings_.in_batch) {
        d["in_batch"] = timings_.in_batch(first.seq_id);
        observe_in_batch(d["in_batch"]);
    }
    d["host"] = {{"queue_ms", first.queue_ms}, {"ttft_ms", first.ttft_ms}, {"total_ms", first.total_ms}};
    d["shared_prompt_tokens"] = shared;  // n > 1: prompt tokens choices 2..n forked instead of computing
    return d;
}

void CompletionHandler::render_json(const CompletionRequest& r, const Prepared& p, Exchange& ex,
                                    httplib::Response& res) {
    std::unique_lock<std::mutex> lock(ex.mu);
    // A client that leaves is noticed within kGonePollMs: its request is cancelled, and the
    // batcher drops it at its next step (nobody reads the result).
    while (!ex.cv.wait_for(lock, std::chrono::milliseconds(kGonePollMs), [&] { return ex.all_done(); })) {
        if (client_gone()) {
            ex.cancelled->store(true);
            metrics_.inc("duet_requests_abandoned_total");
            throw ApiError::client_closed();
        }
    }
    json choices = json::array();
    std::vector<runtime::GenResult> results;
    for (size_t i = 0; i < ex.choices.size(); ++i) {
        auto& c = ex.choices[i];
        if (c.result.finish_reason == "error") throw ApiError(500, "server_error", c.result.error);
        results.push_back(c.result);
        ToolCallStream stream(p.tool_mode, settings_.chat_template, p.tool_names);
        for (const auto& piece : c.pieces) stream.feed(piece);
        stream.finish();
        json choice = {{"index", i}, {"finish_reason", finish_reason(c.result, stream.called())}};
        if (r.chat) {
            json msg = {{"role", "assistant"}, {"content", stream.content()}};
            if (stream.called()) {
                msg["content"] = stream.content().empty() ? json(nullptr) : json(stream.content());
                msg["tool_calls"] = tool_calls_json(stream.calls());
            }
            choice["message"] = msg;
            choice["logprobs"] = r.logprobs ? chat_logprobs_json(c.logprobs) : json(nullptr);
        } else {
            choice["text"] = stream.content();
            choice["logprobs"] = r.logprobs ? completion_logprobs_json(c.logprobs, 0) : json(nullptr);
        }
        if (r.return_token_ids) choice["token_ids"] = c.token_ids;
        choices.push_back(choice);
    }
    json body = {{"id", p.id},         {"object", r.chat ? "chat.completion" : "text_completion"},
                 {"created", p.created}, {"model", settings_.model_id},
                 {"choices", choices},   {"usage", usage_json(results)},
                 {"duet", duet_json(results)}};
    if (r.return_token_ids) body["prompt_token_ids"] = p.prompt;
    res.status = 200;
    res.set_content(dump_json(body), "application/json");
}

}  // namespace duet::server
