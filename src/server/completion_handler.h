#pragma once
// POST /v1/chat/completions and /v1/completions, in four steps:
//   parse     the body -> CompletionRequest (completion_request.h), checked against this server
//   template  messages (+ tools) -> prompt tokens; response_format or a forced tool call ->
//             the grammar that constrains sampling (model/grammar/)
//   schedule  n GenRequests of the prompt -> Batcher::submit_group (choices 2..n fork the
//             prompt's KV blocks); text, logprobs and results collected per choice
//   render    one JSON response, or SSE chunks as text arrives (openai_render.h,
//             tool_call_stream.h)
//
// Thread safety: handle() runs on any number of HTTP threads at once; the token table is
// built once, under a lock. Batcher callbacks touch only the request's shared Exchange.
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "model/chat_template.h"
#include "model/grammar/grammar.h"
#include "model/grammar/json_schema.h"
#include "model/grammar/token_table.h"
#include "runtime/batcher.h"
#include "server/completion_request.h"
#include "server/metrics.h"
#include "server/timings_cache.h"
#include "server/tool_call_stream.h"

namespace httplib {
struct Response;
}

namespace duet::server {

struct CompletionSettings {
    std::string model_id;  // the name requests must use
    model::ChatTemplate chat_template = model::ChatTemplate::CHATML;
    size_t max_schema_work = model::grammar::SchemaLimits{}.max_copied_values;  // --max-schema-work
};

class CompletionHandler {
public:
    CompletionHandler(CompletionSettings settings, runtime::Batcher& batcher, Metrics& metrics, ModelledTimings timings);
    ~CompletionHandler();

    // Writes the response (JSON or an SSE stream) into res; throws ApiError for a request
    // that cannot be served.
    void handle(const std::string& body, bool chat, httplib::Response& res);

    struct Prepared;  // the prompt, grammar and tool mode of one request
    struct Exchange;  // per-choice text, logprobs and results, shared with the batcher thread

private:
    friend class ResponsesHandler;  // POST /v1/responses runs the same prepare and schedule

    Prepared prepare(const CompletionRequest& r);
    std::shared_ptr<Exchange> schedule(const CompletionRequest& r, const Prepared& p);
    void render_json(const CompletionRequest& r, const Prepared& p, Exchange& ex, httplib::Response& res);
    void render_stream(const CompletionRequest& r, const Prepared& p, std::shared_ptr<Exchange> ex,
                       httplib::Response& res);
    std::vector<int32_t> prompt_tokens(const CompletionRequest& r, const std::vector<model::ToolFunction>& shown);
    std::shared_ptr<const model::grammar::Grammar> grammar_for(const CompletionRequest& r);
    std::shared_ptr<const model::grammar::TokenTable> token_table();
    nlohmann::json duet_json(const std::vector<runtime::GenResult>& results) const;
    void observe_in_batch(const nlohmann::json& in_batch) const;  // the duet_modelled_* histograms

    CompletionSettings settings_;
    runtime::Batcher& batcher_;
    Metrics& metrics_;
    ModelledTimings timings_;
    std::mutex table_mu_;
    std::shared_ptr<const model::grammar::TokenTable> table_;
};

}  // namespace duet::server
