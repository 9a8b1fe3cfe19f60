// The OpenAI fields agents use, below the HTTP layer: tools / tool_choice / response_format /
// logprobs / n parsing and their errors, the one list of refused fields, each chat template's
// tool format (prompt, forced-call grammar, parsing a call back) and the streamed tool deltas.
#include <gtest/gtest.h>

#include "core/error.h"
#include "model/chat_tools.h"
#include "model/grammar/matcher.h"
#include "server/api_error.h"
#include "server/completion_request.h"
#include "server/tool_call_stream.h"

namespace duet::server {
namespace {

using json = nlohmann::json;
using T = std::tuple<int, std::string, std::string>;

T error_of(const std::string& body, bool chat = true) {
    try {
        parse_completion_request(body, chat);
    } catch (const ApiError& e) {
        auto j = e.to_json();
        return {e.status(), j["error"]["param"].is_null() ? "" : j["error"]["param"].get<std::string>(), e.what()};
    }
    return {0, "", "(no error)"};
}

const std::string kMsgs = R"("messages":[{"role":"user","content":"weather?"}])";
const std::string kTool =
    R"({"type":"function","function":{"name":"get_weather","description":"Weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"enum":["c","f"]}},"required":["city"]}}})";

TEST(OpenAiFields, ToolsAndToolChoice) {
    auto r = parse_completion_request("{" + kMsgs + R"(,"tools":[)" + kTool + "]}", true);
    ASSERT_EQ(r.tools.size(), 1u);
    EXPECT_EQ(r.tools[0].name, "get_weather");
    EXPECT_EQ(r.tools[0].parameters["required"][0], "city");
    EXPECT_EQ(r.tool_choice, ToolChoice::AUTO);  // the default with tools
    r = parse_completion_request("{" + kMsgs + R"(,"tools":[)" + kTool +
                                     R"(],"tool_choice":{"type":"function","function":{"name":"get_weather"}}})",
                                 true);
    EXPECT_EQ(r.tool_choice, ToolChoice::FUNCTION);
    EXPECT_EQ(r.tool_choice_name, "get_weather");
    EXPECT_EQ(parse_completion_request("{" + kMsgs + R"(,"tools":[)" + kTool + R"(],"tool_choice":"required"})", true)
                  .tool_choice,
              ToolChoice::REQUIRED);
    EXPECT_EQ(parse_completion_request("{" + kMsgs + "}", true).tool_choice, ToolChoice::NONE);

    EXPECT_EQ(error_of("{" + kMsgs + R"(,"tool_choice":"required"})"),
              T(400, "tool_choice", "'tool_choice' needs 'tools'"));
    EXPECT_EQ(error_of("{" + kMsgs + R"(,"tools":[)" + kTool + R"(],"tool_choice":"always"})"),
              T(400, "tool_choice",
                "'tool_choice' = \"always\" is not allowed (allowed: none, auto, required, or {\"type\": \"function\", "
                "\"function\": {\"name\": ...}})"));
    EXPECT_EQ(error_of("{" + kMsgs + R"(,"tools":[)" + kTool +
                       R"(],"tool_choice":{"type":"function","function":{"name":"nope"}}})"),
              T(400, "tool_choice.function.name", "'tool_choice.function.name' = \"nope\" is not one of the 'tools'"));
    EXPECT_EQ(error_of("{" + kMsgs + R"(,"tools":[{"type":"function","function":{"name":"a b"}}]})"),
              T(400, "tools[0].function.name",
                "'tools[0].function.name' = \"a b\" is not allowed (allowed: 1 to 64 of a-z, A-Z, 0-9, _ and -)"));
}

TEST(OpenAiFields, MessagesWithToolCallsAndResults) {
    auto r = parse_completion_request(R"({"messages":[{"role":"user","content":"w?"},
        {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
        {"role":"tool","tool_call_id":"call_1","content":"-3 C"}]})",
                                      true);
    ASSERT_EQ(r.messages.size(), 3u);
    ASSERT_EQ(r.messages[1].tool_calls.size(), 1u);
    EXPECT_EQ(r.messages[1].tool_calls[0].arguments, "{\"city\":\"Oslo\"}");
    EXPECT_EQ(r.messages[2].tool_call_id, "call_1");
}

