#pragma once
// Tool (function) calling in the chat templates that have a tool format (docs/server.md):
//
//   llama3   Llama 3.1 JSON tool calling: the tool list goes into the first user message, a
//            call is {"name": N, "parameters": {...}}, results come back as role "ipython".
//   chatml   Qwen2.5 (Hermes style): the tool list in the system message inside <tools>, a call
//            is <tool_call>\n{"name": N, "arguments": {...}}\n</tool_call>, results in
//            <tool_response> blocks of a user turn.
//   mistral  [AVAILABLE_TOOLS] [...][/AVAILABLE_TOOLS] before the last user turn, calls as
//            [TOOL_CALLS] [{"name": N, "arguments": {...}}], results as [TOOL_RESULTS].
//   llama2   no tool format: render_chat_tools throws.
//
// The same format drives three things: rendering the prompt, the grammar that forces a call
// (tool_choice required / a named function), and recognising a call in free text (auto).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/chat_template.h"
#include "model/grammar/json_schema.h"

namespace duet::model {

// A function call the assistant made (OpenAI tool_calls); arguments is JSON object text.
struct ChatToolCall {
    std::string id, name, arguments;
};

// A chat message with the tool-calling parts: roles system, user, assistant (with tool_calls)
// and tool (answering tool_call_id).
struct ToolChatMessage {
    std::string role;
    std::string content;
    std::vector<ChatToolCall> tool_calls;
    std::string tool_call_id;
};

struct ToolFunction {
    std::string name;
    std::string description;
    nlohmann::ordered_json parameters = {{"type", "object"}, {"properties", nlohmann::ordered_json::object()}};
};

bool chat_template_has_tools(ChatTemplate t);

// Messages (roles system, user, assistant with optional tool_calls, tool) and the tool list in
// t's format. Throws duet::Error naming the template when it has no tool format, and for a
// role it cannot express (naming the message index and role).
std::string render_chat_tools(ChatTemplate t, const std::vector<ToolChatMessage>& messages,
                              const std::vector<ToolFunction>& tools, bool add_generation_prompt, std::string_view bos,
                              std::string_view eos);

// Text of one call in t's format: tool_call_prefix(name) + arguments JSON + tool_call_suffix().
std::string tool_call_prefix(ChatTemplate t, std::string_view name);
std::string tool_call_suffix(ChatTemplate t);
// What a call starts with (after leading whitespace): "{", "<tool_call>", "[TOOL_CALLS]".
std::string_view tool_call_marker(ChatTemplate t);

// Grammar text (grammar/grammar.h) matching exactly one call, in t's format, to one of
// `tools` with arguments valid against its parameters schema, compiled within `limits`. Throws
// duet::Error naming the function for a schema the compiler refuses, GrammarCancelled when
// limits.cancelled says so.
std::string tool_call_grammar(ChatTemplate t, const std::vector<ToolFunction>& tools,
                              const grammar::SchemaLimits& limits = {});

// The calls in generated text written in t's format (ids left empty) and the text before
// them; nullopt when the text is not a well-formed call.
struct ParsedToolCalls {
    std::string content;  // text before the first call (chatml may write some), trimmed
    std::vector<ChatToolCall> calls;
};
std::optional<ParsedToolCalls> parse_tool_calls(ChatTemplate t, std::string_view text);

}  // namespace duet::model
