// POST /v1/responses on the real `duet serve` (127.0.0.1, a generated tiny Qwen2-style model,
// chatml template): the response against the Chat Completions route of the same conversation,
// the SSE event order, GET/DELETE, previous_response_id reusing the previous turn's KV blocks,
// the 400s over HTTP, and the store across a kill -9 and restart, bounded in count.
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "server_process.h"

namespace duet::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Sse {
    std::string event;
    json data;
};

// The events of an SSE body: "event: TYPE\ndata: JSON\n\n" blocks.
std::vector<Sse> parse_sse(const std::string& body) {
    std::vector<Sse> out;
    size_t pos = 0;
    while (pos < body.size()) {
        const size_t end = body.find("\n\n", pos);
        if (end == std::string::npos) break;
        const std::string block = body.substr(pos, end - pos);
        pos = end + 2;
        Sse e;
        const size_t nl = block.find('\n');
        EXPECT_EQ(block.rfind("event: ", 0), 0u) << block;
        e.event = block.substr(7, nl - 7);
        EXPECT_EQ(block.compare(nl + 1, 6, "data: "), 0) << block;
        e.data = json::parse(block.substr(nl + 7));
        out.push_back(e);
    }
    return out;
}

class ResponsesHttpTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        dir_ = new fs::path(fs::temp_directory_path() / ("duet_responses_test_" + std::to_string(getpid())));
        fs::remove_all(*dir_);
        fs::create_directories(*dir_);
        model_ = new std::string((*dir_ / "tiny.gguf").string());
        auto [rc, out] = run_command(duet_binary() + " gen-model --arch tiny-qwen2 --dtype f32 --seed 7 -o " + *model_);
        ASSERT_EQ(rc, 0) << out;
        server_ = new ServerProcess(args((*dir_ / "state.db").string(), 1000), {});
    }
    static void TearDownTestSuite() {
        delete server_;
        fs::remove_all(*dir_);
        delete dir_;
        delete model_;
    }
    static std::vector<std::string> args(const std::string& db, int max_stored) {
        return {"--log-level",
                "warn",
                "serve",
                "-m",
                *model_,
                "--model-id",
                "tiny",
                "--port",
                "0",
                "--no-auth",
                "--parallel",
                "2",
                "--ctx",
                "1024",
                "--threads",
                "1",
                "--tasks-db",
                db,
                "--max-stored-responses",
                std::to_string(max_stored)};
    }
    static httplib::Result post(int port, const std::string& path, const json& body) {
        httplib::Client c("127.0.0.1", port);
        c.set_read_timeout(std::chrono::seconds(120));
        return c.Post(path, body.dump(), "application/json");
    }
    static json ok(httplib::Result r) {
        EXPECT_TRUE(r);
        if (!r) return {};
        EXPECT_EQ(r->status, 200) << r->body;
        return json::parse(r->body);
    }
    static json error(int port, const json& body, int status) {
        auto r = post(port, "/v1/responses", body);
        EXPECT_TRUE(r);
        if (!r) return {};
        EXPECT_EQ(r->status, status) << r->body;
        return json::parse(r->body)["error"];
    }

    static fs::path* dir_;
    static std::string* model_;
    static ServerProcess* server_;
};
fs::path* ResponsesHttpTest::dir_ = nullptr;
std::string* ResponsesHttpTest::model_ = nullptr;
ServerProcess* ResponsesHttpTest::server_ = nullptr;

const std::string kInstructions = "You are a terse assistant.";
const std::string kQuestion = "Name three colours of the rainbow, please.";

