// libFuzzer target for the chat / completion request parser (server/completion_request.h):
// any body must parse or end in one ApiError (the HTTP layer turns it into a 400 naming the
// parameter); a parsed request must respect the documented limits. Input: first byte odd =
// POST /v1/chat/completions, even = /v1/completions; the rest is the body (seeds start with
// 'c' or 'p').
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "server/api_error.h"
#include "server/completion_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const bool chat = data[0] & 1;
    const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
    try {
        const duet::server::CompletionRequest r = duet::server::parse_completion_request(body, chat);
        if (r.chat != chat) duet::fuzz::unexpected("parsed request has the wrong endpoint");
        if (r.stop.size() > 4) duet::fuzz::unexpected("more than 4 stop sequences accepted");
        if (!std::isfinite(r.temperature) || r.temperature < 0) duet::fuzz::unexpected("bad temperature accepted");
        if (!std::isfinite(r.top_p) || r.top_p < 0 || r.top_p > 1) duet::fuzz::unexpected("bad top_p accepted");
        if (r.max_tokens < -1) duet::fuzz::unexpected("negative max_tokens accepted");
        if (chat && r.messages.empty()) duet::fuzz::unexpected("chat request without messages accepted");
    } catch (const duet::server::ApiError& e) {
        if (e.status() != 400) duet::fuzz::unexpected("parser error that is not a 400", &e);
    } catch (const std::exception& e) {
        duet::fuzz::unexpected("exception other than ApiError", &e);
    }
    return 0;
}
