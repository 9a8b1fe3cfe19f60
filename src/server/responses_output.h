#pragma once
// The `output` items of a Responses API response and the stream events that build them, from
// the chat deltas ToolCallStream produces (tool_call_stream.h): text becomes a `message` item
// with one `output_text` part, each tool call a `function_call` item. Each call returns the
// events, in order, without their sequence_number (the writer numbers them):
//
//   text       response.output_item.added (message, content []), response.content_part.added,
//              response.output_text.delta ..., then when the item closes
//              response.output_text.done, response.content_part.done, response.output_item.done
//   call       response.output_item.added (function_call, arguments ""),
//              response.function_call_arguments.delta ..., then when it closes
//              response.function_call_arguments.done, response.output_item.done
//
// An item closes when the next one starts or at finish(); the last one is `incomplete` when
// the response was cut by max_output_tokens. A response with no text and no call has one
// empty message, so output[0] always exists. Thread safety: per-response state, one thread.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace duet::server {

class ResponsesOutput {
  public:
    // parallel_tool_calls false: calls after the first are dropped.
    explicit ResponsesOutput(bool parallel_tool_calls) : parallel_(parallel_tool_calls) {}

    std::vector<nlohmann::ordered_json> feed(const nlohmann::json& chat_delta);
    std::vector<nlohmann::ordered_json> finish(bool incomplete);

    const nlohmann::ordered_json& items() const { return items_; }
    std::string output_text() const;  // the text of every message item, concatenated

  private:
    enum class Open { NONE, MESSAGE, CALL };
    void open_message(std::vector<nlohmann::ordered_json>& out);
    void close(const char* status, std::vector<nlohmann::ordered_json>& out);

    bool parallel_;
    nlohmann::ordered_json items_ = nlohmann::ordered_json::array();
    Open open_ = Open::NONE;
    bool dropping_ = false;  // inside a call dropped by parallel_tool_calls = false
};

}  // namespace duet::server