TEST(OpenAiFields, ResponseFormatLogprobsN) {
    auto r = parse_completion_request("{" + kMsgs + R"(,"response_format":{"type":"json_schema","json_schema":
        {"name":"x","schema":{"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"string"}}}}},
        "logprobs":true,"top_logprobs":2,"n":3})",
                                      true);
    EXPECT_EQ(r.response_format, ResponseFormat::JSON_SCHEMA);
    // property order is kept (the grammar writes properties in schema order)
    EXPECT_EQ(r.json_schema["properties"].begin().key(), "b");
    EXPECT_TRUE(r.logprobs);
    EXPECT_EQ(r.top_logprobs, 2);
    EXPECT_EQ(r.n, 3);
    auto c = parse_completion_request(R"({"prompt":"x","logprobs":2})", false);
    EXPECT_TRUE(c.logprobs);
    EXPECT_EQ(c.top_logprobs, 2);
    EXPECT_EQ(error_of("{" + kMsgs + R"(,"response_format":{"type":"yaml"}})"),
              T(400, "response_format.type",
                "'response_format.type' = \"yaml\" is not allowed (allowed: text, json_object, json_schema)"));
    EXPECT_EQ(error_of("{" + kMsgs + R"(,"top_logprobs":21,"logprobs":true})"),
              T(400, "top_logprobs", "'top_logprobs' = 21 is out of range (allowed: 0 to 20)"));
    EXPECT_EQ(error_of(R"({"prompt":"x","logprobs":6})", false),
              T(400, "logprobs", "'logprobs' = 6 is out of range (allowed: 0 to 5)"));
    EXPECT_EQ(error_of("{" + kMsgs + R"(,"tools":[)" + kTool + R"(],"response_format":{"type":"json_object"}})"),
              T(400, "response_format",
                "'response_format' cannot be combined with 'tools' unless 'tool_choice' is \"none\""));
}

TEST(OpenAiFields, RefusedFieldsAreOneListAndNamed) {
    EXPECT_EQ(refused_fields(), (std::vector<std::string>{"logit_bias", "best_of", "suffix", "echo", "functions",
                                                          "function_call", "audio", "modalities", "prediction"}));
    EXPECT_EQ(error_of(R"({"prompt":"x","logit_bias":{"50256":-100}})", false),
              T(400, "logit_bias", "'logit_bias' is not supported by duet"));
    EXPECT_EQ(error_of(R"({"prompt":"x","best_of":3})", false), T(400, "best_of", "'best_of' is not supported by duet"));
    EXPECT_EQ(error_of(R"({"prompt":"x","suffix":"end"})", false), T(400, "suffix", "'suffix' is not supported by duet"));
    EXPECT_EQ(error_of(R"({"prompt":"x","echo":true})", false), T(400, "echo", "'echo' is not supported by duet"));
    EXPECT_EQ(error_of("{" + kMsgs + R"(,"modalities":["text","audio"]})"),
              T(400, "modalities", "'modalities' is not supported by duet"));
    // Their neutral values change nothing and pass.
    EXPECT_EQ(error_of(R"({"prompt":"x","logit_bias":{},"best_of":1,"suffix":"","echo":false})", false),
              T(0, "", "(no error)"));
    EXPECT_EQ(error_of("{" + kMsgs + R"(,"modalities":["text"],"logit_bias":null})"), T(0, "", "(no error)"));
}

// A byte-level token table: the grammar is checked on text, not on one vocabulary.
std::shared_ptr<const model::grammar::TokenTable> byte_table() {
    std::vector<std::string> bytes;
    for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, char(b)));
    return std::make_shared<model::grammar::TokenTable>(bytes, std::vector<uint8_t>(256, 0));
}

class ToolFormat : public ::testing::TestWithParam<model::ChatTemplate> {};

TEST_P(ToolFormat, ForcedCallGrammarRoundTripsThroughTheParser) {
    const auto t = GetParam();
    model::ToolFunction f{"get_weather", "Weather", nlohmann::ordered_json::parse(
        R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})")};
    auto g = model::grammar::Grammar::parse(model::tool_call_grammar(t, {f}), "tools");
    const std::string call = model::tool_call_prefix(t, "get_weather") + R"({"city": "Oslo"})" + model::tool_call_suffix(t);
    model::grammar::Matcher m(g, byte_table());
    EXPECT_TRUE(m.accept_bytes(call) && m.can_end()) << call;
    model::grammar::Matcher wrong(g, byte_table());
    EXPECT_FALSE(wrong.accept_bytes(model::tool_call_prefix(t, "get_weather") + R"({"town": "Oslo"})"));
    auto parsed = model::parse_tool_calls(t, call);
    ASSERT_TRUE(parsed.has_value()) << call;
    ASSERT_EQ(parsed->calls.size(), 1u);
    EXPECT_EQ(parsed->calls[0].name, "get_weather");
    EXPECT_EQ(json::parse(parsed->calls[0].arguments), json::parse(R"({"city":"Oslo"})"));
    EXPECT_FALSE(model::parse_tool_calls(t, "It is sunny in Oslo.").has_value());
}

