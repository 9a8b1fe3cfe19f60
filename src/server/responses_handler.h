#pragma once
// POST /v1/responses, GET and DELETE /v1/responses/{id}: OpenAI's Responses API over the same
// request machinery as /v1/chat/completions (completion_handler.h):
//   parse     the body -> ResponsesRequest (responses_request.h)
//   history   previous_response_id -> the stored conversation (responses_store.h), followed by
//             the new input items; instructions (not carried over) become a system message
//   prepare   items -> chat messages -> CompletionRequest -> the chat route's prepare(): the
//             same template, tool and JSON Schema grammars, context checks. When the stored
//             response's tokens are a prefix of the new prompt's text, the prompt starts with
//             exactly those tokens, so the prefix cache reuses their KV blocks.
//   schedule  the chat route's schedule() (one choice)
//   render    a response object, or the Responses SSE events (responses_output.h); stored
//             when `store` is true (the default)
//
// Thread safety: as CompletionHandler; the store is thread-safe.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "server/completion_handler.h"
#include "server/responses_request.h"
#include "server/responses_store.h"

namespace httplib {
struct Response;
}

namespace duet::server {

class ResponsesHandler {
  public:
    ResponsesHandler(CompletionHandler& completions, ResponsesStore& store)
        : completions_(completions), store_(store) {}

    // Writes the response (JSON or an SSE stream) into res; throws ApiError for a request
    // that cannot be served.
    void create(const std::string& body, httplib::Response& res);
    // The stored response object; ApiError 404 when there is none with this id.
    nlohmann::ordered_json get(const std::string& id) const;
    // {"id", "object": "response", "deleted": true}; ApiError 404 when there is none.
    nlohmann::ordered_json remove(const std::string& id);

    struct Turn;  // one request being answered

  private:
    void prepare(Turn& t);
    void continue_prompt(Turn& t) const;
    nlohmann::ordered_json response_json(const Turn& t, const char* status) const;
    void finish(Turn& t, const runtime::GenResult& result, const std::vector<int32_t>& generated);
    void render_json(std::shared_ptr<Turn> t, httplib::Response& res);
    void render_stream(std::shared_ptr<Turn> t, httplib::Response& res);

    CompletionHandler& completions_;
    ResponsesStore& store_;
};

}  // namespace duet::server