TEST_F(ResponsesHttpTest, SameAnswerAsChatCompletionsAndGetDelete) {
    const int port = server_->port();
    const json r = ok(post(port, "/v1/responses",
                           {{"model", "tiny"},
                            {"instructions", kInstructions},
                            {"input", kQuestion},
                            {"max_output_tokens", 12},
                            {"temperature", 0},
                            {"metadata", {{"run", "a"}}}}));
    const json chat = ok(post(
        port, "/v1/chat/completions",
        {{"messages", {{{"role", "system"}, {"content", kInstructions}}, {{"role", "user"}, {"content", kQuestion}}}},
         {"max_tokens", 12},
         {"temperature", 0}}));
    EXPECT_EQ(r["object"], "response");
    EXPECT_EQ(r["id"].get<std::string>().rfind("resp_", 0), 0u);
    EXPECT_EQ(r["model"], "tiny");
    EXPECT_EQ(r["instructions"], kInstructions);
    EXPECT_EQ(r["max_output_tokens"], 12);
    EXPECT_EQ(r["metadata"], json({{"run", "a"}}));
    ASSERT_EQ(r["output"].size(), 1u);
    const json& msg = r["output"][0];
    EXPECT_EQ(msg["type"], "message");
    EXPECT_EQ(msg["role"], "assistant");
    EXPECT_EQ(msg["id"].get<std::string>().rfind("msg_", 0), 0u);
    // Same engine, template and greedy sampling as the chat route: the same text and counts.
    EXPECT_EQ(msg["content"][0]["type"], "output_text");
    EXPECT_EQ(msg["content"][0]["text"], chat["choices"][0]["message"]["content"]);
    EXPECT_EQ(r["usage"]["input_tokens"], chat["usage"]["prompt_tokens"]);
    EXPECT_EQ(r["usage"]["output_tokens"], chat["usage"]["completion_tokens"]);
    EXPECT_EQ(r["usage"]["total_tokens"],
              r["usage"]["input_tokens"].get<int>() + r["usage"]["output_tokens"].get<int>());
    const bool cut = chat["choices"][0]["finish_reason"] == "length";
    EXPECT_EQ(r["status"], cut ? "incomplete" : "completed");
    EXPECT_EQ(msg["status"], cut ? "incomplete" : "completed");
    EXPECT_EQ(r["incomplete_details"], cut ? json({{"reason", "max_output_tokens"}}) : json());
    // The modelled timings, as on the chat route.
    EXPECT_TRUE(r["duet"].contains("host"));
    EXPECT_EQ(r["duet"].contains("baseline"), chat["duet"].contains("baseline"));

    const std::string id = r["id"];
    httplib::Client c("127.0.0.1", port);
    auto got = c.Get("/v1/responses/" + id);
    ASSERT_EQ(got->status, 200);
    EXPECT_EQ(json::parse(got->body), r);
    auto del = c.Delete("/v1/responses/" + id);
    ASSERT_EQ(del->status, 200);
    EXPECT_EQ(json::parse(del->body), json({{"id", id}, {"object", "response"}, {"deleted", true}}));
    got = c.Get("/v1/responses/" + id);
    EXPECT_EQ(got->status, 404);
    EXPECT_EQ(json::parse(got->body)["error"]["message"], "Response with id '" + id + "' not found.");
    EXPECT_EQ(c.Delete("/v1/responses/" + id)->status, 404);
    // store: false keeps nothing.
    const json unstored =
        ok(post(port, "/v1/responses", {{"input", kQuestion}, {"max_output_tokens", 2}, {"store", false}}));
    EXPECT_EQ(c.Get("/v1/responses/" + unstored["id"].get<std::string>())->status, 404);
}

