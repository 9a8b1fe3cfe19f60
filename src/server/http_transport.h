#pragma once
// The transport under HttpServer: how a request body is read and how many connections are
// served at once. Both limits hold *while* reading, before anything large is allocated.
//
//   body         read_body(): counts bytes as they arrive (Content-Length, chunked or
//                until-close alike, whatever the Content-Type: every body is the JSON the
//                route expects) and stops at max_bytes with a 413 whose message states that
//                same number; the rest of the body never reaches memory (cpp-httplib 0.11
//                keeps the connection: what follows is read as the next request and refused).
//   connections  ConnectionLimiter: an httplib task queue that counts open connections
//                (served or waiting for a worker). Past the cap a connection is still read
//                (headers only) by a small overflow pool and answered 503; the
//                server's pre-routing handler asks over_connection_cap() to know.
//
// Thread safety: read_body runs on the calling handler's thread; ConnectionLimiter is called by
// httplib's accept thread and its own workers.
#include <httplib.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

namespace duet::server {

// The request's body, read through `reader` with at most max_bytes kept in memory.
// Throws ApiError 413 (too large; sets "Connection: close" on res) or 400 (malformed
// transfer encoding, multipart/form-data, which is not a JSON body).
std::string read_body(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader,
                      size_t max_bytes);

// The message of every 413: one limit, one number.
std::string body_too_large_message(size_t max_bytes);

class ConnectionLimiter : public httplib::TaskQueue {
public:
    // worker_threads serve connections; at most max_connections are open at once (served or
    // queued for a worker); max_connections >= 1.
    ConnectionLimiter(size_t worker_threads, size_t max_connections);
    void enqueue(std::function<void()> fn) override;
    void shutdown() override;

    size_t open_connections() const { return open_.load(); }

private:
    httplib::ThreadPool workers_;
    httplib::ThreadPool overflow_;  // answers connections over the cap with 503
    std::atomic<size_t> open_{0};
    const size_t max_connections_;
};

// Constant-time comparison of a presented API key with the configured one: the time depends
// only on the presented key's length, never on where the first differing byte is.
bool keys_equal(const std::string& given, const std::string& want);

// True on the thread answering a connection over ConnectionLimiter's cap.
bool over_connection_cap();

}  // namespace duet::server