TEST_P(ToolFormat, StreamedDeltasReassembleTheCall) {
    const auto t = GetParam();
    const std::string call = model::tool_call_prefix(t, "get_weather") + R"({"city": "Oslo"})" + model::tool_call_suffix(t);
    for (auto mode : {ToolCallStream::Mode::FORCED, ToolCallStream::Mode::AUTO}) {
        ToolCallStream s(mode, t, {"get_weather"});
        std::vector<json> deltas;
        for (size_t i = 0; i < call.size(); i += 3)
            for (auto& d : s.feed(call.substr(i, 3))) deltas.push_back(d);
        for (auto& d : s.finish()) deltas.push_back(d);
        std::string name, args, id;
        for (const auto& d : deltas) {
            ASSERT_TRUE(d.contains("tool_calls")) << d.dump();
            const auto& tc = d["tool_calls"][0];
            EXPECT_EQ(tc["index"], 0);
            if (tc.contains("id")) id += tc["id"].get<std::string>();
            if (tc["function"].contains("name")) name += tc["function"]["name"].get<std::string>();
            args += tc["function"]["arguments"].get<std::string>();
        }
        EXPECT_TRUE(s.called());
        EXPECT_EQ(name, "get_weather");
        EXPECT_EQ(id.rfind("call_", 0), 0u);
        EXPECT_EQ(json::parse(args), json::parse(R"({"city":"Oslo"})"));
        if (mode == ToolCallStream::Mode::FORCED) {
            EXPECT_GT(deltas.size(), 2u);  // arguments arrive in pieces
        }
    }
    ToolCallStream text(ToolCallStream::Mode::AUTO, t, {"get_weather"});
    auto d = text.feed("Sunny.");
    ASSERT_EQ(d.size(), 1u);  // plain text streams at once
    EXPECT_EQ(d[0], json({{"content", "Sunny."}}));
    EXPECT_TRUE(text.finish().empty());
    EXPECT_FALSE(text.called());
}

// A forced call cut short (max_tokens below even the shortest completion): the stream has sent
// the call's start, but the whole message never presents half an object as a call.
TEST_P(ToolFormat, ACallCutShortIsNotPresentedAsACall) {
    const auto t = GetParam();
    const std::string cut = model::tool_call_prefix(t, "get_weather") + R"({"city": "Os)";
    ToolCallStream s(ToolCallStream::Mode::FORCED, t, {"get_weather"});
    s.feed(cut);
    s.finish();
    EXPECT_FALSE(s.called());
    EXPECT_EQ(s.content(), cut);
}

INSTANTIATE_TEST_SUITE_P(Templates, ToolFormat,
                         ::testing::Values(model::ChatTemplate::LLAMA3, model::ChatTemplate::CHATML,
                                           model::ChatTemplate::MISTRAL));

TEST(ToolFormat, PromptsCarryTheToolsInEachFamilysFormat) {
    model::ToolFunction f{"get_weather", "Weather", nlohmann::ordered_json::parse(R"({"type":"object","properties":{}})")};
    std::vector<model::ToolChatMessage> msgs = {{"user", "w?", {}, ""},
                                            {"assistant", "", {{"call_1", "get_weather", "{\"city\":\"Oslo\"}"}}, ""},
                                            {"tool", "-3 C", {}, "call_1"}};
    EXPECT_EQ(model::render_chat_tools(model::ChatTemplate::CHATML, msgs, {f}, true, "", ""),
              "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n\n# Tools\n\nYou "
              "may call one or more functions to assist with the user query.\n\nYou are provided with function "
              "signatures within <tools></tools> XML tags:\n<tools>\n{\"type\": \"function\", \"function\": {\"name\": "
              "\"get_weather\", \"description\": \"Weather\", \"parameters\": {\"type\": \"object\", \"properties\": "
              "{}}}}\n</tools>\n\nFor each function call, return a json object with function name and arguments "
              "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
              "<args-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\nw?<|im_end|>\n<|im_start|>assistant\n"
              "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call><|im_end|>\n"
              "<|im_start|>user\n<tool_response>\n-3 C\n</tool_response><|im_end|>\n<|im_start|>assistant\n");
    EXPECT_EQ(model::render_chat_tools(model::ChatTemplate::MISTRAL, msgs, {f}, true, "<s>", "</s>"),
              "<s>[AVAILABLE_TOOLS] [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": "
              "\"Weather\", \"parameters\": {\"type\": \"object\", \"properties\": {}}}}][/AVAILABLE_TOOLS][INST] w? "
              "[/INST][TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}]</s>[TOOL_RESULTS] "
              "{\"content\": \"-3 C\"}[/TOOL_RESULTS]");
    const std::string l3 = model::render_chat_tools(model::ChatTemplate::LLAMA3, msgs, {f}, true, "<|begin_of_text|>", "");
    EXPECT_NE(l3.find("Given the following functions"), std::string::npos);
    EXPECT_NE(l3.find("<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"get_weather\", \"parameters\": "
                      "{\"city\": \"Oslo\"}}<|eot_id|><|start_header_id|>ipython<|end_header_id|>\n\n-3 C<|eot_id|>"),
              std::string::npos)
        << l3;
    try {
        model::render_chat_tools(model::ChatTemplate::LLAMA2, msgs, {f}, true, "", "");
        ADD_FAILURE();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "the llama2 chat template has no tool format (tools work with llama3, chatml, mistral)");
    }
}

}  // namespace
}  // namespace duet::server