TEST_F(ResponsesHttpTest, StreamEventsInOrderWithSequenceNumbers) {
    const int port = server_->port();
    const json body = {{"input", kQuestion}, {"max_output_tokens", 10}, {"temperature", 0}};
    json streamed_body = body;
    streamed_body["stream"] = true;
    auto r = post(port, "/v1/responses", streamed_body);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
    const std::vector<Sse> ev = parse_sse(r->body);
    ASSERT_GE(ev.size(), 8u);
    std::vector<std::string> types;
    std::string text;
    for (size_t i = 0; i < ev.size(); ++i) {
        EXPECT_EQ(ev[i].event, ev[i].data["type"]);
        EXPECT_EQ(ev[i].data["sequence_number"], i);
        types.push_back(ev[i].event);
        if (ev[i].event == "response.output_text.delta") text += ev[i].data["delta"].get<std::string>();
    }
    const size_t n = types.size();
    const std::vector<std::string> head = {"response.created", "response.in_progress", "response.output_item.added",
                                           "response.content_part.added"};
    EXPECT_EQ(std::vector<std::string>(types.begin(), types.begin() + 4), head);
    for (size_t i = 4; i + 4 < n; ++i) EXPECT_EQ(types[i], "response.output_text.delta") << i;
    EXPECT_EQ(types[n - 4], "response.output_text.done");
    EXPECT_EQ(types[n - 3], "response.content_part.done");
    EXPECT_EQ(types[n - 2], "response.output_item.done");
    EXPECT_TRUE(types[n - 1] == "response.completed" || types[n - 1] == "response.incomplete") << types[n - 1];
    EXPECT_EQ(ev[0].data["response"]["status"], "in_progress");
    EXPECT_EQ(ev[0].data["response"]["output"], json::array());
    const json& final_r = ev[n - 1].data["response"];
    EXPECT_EQ(final_r["output"][0]["content"][0]["text"], text);
    EXPECT_EQ(ev[n - 4].data["text"], text);
    EXPECT_EQ(ev[2].data["item"]["id"], final_r["output"][0]["id"]);
    // The same request without streaming: the same text, usage and status.
    const json whole = ok(post(port, "/v1/responses", body));
    EXPECT_EQ(whole["output"][0]["content"][0]["text"], text);
    EXPECT_EQ(whole["usage"]["output_tokens"], final_r["usage"]["output_tokens"]);
    EXPECT_EQ(whole["status"], final_r["status"]);
    // Stored like a non-streamed response.
    httplib::Client c("127.0.0.1", port);
    EXPECT_EQ(json::parse(c.Get("/v1/responses/" + final_r["id"].get<std::string>())->body), final_r);
}

TEST_F(ResponsesHttpTest, PreviousResponseContinuesAndReusesItsKvBlocks) {
    const int port = server_->port();
    const json first = ok(post(port, "/v1/responses",
                               {{"instructions", kInstructions},
                                {"input", kQuestion + std::string(" And why?")},
                                {"max_output_tokens", 20},
                                {"temperature", 0}}));
    const int64_t in1 = first["usage"]["input_tokens"], out1 = first["usage"]["output_tokens"];
    const json second = ok(post(port, "/v1/responses",
                                {{"previous_response_id", first["id"]},
                                 {"instructions", kInstructions},
                                 {"input", "Thanks. One more?"},
                                 {"max_output_tokens", 4},
                                 {"temperature", 0}}));
    EXPECT_EQ(second["previous_response_id"], first["id"]);
    const int64_t in2 = second["usage"]["input_tokens"];
    EXPECT_GT(in2, in1 + out1);  // the whole first turn is in the prompt, without being resent
    // (instructions are not carried over, as in OpenAI's API: agents send them every turn)
    // The second prompt starts with exactly the first turn's tokens: every full 16-token block
    // of them whose KV was written (all but the last sampled token) is a prefix cache hit.
    const int64_t cached = second["usage"]["input_tokens_details"]["cached_tokens"];
    EXPECT_GE(cached, (in1 + out1 - 1) / 16 * 16);
    EXPECT_LT(cached, in2);
    // The first turn's instructions are not carried over: without them the prompt is shorter.
    const json bare =
        ok(post(port, "/v1/responses",
                {{"previous_response_id", first["id"]}, {"input", "Thanks. One more?"}, {"max_output_tokens", 1}}));
    EXPECT_LT(bare["usage"]["input_tokens"].get<int64_t>(), in2);
    EXPECT_EQ(bare["instructions"], nullptr);
}

