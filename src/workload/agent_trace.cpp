#include "workload/agent_trace.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "core/error.h"

namespace duet::workload {
namespace {

constexpr const char* kRoles = "system, user, tool, tool_call, assistant";

bool role_from_name(const std::string& s, Role& out) {
    static const std::pair<const char*, Role> kNames[] = {{"system", Role::SYSTEM},       {"user", Role::USER},
                                                          {"tool", Role::TOOL},           {"tool_call", Role::TOOL_CALL},
                                                          {"assistant", Role::ASSISTANT}};
    for (const auto& [name, r] : kNames)
        if (s == name) {
            out = r;
            return true;
        }
    return false;
}

}  // namespace

const char* role_name(Role r) {
    switch (r) {
        case Role::SYSTEM: return "system";
        case Role::USER: return "user";
        case Role::TOOL: return "tool";
        case Role::TOOL_CALL: return "tool_call";
        case Role::ASSISTANT: return "assistant";
    }
    return "?";
}

bool role_is_generated(Role r) { return r == Role::TOOL_CALL || r == Role::ASSISTANT; }

AgentTrace default_agent_trace(int64_t n_turns) {
    if (n_turns < 1 || n_turns > 1000) fail("--turns = {} is not allowed (allowed: 1 to 1000)", n_turns);
    AgentTrace t;
    t.source = fmt::format("built-in ({} turns)", n_turns);
    // assumption: sizes typical of a function-calling agent (a dozen JSON tool schemas in the
    // system prompt, short user asks, mid-sized tool results); no public trace is cited.
    t.messages.push_back({Role::SYSTEM, 1536, "system prompt with tool schemas"});
    for (int64_t i = 0; i < n_turns; ++i) {
        t.messages.push_back({Role::USER, 48, ""});
        t.messages.push_back({Role::TOOL_CALL, 32, ""});
        t.messages.push_back({Role::TOOL, 256, ""});
        t.messages.push_back({Role::ASSISTANT, 64, ""});
    }
    return t;
}

AgentTrace parse_agent_trace(const std::string& text, const std::string& source) {
    AgentTrace t;
    t.source = source;
    std::istringstream in(text);
    std::string line;
    for (int64_t n = 1; std::getline(in, line); ++n) {
        const size_t first = line.find_first_not_of(" \t\r");
        if (first == std::string::npos || line[first] == '#') continue;
        const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.is_object())
            fail("{}:{}: not a JSON object (allowed: one {{\"role\": ..., \"tokens\": N}} object per line)", source, n);
        for (const auto& [key, v] : j.items())
            if (key != "role" && key != "tokens" && key != "note")
                fail("{}:{}: unknown key \"{}\" (allowed: role, tokens, note)", source, n, key);
        AgentMessage m;
        if (!j.contains("role") || !j["role"].is_string() || !role_from_name(j["role"].get<std::string>(), m.role))
            fail("{}:{}: role = {} is not allowed (allowed: {})", source, n, j.contains("role") ? j["role"].dump() : "missing",
                 kRoles);
        if (!j.contains("tokens") || !j["tokens"].is_number_integer() || j["tokens"].get<int64_t>() < 1 ||
            j["tokens"].get<int64_t>() > kMaxMessageTokens)
            fail("{}:{}: tokens = {} is not allowed (allowed: an integer from 1 to 2^20)", source, n,
                 j.contains("tokens") ? j["tokens"].dump() : "missing");
        m.n_tokens = j["tokens"].get<int64_t>();
        if (j.contains("note")) {
            if (!j["note"].is_string()) fail("{}:{}: note = {} is not allowed (allowed: a string)", source, n, j["note"].dump());
            m.note = j["note"].get<std::string>();
        }
        if (t.messages.size() >= kMaxMessages) fail("{}:{}: more than {} messages", source, n, kMaxMessages);
        t.messages.push_back(std::move(m));
    }
    agent_requests(t);  // validates the shape of the session
    return t;
}

AgentTrace load_agent_trace(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) fail("{}: cannot open the workload file", path);
    std::ostringstream ss;
    ss << f.rdbuf();
    return parse_agent_trace(ss.str(), path);
}

std::vector<AgentRequest> agent_requests(const AgentTrace& t) {
    std::vector<AgentRequest> out;
    int64_t history = 0, held = 0;  // tokens before message i; tokens the last call's sequence holds
    for (size_t i = 0; i < t.messages.size(); ++i) {
        const AgentMessage& m = t.messages[i];
        if (role_is_generated(m.role)) {
            if (history == 0)
                fail("{}: message 1 ({}) is generated but has no prompt before it (allowed: a session starting with "
                     "system or user)", t.source, role_name(m.role));
            out.push_back({i, history, m.n_tokens, std::min(held, history)});
            held = history + m.n_tokens - 1;  // the last generated token is sampled, never fed: no K/V
        }
        history += m.n_tokens;
    }
    if (out.empty()) fail("{}: no tool_call or assistant message: nothing for the model to generate", t.source);
    return out;
}

}  // namespace duet::workload
