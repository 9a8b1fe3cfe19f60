// libFuzzer target for hostile request input before and after the HTTP front
// (docs/server.md, "Limits"): request heads (server/request_head.h) and request bodies through
// the JSON budget, the chat parser and the chat-template renderer with tools (the recursive
// py_json of model/chat_tools.cpp). Input: first byte 'h' = a request head, anything else = a
// chat body. Every input must end in a verdict or a 400 / duet::Error, within the budgets:
// no crash, no stack overflow, no unbounded time (scripts/fuzz.sh's -timeout).
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/json_budget.h"
#include "fuzz_util.h"
#include "model/chat_tools.h"
#include "server/api_error.h"
#include "server/completion_request.h"
#include "server/request_head.h"

namespace {

void fuzz_head(const std::string& in) {
    duet::server::HeadLimits l;
    l.max_head_bytes = 4096;
    l.max_headers = 16;
    const auto h = duet::server::check_request_head(in, l);
    using S = duet::server::RequestHead::State;
    if (h.state == S::COMPLETE) {
        if (h.head_bytes > l.max_head_bytes || h.head_bytes > in.size()) duet::fuzz::unexpected("head past its limit");
        if (h.chunked && h.content_length) duet::fuzz::unexpected("both framings accepted");
        if (in.find('\0') < h.head_bytes) duet::fuzz::unexpected("NUL in an accepted head");
    } else if (h.state == S::BAD && h.status != 400 && h.status != 431) {
        duet::fuzz::unexpected("head refused with a status other than 400/431");
    }
}

void fuzz_body(const std::string& body) {
    try {
        const auto r = duet::server::parse_completion_request(body, true);
        // What passed the budget renders without unbounded recursion.
        std::vector<duet::model::ToolChatMessage> msgs;
        for (const auto& m : r.messages) msgs.push_back({m.role, m.content, m.tool_calls, m.tool_call_id});
        for (auto t : {duet::model::ChatTemplate::CHATML, duet::model::ChatTemplate::MISTRAL,
                       duet::model::ChatTemplate::LLAMA3}) {
            try {
                duet::model::render_chat_tools(t, msgs, r.tools, true, "<s>", "</s>");
            } catch (const duet::Error&) {
            }
        }
    } catch (const duet::server::ApiError& e) {
        if (e.status() != 400) duet::fuzz::unexpected("parser error that is not a 400", &e);
        if (!duet::json_budget_error(body, {}, "x").empty() && std::string(e.what()).find("request body") != 0)
            duet::fuzz::unexpected("an over-budget body refused with another message", &e);
    } catch (const std::exception& e) {
        duet::fuzz::unexpected("exception other than ApiError", &e);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const std::string rest(reinterpret_cast<const char*>(data + 1), size - 1);
    if (data[0] == 'h')
        fuzz_head(rest);
    else
        fuzz_body(rest);
    return 0;
}