// A forced call's arguments are re-serialised by the template, so its text differs from what
// the model generated; the next turn still continues the generated tokens up to that point.
TEST_F(ResponsesHttpTest, ToolCallTurnReusesTheGeneratedCallPrefix) {
    const int port = server_->port();
    const json params = {{"type", "object"},
                         {"properties", {{"city", {{"type", "string"}, {"maxLength", 12}}}}},
                         {"required", {"city"}}};
    const json tools = {{{"type", "function"}, {"name", "get_weather"}, {"parameters", params}}};
    const json first = ok(post(port, "/v1/responses",
                               {{"input", "Weather in Oslo?"},
                                {"tools", tools},
                                {"tool_choice", "required"},
                                {"seed", 1},
                                {"max_output_tokens", 200}}));
    ASSERT_EQ(first["output"][0]["type"], "function_call");
    const json call = first["output"][0];
    const int64_t in1 = first["usage"]["input_tokens"];
    const json second =
        ok(post(port, "/v1/responses",
                {{"previous_response_id", first["id"]},
                 {"tools", tools},
                 {"max_output_tokens", 1},
                 {"input", {{{"type", "function_call_output"}, {"call_id", call["call_id"]}, {"output", "12C"}}}}}));
    const int64_t cached = second["usage"]["input_tokens_details"]["cached_tokens"];
    EXPECT_GE(cached, in1 / 16 * 16 + 16) << "no block of the generated call was reused";
}

TEST_F(ResponsesHttpTest, BadRequestsAre400sNamingTheField) {
    const int port = server_->port();
    json e = error(port, {{"input", "x"}, {"reasoning", {{"effort", "high"}}}}, 400);
    EXPECT_EQ(e["message"], "'reasoning' is not supported by duet");
    EXPECT_EQ(e["param"], "reasoning");
    e = error(port, {{"input", "x"}, {"tools", {{{"type", "file_search"}}}}}, 400);
    EXPECT_EQ(e["param"], "tools[0].type");
    e = error(port, {{"input", "x"}, {"previous_response_id", "resp_nope"}}, 400);
    EXPECT_EQ(e["message"], "Previous response with id 'resp_nope' not found.");
    EXPECT_EQ(e["param"], "previous_response_id");
    EXPECT_EQ(e["code"], "previous_response_not_found");
    e = error(port, {{"model", "gpt-4o"}, {"input", "x"}}, 404);
    EXPECT_EQ(e["message"], "The model 'gpt-4o' does not exist (this server serves 'tiny')");
    e = error(port, {{"input", "x"}, {"max_output_tokens", 1020}}, 400);
    EXPECT_EQ(e["param"], "input");
    EXPECT_EQ(e["code"], "context_length_exceeded");
    EXPECT_EQ(e["message"].get<std::string>().rfind("This model's maximum context length is 1024 tokens.", 0), 0u);
    EXPECT_NE(e["message"].get<std::string>().find("in the input, 1020 in the completion). Please reduce the length of "
                                                   "the input or completion."),
              std::string::npos)
        << e["message"];
    e = error(port, {{"input", {{{"type", "function_call_output"}, {"call_id", "call_x"}, {"output", "1"}}}}}, 400);
    EXPECT_EQ(e["message"], "'input[0].call_id' = \"call_x\" answers no function_call of the conversation");
    // The schema compiler's errors name the Responses field, not the chat route's.
    e = error(port,
              {{"input", "x"},
               {"text",
                {{"format",
                  {{"type", "json_schema"},
                   {"name", "p"},
                   {"schema", {{"type", "object"}, {"properties", {{"a", {{"not", {{"type", "string"}}}}}}}}}}}}}},
              400);
    EXPECT_EQ(e["param"], "text.format.schema");
    EXPECT_EQ(
        e["message"].get<std::string>().rfind("text.format.schema: /properties/a: keyword 'not' is not supported", 0),
        0u)
        << e["message"];
    httplib::Client c("127.0.0.1", port);
    auto bad = c.Post("/v1/responses", "{not json", "application/json");
    EXPECT_EQ(bad->status, 400);
    EXPECT_EQ(json::parse(bad->body)["error"]["message"], "request body is not valid JSON");
}

