#include "server/completion_request.h"

#include <gtest/gtest.h>

#include "server/api_error.h"

namespace duet::server {
namespace {

// Returns {status, param, message} of the ApiError the body raises.
std::tuple<int, std::string, std::string> error_of(const std::string& body, bool chat = true) {
    try {
        parse_completion_request(body, chat);
    } catch (const ApiError& e) {
        auto j = e.to_json();
        return {e.status(), j["error"]["param"].is_null() ? "" : j["error"]["param"].get<std::string>(), e.what()};
    }
    return {0, "", "(no error)"};
}

TEST(CompletionRequest, ParsesChatWithAllKnobs) {
    auto r = parse_completion_request(R"({"model":"m","messages":[{"role":"system","content":"be brief"},
        {"role":"user","content":[{"type":"text","text":"hi "},{"type":"text","text":"there"}]}],
        "max_tokens":12,"temperature":0,"top_p":0.9,"seed":7,"stop":["\n\n","END"],"stream":true,
        "stream_options":{"include_usage":true},"n":1,"presence_penalty":0.5})",
                                      true);
    EXPECT_EQ(r.model, "m");
    ASSERT_EQ(r.messages.size(), 2u);
    EXPECT_EQ(r.messages[1].content, "hi there");
    EXPECT_EQ(r.max_tokens, 12);
    EXPECT_EQ(r.temperature, 0.0f);
    EXPECT_FLOAT_EQ(r.top_p, 0.9f);
    EXPECT_EQ(r.seed, 7u);
    EXPECT_EQ(r.stop, (std::vector<std::string>{"\n\n", "END"}));
    EXPECT_TRUE(r.stream);
    EXPECT_TRUE(r.include_usage);
    EXPECT_FLOAT_EQ(r.presence_penalty, 0.5f);
}

TEST(CompletionRequest, ParsesCompletionPrompt) {
    auto r = parse_completion_request(R"({"prompt":"Once upon","stop":"."})", false);
    EXPECT_EQ(r.prompt, "Once upon");
    EXPECT_EQ(r.stop, std::vector<std::string>{"."});
    EXPECT_FALSE(r.ignore_eos);
    EXPECT_TRUE(parse_completion_request(R"({"prompt":"x","ignore_eos":true})", false).ignore_eos);
    EXPECT_EQ(r.max_tokens, -1);
    EXPECT_FALSE(r.stream);
}

TEST(CompletionRequest, ErrorsNameTheParameter) {
    using T = std::tuple<int, std::string, std::string>;
    EXPECT_EQ(error_of("{not json"), T(400, "", "request body is not valid JSON"));
    EXPECT_EQ(error_of("[1]"), T(400, "", "request body must be a JSON object"));
    EXPECT_EQ(error_of("{}"), T(400, "messages", "'messages' is required"));
    EXPECT_EQ(error_of(R"({"messages":[]})"), T(400, "messages", "'messages' must not be empty"));
    EXPECT_EQ(error_of(R"({"messages":[{"role":"robot","content":"x"}]})"),
              T(400, "messages[0].role",
                "'messages[0].role' = \"robot\" is not allowed (allowed: system, developer, user, assistant, tool)"));
    EXPECT_EQ(error_of(R"({"messages":[{"role":"user","content":"x"}],"temperature":3})"),
              T(400, "temperature", "'temperature' = 3 is out of range (allowed: 0 to 2)"));
    EXPECT_EQ(error_of(R"({"messages":[{"role":"user","content":"x"}],"temperature":"hot"})"),
              T(400, "temperature", "'temperature' must be a number, got string"));
    EXPECT_EQ(error_of(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":0})"),
              T(400, "max_tokens", "'max_tokens' = 0 must be at least 1"));
    EXPECT_EQ(error_of(R"({"messages":[{"role":"user","content":"x"}],"n":0})"),
              T(400, "n", "'n' = 0 is out of range (allowed: 1 to 128)"));
    EXPECT_EQ(error_of(R"({"messages":[{"role":"user","content":"x"}],"stop":["a","b","c","d","e"]})"),
              T(400, "stop", "'stop' has 5 sequences (allowed: at most 4)"));
    EXPECT_EQ(error_of(R"({"messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":true}})"),
              T(400, "stream_options", "'stream_options' is only allowed when 'stream' is true"));
    EXPECT_EQ(error_of(R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":3})"),
              T(400, "top_logprobs", "'top_logprobs' needs 'logprobs': true"));
    // found while writing completion_request_fuzz: a non-string part type was a json::type_error (HTTP 500)
    EXPECT_EQ(error_of(R"({"messages":[{"role":"user","content":[{"type":1,"text":"x"}]}]})"),
              T(400, "messages[0].content[0]",
                "'messages[0].content[0]' must be a text part {\"type\": \"text\", \"text\": ...}"));
    EXPECT_EQ(error_of(R"({"prompt":5})", false),
              T(400, "prompt", "'prompt' must be a string (or an array of one string)"));
}

TEST(ApiError, OpenAiShape) {
    auto j = ApiError::not_found("The model 'x' does not exist", "model").to_json();
    EXPECT_EQ(j.dump(),
              R"({"error":{"code":"model_not_found","message":"The model 'x' does not exist","param":"model","type":"invalid_request_error"}})");
    EXPECT_EQ(ApiError::unauthorized("Incorrect API key provided").status(), 401);
    EXPECT_EQ(ApiError::rate_limited("queue full").to_json()["error"]["type"], "rate_limit_error");
}

}  // namespace
}  // namespace duet::server
