#pragma once
// The connection front of the HTTP server: accepts connections and reads every request's head
// (and its Content-Length body) on one event thread, so that a slow or idle client holds a
// socket and a bounded buffer, never a worker. A request is handed to a worker only when it
// is complete; the worker runs cpp-httplib's request processing (routing, handlers,
// responses, SSE) on a stream that serves the bytes already read. Keep-alive connections
// return to the front between requests. See docs/server.md ("Limits") for why this front
// exists: Debian's cpp-httplib 0.11.4 has no header-count limit, no deadline for a whole
// request head, one worker per connection from accept on, and percent-decodes header values.
//
//   head         at most max_head_bytes and max_headers fields (431), no NUL / bare CR (400);
//                the whole head within head_timeout_ms of its first byte (408)
//   idle         a connection with no request byte for idle_timeout_ms is closed (after accept
//                or between keep-alive requests)
//   body         Content-Length bodies are read by the front too, within body_timeout_ms; one
//                above max_body_bytes is answered 413 without reading it; chunked bodies are
//                read by the worker (each read within io_timeout_ms, the whole within
//                body_timeout_ms) and the connection is closed after their response
//   connections  at most max_connections open (front + workers); beyond that a connection's
//                head is read (at most kOverCapConnections such at once, 1 s) and answered 503
//   writes       each write within io_timeout_ms, or the connection is dropped
//
// Memory: at most (max_connections + kOverCapConnections) x (max_head_bytes + max_body_bytes)
// of buffered input, whatever the clients send.
//
// Thread safety: start()/stop() from one owner thread; current_request(), client_gone() and
// server_stopping() on a worker thread inside a handler.
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/request_head.h"

namespace httplib {
class Stream;
}

namespace duet::server {

struct FrontLimits {
    HeadLimits head;
    size_t max_body_bytes = 1 << 20;
    size_t max_connections = 256;
    int head_timeout_ms = 10000;
    int idle_timeout_ms = 5000;
    int body_timeout_ms = 30000;
    int io_timeout_ms = 5000;
    size_t keep_alive_max = 1000;  // requests per connection
    size_t worker_threads = 64;
};

// What a worker knows about the request it is answering (raw, as received).
struct CurrentRequest {
    const RequestHead* head = nullptr;
    int fd = -1;
    const std::atomic<bool>* stopping = nullptr;  // the front's: stop() was called
};

// Processes one complete request read from `stream`; close_connection: this is the last
// request of the connection. Returns false when the connection must be closed (write failed,
// client asked). Implemented by HttpServer over httplib::Server::process_request.
using ProcessRequest = std::function<bool(httplib::Stream& stream, bool close_connection, bool& connection_closed)>;

// An error response written by the front itself (status line, JSON body, Connection: close).
std::string front_error_response(int status, const std::string& message);

class HttpFront {
  public:
    static constexpr size_t kOverCapConnections = 64;

    // on_refused(status): called on the event thread for every response the front writes itself.
    HttpFront(FrontLimits limits, ProcessRequest process, std::function<void(int status)> on_refused = {});
    ~HttpFront();

    // Binds and listens; port 0 picks a free port. Throws duet::Error naming the address.
    int bind(const std::string& host, int port);
    void run();   // serves until stop(); returns after in-flight requests finished
    void stop();  // any thread, async-signal-unsafe parts excluded (it writes an eventfd)

    size_t open_connections() const { return open_.load(); }

    struct Conn;  // one connection (http_front.cpp)

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::atomic<size_t> open_{0};
};

// The request the calling worker thread is answering (nullptr head outside a request).
const CurrentRequest& current_request();

// True when the client of the current request has closed its connection (or reset it):
// the result nobody waits for can be abandoned. Never blocks.
bool client_gone();

// True when the server answering the current request is stopping (HttpFront::stop()): work
// that has not started generating (e.g. compiling a grammar) can be refused. Never blocks.
bool server_stopping();

}  // namespace duet::server
