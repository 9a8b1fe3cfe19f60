#include "server/http_transport.h"

#include <fmt/format.h>

#include <cstdint>

#include "server/api_error.h"

namespace duet::server {

std::string body_too_large_message(size_t max_bytes) {
    return fmt::format("Request body is larger than the server's limit of {} bytes (--max-body-bytes)", max_bytes);
}

std::string read_body(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader,
                      size_t max_bytes) {
    if (req.is_multipart_form_data()) {
        res.set_header("Connection", "close");  // the body stays unread
        throw ApiError::bad_request("multipart/form-data bodies are not accepted: send the JSON object itself as the "
                                    "request body");
    }
    std::string body;
    bool too_large = false;
    const bool ok = reader([&](const char* data, size_t n) {
        if (n > max_bytes - body.size()) {
            too_large = true;
            return false;  // stop reading: the rest never reaches memory
        }
        body.append(data, n);
        return true;
    });
    // httplib refuses a Content-Length above the limit itself (status 413) without calling us.
    // "Connection: close" asks the client to drop the connection: its stream is out of step.
    if (too_large || (!ok && res.status == 413)) {
        res.set_header("Connection", "close");
        throw ApiError::too_large(body_too_large_message(max_bytes));
    }
    if (!ok) {
        res.set_header("Connection", "close");
        throw ApiError::bad_request("the request body could not be read (malformed chunked encoding or a short body)");
    }
    return body;
}

bool keys_equal(const std::string& given, const std::string& want) {
    // Every byte of `given` is compared (against want's bytes cycled, or 0 when want is empty);
    // a length difference alone makes them unequal.
    unsigned diff = unsigned(given.size() != want.size());
    for (size_t i = 0; i < given.size(); ++i) {
        const uint8_t w = want.empty() ? 0 : uint8_t(want[i % want.size()]);
        diff |= unsigned(uint8_t(given[i]) ^ w);
    }
    return diff == 0 && !want.empty();
}

}  // namespace duet::server
