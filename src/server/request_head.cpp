#include "server/request_head.h"

#include <fmt/format.h>
#include <strings.h>

namespace duet::server {
namespace {

RequestHead bad(int status, std::string message) {
    RequestHead h;
    h.state = RequestHead::State::BAD;
    h.status = status;
    h.message = std::move(message);
    return h;
}

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::string_view trim_ows(std::string_view v) {  // optional whitespace: SP / HTAB
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    return v;
}

// Applies one header field to the head; returns an error message or "".
std::string apply_field(std::string_view name, std::string_view value, RequestHead& h) {
    if (iequals(name, "Content-Length")) {
        if (value.empty() || value.size() > 19 || value.find_first_not_of("0123456789") != std::string_view::npos)
            return fmt::format("Content-Length '{}' is not a decimal number of bytes", value.substr(0, 40));
        const uint64_t n = std::stoull(std::string(value));
        if (h.content_length && *h.content_length != n) return "the request has two different Content-Length fields";
        h.content_length = n;
    } else if (iequals(name, "Transfer-Encoding")) {
        if (!iequals(value, "chunked"))
            return fmt::format("Transfer-Encoding '{}' is not supported (allowed: chunked)", value.substr(0, 40));
        h.chunked = true;
    } else if (iequals(name, "Expect")) {
        h.expect_continue = iequals(value, "100-continue");
    } else if (iequals(name, "Authorization")) {
        if (h.n_authorization++ == 0) h.authorization = std::string(value);
    }
    return "";
}

}  // namespace

std::string head_too_large_message(size_t max_head_bytes) {
    return fmt::format("The request line and headers are larger than the server's limit of {} bytes (--max-head-bytes)",
                       max_head_bytes);
}

std::string too_many_headers_message(size_t max_headers) {
    return fmt::format("The request has more than {} header fields, the server's limit (--max-headers)", max_headers);
}

RequestHead check_request_head(std::string_view bytes, const HeadLimits& limits) {
    RequestHead h;
    const std::string_view in = bytes.substr(0, limits.max_head_bytes);
    size_t pos = 0, line_no = 0, n_fields = 0;
    for (;;) {
        const size_t nl = in.find('\n', pos);
        if (nl == std::string_view::npos) {
            if (bytes.size() >= limits.max_head_bytes) return bad(431, head_too_large_message(limits.max_head_bytes));
            // The incomplete tail may hold only the bytes a later line can have.
            if (in.find('\0', pos) != std::string_view::npos)
                return bad(400, "the request head contains a NUL byte (not allowed in HTTP header fields)");
            return h;
        }
        std::string_view line = in.substr(pos, nl - pos);
        pos = nl + 1;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.find('\0') != std::string_view::npos)
            return bad(400, "the request head contains a NUL byte (not allowed in HTTP header fields)");
        if (line.find('\r') != std::string_view::npos)
            return bad(400, "the request head contains a CR that does not end a line");
        if (line_no++ == 0) {
            if (line.empty()) return bad(400, "the request starts with an empty line, not a request line");
            continue;  // the request line: httplib parses and checks it
        }
        if (line.empty()) break;  // end of the head
        if (line.front() == ' ' || line.front() == '\t')
            return bad(400,
                       "the request head folds a header field over two lines (obsolete line folding is not "
                       "accepted)");
        if (++n_fields > limits.max_headers) return bad(431, too_many_headers_message(limits.max_headers));
        const size_t colon = line.find(':');
        if (colon == std::string_view::npos || colon == 0)
            return bad(400, fmt::format("header line {} has no field name followed by ':'", line_no - 1));
        const std::string_view name = line.substr(0, colon);
        if (name.find_first_of(" \t") != std::string_view::npos)
            return bad(400, fmt::format("header field name '{}' contains whitespace", name.substr(0, 40)));
        const std::string err = apply_field(name, trim_ows(line.substr(colon + 1)), h);
        if (!err.empty()) return bad(400, err);
    }
    if (h.chunked && h.content_length)
        return bad(400, "the request has both Content-Length and Transfer-Encoding (allowed: one of them)");
    h.state = RequestHead::State::COMPLETE;
    h.head_bytes = pos;
    return h;
}

}  // namespace duet::server
