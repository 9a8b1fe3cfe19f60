// A forced tool call under max_tokens on the real server (tiny random model, chatml tools):
// whenever max_tokens holds the shortest call, the response is a call whose arguments parse and
// validate (the sampler's closing reserve, docs/grammar.md), streamed or not; below that it says
// "length" and presents no call.
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "server_process.h"

namespace duet::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* kKey = "test-key-77aa";

class ToolBudget : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new fs::path(fs::temp_directory_path() / ("duet_tool_budget_test_" + std::to_string(getpid())));
        fs::remove_all(*dir_);
        fs::create_directories(*dir_);
        const std::string model = (*dir_ / "tiny.gguf").string();
        auto [rc, out] = run_command(duet_binary() + " gen-model --arch tiny-llama --dtype f32 --seed 5 -o " + model);
        ASSERT_EQ(rc, 0) << out;
        server_ = new ServerProcess({"--log-level", "warn", "serve", "-m", model, "--port", "0", "--ctx", "1024",
                                     "--threads", "1", "--chat-template", "chatml", "--tasks-db",
                                     (*dir_ / "tasks.db").string()},
                                    {std::string("DUET_API_KEY=") + kKey});
    }
    static void TearDownTestSuite() {
        delete server_;
        fs::remove_all(*dir_);
        delete dir_;
    }
    static json chat(int max_tokens, int seed, bool stream = false) {
        const json params = json::parse(R"({"type":"object","properties":{
            "city":{"type":"string","minLength":1},"days":{"type":"integer","minimum":1,"maximum":7},
            "note":{"anyOf":[{"type":"string"},{"type":"null"}]}},"required":["city","days","note"],
            "additionalProperties":false})");
        json body = {{"messages", {{{"role", "user"}, {"content", "Weather in Oslo?"}}}},
                     {"tools", {{{"type", "function"},
                                 {"function", {{"name", "get_weather"}, {"parameters", params}}}}}},
                     {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}},
                     {"max_tokens", max_tokens}, {"temperature", 1.0}, {"seed", seed}, {"stream", stream}};
        httplib::Client c("127.0.0.1", server_->port());
        c.set_read_timeout(std::chrono::seconds(120));
        c.set_bearer_token_auth(kKey);
        auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
        EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no response");
        if (!r) return {};
        if (!stream) return json::parse(r->body);
        // reassemble the streamed call
        json out = {{"finish_reason", nullptr}, {"arguments", ""}};
        size_t pos = 0;
        while ((pos = r->body.find("data: ", pos)) != std::string::npos) {
            const size_t end = r->body.find("\n\n", pos);
            const std::string payload = r->body.substr(pos + 6, end - pos - 6);
            pos = end;
            if (payload == "[DONE]") break;
            const json j = json::parse(payload);
            if (j["choices"].empty()) continue;
            const json& ch = j["choices"][0];
            if (!ch["finish_reason"].is_null()) out["finish_reason"] = ch["finish_reason"];
            if (ch["delta"].contains("tool_calls"))
                out["arguments"] = out["arguments"].get<std::string>() +
                                   ch["delta"]["tool_calls"][0]["function"].value("arguments", "");
        }
        return out;
    }
    static void expect_valid(const std::string& arguments, const std::string& what) {
        const json a = json::parse(arguments, nullptr, false);
        ASSERT_TRUE(a.is_object()) << what << ": " << arguments;
        EXPECT_TRUE(a["city"].is_string() && !a["city"].get<std::string>().empty()) << what << ": " << arguments;
        EXPECT_TRUE(a["days"].is_number_integer() && a["days"] >= 1 && a["days"] <= 7) << what << ": " << arguments;
        EXPECT_TRUE(a["note"].is_null() || a["note"].is_string()) << what << ": " << arguments;
        EXPECT_EQ(a.size(), 3u) << what << ": " << arguments;
    }
    static fs::path* dir_;
    static ServerProcess* server_;
};
fs::path* ToolBudget::dir_ = nullptr;
ServerProcess* ToolBudget::server_ = nullptr;

// The shortest call: <tool_call>\n{"name": "get_weather", "arguments": {"city":"x","days":1,"note":null}}\n</tool_call>
// is 95 bytes; one more token for the end.
TEST_F(ToolBudget, ForcedCallsParseAndValidateWheneverMaxTokensHoldsTheShortestCall) {
    for (int max_tokens : {96, 100, 110, 140}) {
        for (int seed : {1, 2, 3}) {
            const std::string what = "max_tokens " + std::to_string(max_tokens) + " seed " + std::to_string(seed);
            const json r = chat(max_tokens, seed);
            const json& ch = r["choices"][0];
            EXPECT_EQ(ch["finish_reason"], "tool_calls") << what << ": " << r.dump();
            ASSERT_TRUE(ch["message"].contains("tool_calls")) << what << ": " << r.dump();
            expect_valid(ch["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>(), what);
            EXPECT_LE(r["usage"]["completion_tokens"].get<int>(), max_tokens) << what;
        }
    }
    const json s = chat(96, 4, true);
    EXPECT_EQ(s["finish_reason"], "tool_calls") << s.dump();
    expect_valid(s["arguments"].get<std::string>(), "streamed");
}

TEST_F(ToolBudget, BelowTheShortestCallTheAnswerSaysLengthAndPresentsNoCall) {
    const json r = chat(20, 1);
    const json& ch = r["choices"][0];
    EXPECT_EQ(ch["finish_reason"], "length") << r.dump();
    EXPECT_FALSE(ch["message"].contains("tool_calls")) << r.dump();
}

}  // namespace
}  // namespace duet::test
