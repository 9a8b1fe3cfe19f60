#pragma once
// duet's HTTP API: connections and request heads are read by HttpFront (http_front.h), requests
// are routed and answered by cpp-httplib. OpenAI-compatible completions (with SSE streaming), models,
// tasks, health and Prometheus metrics. See docs/server.md for every route and status.
//
//   auth      Bearer key on /v1/* when ServerOptions::api_key is set (401 otherwise), compared
//             byte for byte with the raw Authorization field;
//             /health and /metrics are open, as in vLLM and llama.cpp's server.
//   errors    OpenAI's JSON error object for every 4xx/5xx (api_error.h).
//   limits    request heads, bodies, deadlines and open connections (http_front.h,
//             http_transport.h); docs/server.md lists every limit with its flag.
//
// Thread safety: handlers run on httplib's worker threads; generation goes through the
// Batcher (thread-safe submit), tasks through the TaskService.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "model/chat_template.h"
#include "runtime/batcher.h"
#include "server/metrics.h"
#include "server/task_service.h"
#include "server/timings_cache.h"


namespace duet::server {

struct ServerOptions {
    std::string host = "127.0.0.1";
    int port = 8080;                      // 0: any free port (see HttpServer::port())
    std::optional<std::string> api_key;   // nullopt: no auth (only with --no-auth)
    std::string model_id;                 // the name /v1/models lists and requests must use
    size_t max_body_bytes = 1 << 20;      // larger bodies get 413 (checked while reading)
    int http_threads = 64;                // requests served at once by worker threads
    size_t max_connections = 256;         // open connections at most (idle, reading or served); more get 503
    size_t max_head_bytes = 32768;        // request line + headers; more get 431
    size_t max_headers = 100;             // header fields; more get 431
    int head_timeout_ms = 10000;          // a request head must arrive within this of its first byte (408)
    int idle_timeout_ms = 5000;           // a connection without a request byte this long is closed
    int body_timeout_ms = 30000;          // a request body must arrive within this of its head (408)
    std::string api_prefix;               // "" or "/api": the OpenAI routes are served at <prefix>/v1/...
    model::ChatTemplate chat_template = model::ChatTemplate::CHATML;
    std::string responses_db = ":memory:";  // SQLite file of stored /v1/responses (responses_store.h)
    int64_t max_stored_responses = 1000;    // the oldest is deleted past this many
    size_t max_schema_work = size_t(1) << 20;  // JSON values a schema's compilation may copy (--max-schema-work)
};

class HttpServer {
public:
    HttpServer(ServerOptions opts, runtime::Batcher& batcher, TaskService& tasks, Metrics& metrics,
               ModelledTimings timings);
    ~HttpServer();

    // Binds host:port; throws duet::Error naming the address when it cannot.
    void bind();
    int port() const { return port_; }
    void run();   // serves until stop(); call after bind()
    void stop();  // from any thread (signal handler thread, tests)

private:
    void routes();
    void check_auth() const;
    void handle_completion(const std::string& body, bool chat, struct HttpExchange& ex);

    ServerOptions opts_;
    runtime::Batcher& batcher_;
    TaskService& tasks_;
    Metrics& metrics_;
    ModelledTimings timings_;
    std::unique_ptr<class RoutedServer> http_;  // httplib routing, handlers, responses
    std::unique_ptr<class HttpFront> front_;    // connections, request heads, deadlines (http_front.h)
    std::unique_ptr<class CompletionHandler> completions_;  // POST /v1/chat/completions, /v1/completions
    std::unique_ptr<class ResponsesStore> responses_store_;
    std::unique_ptr<class ResponsesHandler> responses_;     // /v1/responses (responses_handler.h)
    int port_ = 0;
};

// Registers the metric names the server updates (so /metrics lists them from the start).
void register_server_metrics(Metrics& m);

}  // namespace duet::server
