// The agent session format (workload/agent_trace.h): the built-in session, a file round trip,
// the model calls and their reusable prefix, and every bad line as one exact error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "workload/agent_trace.h"

using namespace duet;
using namespace duet::workload;

namespace {

std::string error_of(const std::string& text) {
    try {
        parse_agent_trace(text, "s.jsonl");
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(AgentTrace, BuiltInSessionHasTheScriptedShape) {
    const AgentTrace t = default_agent_trace(3);
    ASSERT_EQ(t.messages.size(), 1u + 4 * 3);
    EXPECT_EQ(t.messages[0].role, Role::SYSTEM);
    EXPECT_EQ(t.messages[0].n_tokens, 1536);
    const std::vector<AgentRequest> r = agent_requests(t);
    ASSERT_EQ(r.size(), 6u);  // a tool call and an answer per turn
    // call 1: system + user; generates the tool call
    EXPECT_EQ(r[0].n_prompt, 1536 + 48);
    EXPECT_EQ(r[0].n_generate, 32);
    EXPECT_EQ(r[0].n_reusable, 0);
    // call 2: + tool call + tool result; the first call's sequence holds its prompt and all but
    // the last generated token (that one is sampled, never fed)
    EXPECT_EQ(r[1].n_prompt, 1536 + 48 + 32 + 256);
    EXPECT_EQ(r[1].n_reusable, 1536 + 48 + 32 - 1);
    EXPECT_EQ(r[5].n_prompt, 1536 + 3 * (48 + 32 + 256 + 64) - 64);
    EXPECT_EQ(r[5].n_reusable, r[4].n_prompt + 32 - 1);
    EXPECT_EQ(error_of("{\"role\":\"user\",\"tokens\":1}"), "s.jsonl: no tool_call or assistant message: nothing for the "
                                                           "model to generate");
}

TEST(AgentTrace, FileRoundTripWithCommentsAndNotes) {
    const std::string path = std::string(DUET_BINARY_DIR) + "/agent_trace_test.jsonl";
    {
        std::ofstream f(path);
        f << "# my session\n{\"role\": \"system\", \"tokens\": 100, \"note\": \"tools\"}\n\n"
             "{\"role\": \"user\", \"tokens\": 10}\n{\"role\": \"assistant\", \"tokens\": 5}\n"
             "{\"role\": \"user\", \"tokens\": 7}\n{\"role\": \"assistant\", \"tokens\": 3}\n";
    }
    const AgentTrace t = load_agent_trace(path);
    EXPECT_EQ(t.source, path);
    ASSERT_EQ(t.messages.size(), 5u);
    EXPECT_EQ(t.messages[0].note, "tools");
    const auto r = agent_requests(t);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[1].n_prompt, 122);
    EXPECT_EQ(r[1].n_reusable, 114);
    std::filesystem::remove(path);
}

TEST(AgentTrace, BadLinesAreExactErrors) {
    EXPECT_EQ(error_of("[1]"), "s.jsonl:1: not a JSON object (allowed: one {\"role\": ..., \"tokens\": N} object per line)");
    EXPECT_EQ(error_of("{\"role\":\"bot\",\"tokens\":3}"),
              "s.jsonl:1: role = \"bot\" is not allowed (allowed: system, user, tool, tool_call, assistant)");
    EXPECT_EQ(error_of("{\"role\":\"user\"}"),
              "s.jsonl:1: tokens = missing is not allowed (allowed: an integer from 1 to 2^20)");
    EXPECT_EQ(error_of("\n{\"role\":\"user\",\"tokens\":0}"),
              "s.jsonl:2: tokens = 0 is not allowed (allowed: an integer from 1 to 2^20)");
    EXPECT_EQ(error_of("{\"role\":\"user\",\"tokens\":2.5}"),
              "s.jsonl:1: tokens = 2.5 is not allowed (allowed: an integer from 1 to 2^20)");
    EXPECT_EQ(error_of("{\"role\":\"user\",\"tokens\":3,\"text\":\"hi\"}"),
              "s.jsonl:1: unknown key \"text\" (allowed: role, tokens, note)");
    EXPECT_EQ(error_of("{\"role\":\"assistant\",\"tokens\":3}"),
              "s.jsonl: message 1 (assistant) is generated but has no prompt before it (allowed: a session starting "
              "with system or user)");
    try {
        load_agent_trace("/nonexistent/x.jsonl");
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "/nonexistent/x.jsonl: cannot open the workload file");
    }
    EXPECT_THROW(default_agent_trace(0), Error);
}

}  // namespace
