// The cancel hook the server gives its grammar compilers (completion_handler.cpp, grammar_for):
// a forced tool call's grammar stops with GrammarCancelled, which the server answers 499 (client
// gone) or 503 (stopping), and not with an error that blames the tool's schema (400).
#include <gtest/gtest.h>

#include "model/chat_tools.h"
#include "model/grammar/grammar.h"

namespace duet::server {
namespace {

using nlohmann::ordered_json;

TEST(ToolCallGrammar, CancellationIsNotASchemaError) {
    const model::ToolFunction f{
        "get_weather", "",
        ordered_json::parse(R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})")};
    model::grammar::SchemaLimits limits;
    limits.cancelled = [] { return true; };
    try {
        model::tool_call_grammar(model::ChatTemplate::CHATML, {f}, limits);
        FAIL() << "not cancelled";
    } catch (const model::grammar::GrammarCancelled& e) {
        EXPECT_STREQ(e.what(), "tools: schema compilation cancelled");
    }
    limits.cancelled = [] { return false; };
    EXPECT_NE(model::tool_call_grammar(model::ChatTemplate::CHATML, {f}, limits).find("get_weather"),
              std::string::npos);
}

}  // namespace
}  // namespace duet::server
