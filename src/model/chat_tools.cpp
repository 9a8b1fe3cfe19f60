#include "model/chat_tools.h"

#include "core/error.h"
#include "core/json_budget.h"
#include "model/grammar/grammar.h"
#include "model/grammar/json_schema.h"

namespace duet::model {
namespace {

using ojson = nlohmann::ordered_json;

constexpr std::string_view kWhitespace = " \t\n\r";

std::string_view trim(std::string_view s) {
    const size_t b = s.find_first_not_of(kWhitespace);
    if (b == std::string_view::npos) return {};
    return s.substr(b, s.find_last_not_of(kWhitespace) - b + 1);
}

// Deeper values are refused before they get here (core/json_budget.h: 64 levels in request
// bodies); this bound keeps the recursion finite whatever a caller passes.
constexpr size_t kMaxPyJsonDepth = 256;

// Python json.dumps separators (", " and ": "), as the families' Jinja `tojson` writes.
std::string py_json(const ojson& j, size_t depth = 0) {
    if ((j.is_object() || j.is_array()) && depth >= kMaxPyJsonDepth)
        fail("a tool definition or tool call is nested deeper than {} levels (allowed: at most {})", kMaxPyJsonDepth,
             kMaxPyJsonDepth);
    if (j.is_object()) {
        std::string out = "{";
        bool first = true;
        for (const auto& [k, v] : j.items()) {
            out += (first ? "" : ", ") + ojson(k).dump() + ": " + py_json(v, depth + 1);
            first = false;
        }
        return out + "}";
    }
    if (j.is_array()) {
        std::string out = "[";
        for (size_t i = 0; i < j.size(); ++i) out += (i ? ", " : "") + py_json(j[i], depth + 1);
        return out + "]";
    }
    return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

ojson tool_json(const ToolFunction& f) {
    ojson fn = {{"name", f.name}};
    if (!f.description.empty()) fn["description"] = f.description;
    fn["parameters"] = f.parameters;
    return {{"type", "function"}, {"function", fn}};
}

// Arguments text as the template writes it back (a JSON object; invalid text verbatim).
std::string args_json(const std::string& arguments) {
    if (!json_budget_error(arguments, {}, "arguments").empty()) return arguments;  // never parsed
    const ojson a = ojson::parse(arguments, nullptr, false);
    return a.is_discarded() ? arguments : py_json(a);
}

void check_tool_roles(ChatTemplate t, const std::vector<ToolChatMessage>& msgs) {
    for (size_t i = 0; i < msgs.size(); ++i) {
        const std::string& r = msgs[i].role;
        if (r != "system" && r != "user" && r != "assistant" && r != "tool")
            fail("chat message {}: role \"{}\" is not supported by the {} template (allowed: system, user, assistant, "
                 "tool)",
                 i, r, chat_template_name(t));
    }
}

std::string render_llama3(const std::vector<ToolChatMessage>& msgs, const std::vector<ToolFunction>& tools, bool gen,
                          std::string_view bos) {
    std::string out(bos);
    size_t first = 0;
    std::string system;
    if (!msgs.empty() && msgs[0].role == "system") system = std::string(trim(msgs[0].content)), first = 1;
    out += "<|start_header_id|>system<|end_header_id|>\n\n";
    if (!tools.empty()) out += "Environment: ipython\n";
    out += "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n" + system + "<|eot_id|>";
    bool tools_written = tools.empty();
    for (size_t i = first; i < msgs.size(); ++i) {
        const ToolChatMessage& m = msgs[i];
        if (m.role == "user" && !tools_written) {
            out += "<|start_header_id|>user<|end_header_id|>\n\nGiven the following functions, please respond with a "
                   "JSON for a function call with its proper arguments that best answers the given prompt.\n\nRespond "
                   "in the format {\"name\": function name, \"parameters\": dictionary of argument name and its "
                   "value}.Do not use variables.\n\n";
            for (const auto& f : tools) out += tool_json(f).dump(4) + "\n\n";
            out += std::string(trim(m.content)) + "<|eot_id|>";
            tools_written = true;
        } else if (m.role == "assistant" && !m.tool_calls.empty()) {
            const auto& c = m.tool_calls[0];  // Llama 3.1 calls one tool per turn
            out += "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": " + ojson(c.name).dump() +
                   ", \"parameters\": " + args_json(c.arguments) + "}<|eot_id|>";
        } else {
            const std::string role = m.role == "tool" ? "ipython" : m.role;
            out += "<|start_header_id|>" + role + "<|end_header_id|>\n\n" + std::string(trim(m.content)) + "<|eot_id|>";
        }
    }
    if (gen) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    return out;
}

std::string render_chatml(const std::vector<ToolChatMessage>& msgs, const std::vector<ToolFunction>& tools, bool gen) {
    std::string out;
    size_t first = 0;
    if (!tools.empty()) {
        std::string system = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";
        if (!msgs.empty() && msgs[0].role == "system") system = msgs[0].content, first = 1;
        out += "<|im_start|>system\n" + system +
               "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided "
               "with function signatures within <tools></tools> XML tags:\n<tools>";
        for (const auto& f : tools) out.append("\n").append(py_json(tool_json(f)));
        out += "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
               "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
               "<args-json-object>}\n</tool_call><|im_end|>\n";
    }
    for (size_t i = first; i < msgs.size(); ++i) {
        const ToolChatMessage& m = msgs[i];
        if (m.role == "tool") {
            if (i == first || msgs[i - 1].role != "tool") out += "<|im_start|>user";
            out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
            if (i + 1 == msgs.size() || msgs[i + 1].role != "tool") out += "<|im_end|>\n";
        } else if (m.role == "assistant" && !m.tool_calls.empty()) {
            out += "<|im_start|>assistant";
            if (!m.content.empty()) out += "\n" + m.content;
            for (const auto& c : m.tool_calls)
                out += "\n<tool_call>\n{\"name\": " + ojson(c.name).dump() + ", \"arguments\": " + args_json(c.arguments) +
                       "}\n</tool_call>";
            out += "<|im_end|>\n";
        } else {
            out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
        }
    }
    if (gen) out += "<|im_start|>assistant\n";
    return out;
}

std::string render_mistral(const std::vector<ToolChatMessage>& msgs, const std::vector<ToolFunction>& tools,
                           std::string_view bos, std::string_view eos) {
    std::string out(bos);
    size_t first = 0;
    std::string system;
    if (!msgs.empty() && msgs[0].role == "system") system = msgs[0].content, first = 1;
    size_t last_user = msgs.size();
    for (size_t i = first; i < msgs.size(); ++i)
        if (msgs[i].role == "user") last_user = i;
    bool system_written = system.empty();
    for (size_t i = first; i < msgs.size(); ++i) {
        const ToolChatMessage& m = msgs[i];
        if (m.role == "user") {
            if (i == last_user && !tools.empty()) {
                ojson list = ojson::array();
                for (const auto& f : tools) list.push_back(tool_json(f));
                out += "[AVAILABLE_TOOLS] " + py_json(list) + "[/AVAILABLE_TOOLS]";
            }
            std::string content = m.content;
            if (!system_written) content = system + "\n\n" + content, system_written = true;
            out += "[INST] " + content + " [/INST]";
        } else if (m.role == "assistant" && !m.tool_calls.empty()) {
            std::string calls;
            for (const auto& c : m.tool_calls)
                calls += (calls.empty() ? "" : ", ") + std::string("{\"name\": ") + ojson(c.name).dump() +
                         ", \"arguments\": " + args_json(c.arguments) + "}";
            out += "[TOOL_CALLS] [" + calls + "]" + std::string(eos);
        } else if (m.role == "tool") {
            out += "[TOOL_RESULTS] " + py_json(ojson{{"content", m.content}}) + "[/TOOL_RESULTS]";
        } else if (m.role == "assistant") {
            out += m.content + std::string(eos);
        } else {
            fail("chat message {}: role \"system\" is only allowed first in the mistral template", i);
        }
    }
    return out;
}

std::string_view args_key(ChatTemplate t) { return t == ChatTemplate::LLAMA3 ? "parameters" : "arguments"; }

std::optional<ChatToolCall> call_from_json(const ojson& j) {
    if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return std::nullopt;
    const ojson* args = nullptr;
    for (const char* k : {"arguments", "parameters"})
        if (j.contains(k)) args = &j[k];
    if (!args || !args->is_object()) return std::nullopt;
    return ChatToolCall{"", j["name"].get<std::string>(), args->dump()};
}

}  // namespace

bool chat_template_has_tools(ChatTemplate t) { return t != ChatTemplate::LLAMA2; }

std::string render_chat_tools(ChatTemplate t, const std::vector<ToolChatMessage>& msgs,
                              const std::vector<ToolFunction>& tools, bool add_generation_prompt, std::string_view bos,
                              std::string_view eos) {
    if (!chat_template_has_tools(t))
        fail("the {} chat template has no tool format (tools work with llama3, chatml, mistral)", chat_template_name(t));
    check_tool_roles(t, msgs);
    switch (t) {
        case ChatTemplate::LLAMA3: return render_llama3(msgs, tools, add_generation_prompt, bos);
        case ChatTemplate::CHATML: return render_chatml(msgs, tools, add_generation_prompt);
        case ChatTemplate::MISTRAL: return render_mistral(msgs, tools, bos, eos);
        case ChatTemplate::LLAMA2: break;
    }
    return {};
}

std::string_view tool_call_marker(ChatTemplate t) {
    switch (t) {
        case ChatTemplate::CHATML: return "<tool_call>";
        case ChatTemplate::MISTRAL: return "[TOOL_CALLS]";
        default: return "{";
    }
}

std::string tool_call_prefix(ChatTemplate t, std::string_view name) {
    const std::string call = "{\"name\": " + ojson(std::string(name)).dump() + ", \"" + std::string(args_key(t)) + "\": ";
    switch (t) {
        case ChatTemplate::CHATML: return "<tool_call>\n" + call;
        case ChatTemplate::MISTRAL: return "[TOOL_CALLS] [" + call;
        default: return call;
    }
}

std::string tool_call_suffix(ChatTemplate t) {
    switch (t) {
        case ChatTemplate::CHATML: return "}\n</tool_call>";
        case ChatTemplate::MISTRAL: return "}]";
        default: return "}";
    }
}

std::string tool_call_grammar(ChatTemplate t, const std::vector<ToolFunction>& tools,
                              const grammar::SchemaLimits& limits) {
    if (tools.empty()) fail("a forced tool call needs at least one tool");
    grammar::JsonSchemaCompiler c("tools", limits);
    std::string root = "root ::=";
    for (size_t i = 0; i < tools.size(); ++i) {
        std::string args;
        try {
            args = c.add(tools[i].parameters, "fn" + std::to_string(i));
        } catch (const grammar::GrammarCancelled&) {
            throw;  // not the schema's fault
        } catch (const Error& e) {
            fail("tool '{}': parameters: {}", tools[i].name, e.what());
        }
        root += std::string(i ? " |" : "") + " " + grammar::grammar_literal(tool_call_prefix(t, tools[i].name)) + " " +
                args + " " + grammar::grammar_literal(tool_call_suffix(t));
    }
    return root + "\n" + c.rules();
}

std::optional<ParsedToolCalls> parse_tool_calls(ChatTemplate t, std::string_view text) {
    const std::string_view s = trim(text);
    if (!json_budget_error(s, {}, "model output").empty()) return std::nullopt;  // text, not a call
    ParsedToolCalls out;
    if (t == ChatTemplate::CHATML) {
        size_t at = s.find("<tool_call>");
        if (at == std::string_view::npos) return std::nullopt;
        out.content = std::string(trim(s.substr(0, at)));
        while (at != std::string_view::npos) {
            const size_t body = at + 11;
            const size_t end = s.find("</tool_call>", body);
            auto call = call_from_json(ojson::parse(s.substr(body, end == std::string_view::npos ? end : end - body),
                                                    nullptr, false));
            if (!call) return std::nullopt;
            out.calls.push_back(*call);
            if (end == std::string_view::npos) break;
            at = s.find("<tool_call>", end);
        }
        return out;
    }
    if (t == ChatTemplate::MISTRAL) {
        if (s.rfind("[TOOL_CALLS]", 0) != 0) return std::nullopt;
        ojson list = ojson::parse(s.substr(12), nullptr, false);
        if (list.is_object()) list = ojson::array({list});
        if (!list.is_array() || list.empty()) return std::nullopt;
        for (const auto& j : list) {
            auto call = call_from_json(j);
            if (!call) return std::nullopt;
            out.calls.push_back(*call);
        }
        return out;
    }
    std::string_view body = s;
    if (body.rfind("<|python_tag|>", 0) == 0) body = trim(body.substr(14));
    if (body.empty() || body[0] != '{') return std::nullopt;
    auto call = call_from_json(ojson::parse(body, nullptr, false));
    if (!call) return std::nullopt;
    out.calls.push_back(*call);
    return out;
}

}  // namespace duet::model
