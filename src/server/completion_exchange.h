#pragma once
// Internal to the completion handler (completion_handler.cpp, completion_stream.cpp): what
// one request prepared, and the per-choice state the batcher's thread fills in.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "server/completion_handler.h"
#include "server/openai_render.h"

namespace duet::server {

struct CompletionHandler::Prepared {
    std::vector<int32_t> prompt;
    std::shared_ptr<const model::grammar::Grammar> grammar;  // nullptr: free text
    ToolCallStream::Mode tool_mode = ToolCallStream::Mode::PLAIN;
    std::vector<std::string> tool_names;  // FORCED: the functions the call may name
    std::string id;                       // chatcmpl-... / cmpl-...
    int64_t created = 0;
};

struct CompletionHandler::Exchange {
    struct Choice {
        std::deque<std::string> pieces;  // text not yet rendered
        std::vector<TokenLogprob> logprobs;
        std::vector<int32_t> token_ids;
        bool done = false;
        runtime::GenResult result;
    };
    std::mutex mu;
    std::condition_variable cv;
    std::vector<Choice> choices;
    std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);

    bool all_done() const {
        for (const auto& c : choices)
            if (!c.done) return false;
        return true;
    }
};

// "stop" becomes "tool_calls" when the choice ended in a call.
inline std::string finish_reason(const runtime::GenResult& res, bool called) {
    return called && res.finish_reason == "stop" ? "tool_calls" : res.finish_reason;
}

}  // namespace duet::server
