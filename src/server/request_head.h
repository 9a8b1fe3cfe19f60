#pragma once
// The head of one HTTP/1.1 request (request line + header fields + blank line), checked as
// it arrives, before anything is routed: the front (http_front.h) calls check_request_head()
// on the bytes received so far and learns whether the head is complete, how long the body
// is, or which limit it broke. Nothing here allocates in proportion to the input beyond the
// fields it returns.
//
//   size      the head (up to and including its blank line) is at most max_head_bytes
//   count     at most max_headers header fields
//   bytes     NUL, a bare CR, an obsolete line folding or a field line without ':' is a 400
//             (RFC 9110 5.5, RFC 9112 5.2): nothing downstream sees a value cut short
//   framing   Content-Length (digits only; several must agree) or Transfer-Encoding:
//             chunked, never both (RFC 9112 6.3: a smuggling vector)
//   auth      the raw bytes of the Authorization field, exactly as sent (no percent-
//             decoding, no cut at NUL: NUL is refused above); trimmed of the optional
//             whitespace around a field value only
//
// Thread safety: pure function of its arguments.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace duet::server {

struct HeadLimits {
    size_t max_head_bytes = 32768;  // request line + fields + blank line
    size_t max_headers = 100;       // header fields
};

struct RequestHead {
    enum class State { INCOMPLETE, COMPLETE, BAD };
    State state = State::INCOMPLETE;
    // COMPLETE:
    size_t head_bytes = 0;  // up to and including the blank line
    std::optional<uint64_t> content_length;
    bool chunked = false;
    bool expect_continue = false;              // Expect: 100-continue
    std::optional<std::string> authorization;  // raw field value
    size_t n_authorization = 0;                // Authorization fields seen
    // BAD: the status (400 or 431) and the message, naming the limit or the defect.
    int status = 0;
    std::string message;
};

// Looks at the first bytes of a connection's input. INCOMPLETE: no blank line yet and no
// limit broken so far (read more, then call again with all bytes).
RequestHead check_request_head(std::string_view bytes, const HeadLimits& limits);

// The messages of the two size limits (also used by tests).
std::string head_too_large_message(size_t max_head_bytes);
std::string too_many_headers_message(size_t max_headers);

}  // namespace duet::server
