#pragma once
// How a handler reads a request body, and the API key comparison. (Connections, request heads
// and their deadlines are the front's: http_front.h.)
//
//   body         read_body(): counts bytes as they arrive (Content-Length, chunked or
//                until-close alike, whatever the Content-Type: every body is the JSON the
//                route expects) and stops at max_bytes with a 413 whose message states that
//                same number; the rest of the body never reaches memory (the front closes
//                a chunked request's connection after its response).
//
// Thread safety: read_body runs on the calling handler's thread.
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

// Constant-time comparison of a presented API key with the configured one: the time depends
// only on the presented key's length, never on where the first differing byte is.
bool keys_equal(const std::string& given, const std::string& want);

}  // namespace duet::server