TEST(ResponsesStandalone, StoreSurvivesKillAndRestartAndIsBounded) {
    const fs::path dir = fs::temp_directory_path() / ("duet_responses_restart_" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string model = (dir / "m.gguf").string(), db = (dir / "state.db").string();
    ASSERT_EQ(run_command(duet_binary() + " gen-model --arch tiny-qwen2 --dtype f32 --seed 7 -o " + model).first, 0);
    const std::vector<std::string> args = {"--log-level",
                                           "warn",
                                           "serve",
                                           "-m",
                                           model,
                                           "--port",
                                           "0",
                                           "--no-auth",
                                           "--threads",
                                           "1",
                                           "--ctx",
                                           "512",
                                           "--tasks-db",
                                           db,
                                           "--max-stored-responses",
                                           "2"};
    auto create = [](int port, const json& body) {
        httplib::Client c("127.0.0.1", port);
        c.set_read_timeout(std::chrono::seconds(120));
        auto r = c.Post("/v1/responses", body.dump(), "application/json");
        EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
        return r ? json::parse(r->body) : json();
    };
    std::vector<json> made;
    {
        ServerProcess s(args, {});
        for (int i = 0; i < 3; ++i)
            made.push_back(create(s.port(), {{"input", "Turn " + std::to_string(i)}, {"max_output_tokens", 3}}));
        s.kill_now(SIGKILL);
    }
    ServerProcess s(args, {});
    httplib::Client c("127.0.0.1", s.port());
    // The oldest went when the third came (--max-stored-responses 2); the others are back as they were.
    EXPECT_EQ(c.Get("/v1/responses/" + made[0]["id"].get<std::string>())->status, 404);
    for (int i = 1; i < 3; ++i) {
        auto got = c.Get("/v1/responses/" + made[size_t(i)]["id"].get<std::string>());
        ASSERT_EQ(got->status, 200);
        EXPECT_EQ(json::parse(got->body), made[size_t(i)]);
    }
    // And a conversation continues from before the restart.
    const json next =
        create(s.port(), {{"previous_response_id", made[2]["id"]}, {"input", "Go on."}, {"max_output_tokens", 2}});
    EXPECT_GT(next["usage"]["input_tokens"].get<int64_t>(),
              made[2]["usage"]["input_tokens"].get<int64_t>() + made[2]["usage"]["output_tokens"].get<int64_t>());
    fs::remove_all(dir);
}

// An engine step that throws: the streamed response ends with response.failed naming the
// error and is not stored; the next request is served.
TEST(ResponsesStandalone, AFailingEngineStepEndsTheStreamWithResponseFailed) {
    const fs::path dir = fs::temp_directory_path() / ("duet_responses_fault_" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string model = (dir / "m.gguf").string();
    ASSERT_EQ(run_command(duet_binary() + " gen-model --arch tiny-qwen2 --dtype f32 --seed 7 -o " + model).first, 0);
    ServerProcess s({"--log-level", "error", "serve", "-m", model, "--port", "0", "--no-auth", "--threads", "1",
                     "--ctx", "512", "--tasks-db", (dir / "s.db").string(), "--fault-at-step", "2"},
                    {});
    httplib::Client c("127.0.0.1", s.port());
    c.set_read_timeout(std::chrono::seconds(60));
    const json body = {{"input", "Once upon a time"}, {"max_output_tokens", 4}, {"temperature", 0}, {"stream", true}};
    auto r = c.Post("/v1/responses", body.dump(), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200);
    const std::vector<Sse> ev = parse_sse(r->body);
    ASSERT_GE(ev.size(), 3u);
    EXPECT_EQ(ev[0].event, "response.created");
    EXPECT_EQ(ev.back().event, "response.failed");
    const json& failed = ev.back().data["response"];
    EXPECT_EQ(failed["status"], "failed");
    EXPECT_EQ(failed["error"], json({{"code", "server_error"}, {"message", "injected fault at engine step 2"}}));
    EXPECT_EQ(c.Get("/v1/responses/" + failed["id"].get<std::string>())->status, 404);
    // The next request is served (the fault was one step).
    json plain = body;
    plain.erase("stream");
    r = c.Post("/v1/responses", plain.dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    fs::remove_all(dir);
}

}  // namespace
}  // namespace duet::test
