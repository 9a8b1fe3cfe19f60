#pragma once
// Turns the generated text of one choice into OpenAI chat deltas when tools are in play:
//
//   PLAIN   no tools: every piece is a {"content": ...} delta.
//   FORCED  tool_choice required / a named function: the grammar makes the text exactly
//           tool_call_prefix(name) + arguments + tool_call_suffix(); once the prefix is complete
//           the call's header delta goes out (index, id, type, function.name, arguments ""),
//           then the arguments stream in pieces, holding back what could be the suffix.
//   AUTO    tool_choice auto: text that starts like the template's call marker is held; at the
//           end it becomes tool_calls if it parses as a call, else content. Text that cannot
//           be a call streams as content at once.
//
// finish() returns the remaining deltas and whether the choice ended as tool calls
// (finish_reason "tool_calls"). Thread safety: per-choice state, one thread.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/chat_template.h"
#include "model/chat_tools.h"

namespace duet::server {

class ToolCallStream {
public:
    enum class Mode { PLAIN, FORCED, AUTO };
    ToolCallStream(Mode mode, model::ChatTemplate tmpl, std::vector<std::string> tool_names);

    std::vector<nlohmann::json> feed(const std::string& piece);
    std::vector<nlohmann::json> finish();
    bool called() const { return called_; }
    // After finish(): the whole message (content or tool_calls), for non-streamed responses.
    const std::vector<model::ChatToolCall>& calls() const { return calls_; }
    const std::string& content() const { return content_; }

private:
    enum class State { UNDECIDED, TEXT, CALL_HEADER, CALL_ARGS };
    Mode mode_;
    model::ChatTemplate tmpl_;
    std::vector<std::string> names_;
    State state_;
    std::string buf_;        // text not yet sent
    std::string all_;        // the whole text
    std::string content_;    // content sent or to send
    std::string call_id_;
    std::vector<model::ChatToolCall> calls_;
    bool called_ = false;

    nlohmann::json header_delta(size_t index, const model::ChatToolCall& c) const;
    static nlohmann::json args_delta(size_t index, const std::string& args);
};

}  // namespace duet::server
