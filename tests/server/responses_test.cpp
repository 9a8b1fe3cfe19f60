// POST /v1/responses without a server: the request parser (every 400 with its exact message
// and param), items -> chat messages, the output items and stream events built from chat
// deltas, and the SQLite store (round trip through the file, bound, delete).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "server/api_error.h"
#include "server/responses_output.h"
#include "server/responses_request.h"
#include "server/responses_store.h"

namespace duet::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// {status, param, message} of the ApiError the body raises.
std::tuple<int, std::string, std::string> error_of(const std::string& body) {
    try {
        parse_responses_request(body);
    } catch (const ApiError& e) {
        auto j = e.to_json();
        return {e.status(), j["error"]["param"].is_null() ? "" : j["error"]["param"].get<std::string>(), e.what()};
    }
    return {0, "", "(no error)"};
}

using Err = std::tuple<int, std::string, std::string>;

TEST(ResponsesRequest, ParsesEveryKnob) {
    auto r = parse_responses_request(R"({"model":"m","instructions":"be brief","input":[
        {"role":"user","content":"hi"},
        {"type":"message","role":"developer","content":[{"type":"input_text","text":"a "},{"type":"input_text","text":"b"}]},
        {"type":"message","role":"assistant","id":"msg_1","status":"completed",
         "content":[{"type":"output_text","text":"ok","annotations":[]}]},
        {"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{}","status":"completed"},
        {"type":"function_call_output","call_id":"call_1","output":"42"}],
        "max_output_tokens":20,"temperature":0.5,"top_p":0.9,"stream":true,"stream_options":{"include_obfuscation":false},
        "store":false,"parallel_tool_calls":false,"seed":3,
        "tools":[{"type":"function","name":"f","description":"d","parameters":{"type":"object"},"strict":false}],
        "tool_choice":{"type":"function","name":"f"},"metadata":{"k":"v"},"user":"u","truncation":"disabled",
        "reasoning":{"effort":null},"include":[],"background":false,"top_logprobs":0,"text":{"verbosity":"medium"}})");
    EXPECT_EQ(r.model, "m");
    EXPECT_EQ(r.instructions, "be brief");
    ASSERT_EQ(r.input_items.size(), 5u);
    EXPECT_EQ(
        r.input_items[1],
        ordered_json::parse(R"({"type":"message","role":"developer","content":[{"type":"input_text","text":"a b"}]})"));
    EXPECT_EQ(r.input_items[3],
              ordered_json::parse(R"({"type":"function_call","call_id":"call_1","name":"f","arguments":"{}"})"));
    EXPECT_EQ(r.max_output_tokens, 20);
    EXPECT_FLOAT_EQ(r.temperature, 0.5f);
    EXPECT_FLOAT_EQ(r.top_p, 0.9f);
    EXPECT_TRUE(r.stream);
    EXPECT_FALSE(r.store);
    EXPECT_FALSE(r.parallel_tool_calls);
    EXPECT_EQ(r.seed, 3u);
    ASSERT_EQ(r.tools.size(), 1u);
    EXPECT_EQ(r.tools[0].description, "d");
    EXPECT_FALSE(r.tools_strict[0]);
    EXPECT_EQ(r.tool_choice, ToolChoice::FUNCTION);
    EXPECT_EQ(r.tool_choice_name, "f");
    EXPECT_EQ(r.metadata, ordered_json({{"k", "v"}}));
    EXPECT_EQ(r.user, "u");

    auto msgs = items_to_messages(r.input_items, &r.instructions, "input");
    ASSERT_EQ(msgs.size(), 5u);  // system, user, system (developer), assistant with its call, tool
    EXPECT_EQ(msgs[0].role, "system");
    EXPECT_EQ(msgs[0].content, "be brief");
    EXPECT_EQ(msgs[2].role, "system");
    EXPECT_EQ(msgs[3].role, "assistant");
    EXPECT_EQ(msgs[3].content, "ok");
    ASSERT_EQ(msgs[3].tool_calls.size(), 1u);
    EXPECT_EQ(msgs[3].tool_calls[0].id, "call_1");
    EXPECT_EQ(msgs[3].tool_calls[0].arguments, "{}");
    EXPECT_EQ(msgs[4].role, "tool");
    EXPECT_EQ(msgs[4].tool_call_id, "call_1");
    EXPECT_EQ(msgs[4].content, "42");
}

TEST(ResponsesRequest, StringInputAndDefaults) {
    auto r = parse_responses_request(R"({"input":"hello"})");
    EXPECT_EQ(
        r.input_items,
        ordered_json::parse(R"([{"type":"message","role":"user","content":[{"type":"input_text","text":"hello"}]}])"));
    EXPECT_EQ(r.max_output_tokens, -1);
    EXPECT_EQ(r.temperature, 1.0f);
    EXPECT_TRUE(r.store);
    EXPECT_EQ(r.tool_choice, ToolChoice::NONE);
    EXPECT_EQ(r.format, ResponseFormat::TEXT);
    EXPECT_EQ(r.format_json, ordered_json({{"type", "text"}}));
    auto s = parse_responses_request(
        R"({"input":"x","text":{"format":{"type":"json_schema","name":"p","schema":{"type":"object"},"strict":true}}})");
    EXPECT_EQ(s.format, ResponseFormat::JSON_SCHEMA);
    EXPECT_EQ(s.json_schema, ordered_json({{"type", "object"}}));
    EXPECT_EQ(parse_responses_request(R"({"input":"x","text":{"format":{"type":"json_object"}}})").format,
              ResponseFormat::JSON_OBJECT);
    // tools without tool_choice: auto
    EXPECT_EQ(parse_responses_request(R"({"input":"x","tools":[{"type":"function","name":"f"}]})").tool_choice,
              ToolChoice::AUTO);
}

TEST(ResponsesRequest, RefusedFieldsNameThemselves) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"background", "true"},
        {"conversation", "\"conv_1\""},
        {"include", "[\"reasoning.encrypted_content\"]"},
        {"prompt", "{\"id\":\"p\"}"},
        {"reasoning", "{\"effort\":\"high\"}"},
        {"truncation", "\"auto\""},
        {"top_logprobs", "2"},
        {"max_tool_calls", "1"},
        {"context_management", "[{\"type\":\"x\"}]"},
    };
    ASSERT_EQ(cases.size(), responses_refused_fields().size());
    for (const auto& [name, value] : cases)
        EXPECT_EQ(error_of(R"({"input":"x",")" + name + "\":" + value + "}"),
                  Err(400, name, "'" + name + "' is not supported by duet"))
            << name;
}

TEST(ResponsesRequest, BadFieldsAre400sWithExactMessages) {
    const std::vector<std::pair<std::string, Err>> cases = {
        {R"({"model":"m"})", {400, "input", "'input' is required"}},
        {R"({"input":5})", {400, "input", "'input' must be a string or an array of items, got number"}},
        {R"({"input":[{"type":"reasoning","summary":[]}]})",
         {400, "input[0].type",
          "'input[0].type' = \"reasoning\" is not supported by duet (allowed: message, function_call, "
          "function_call_output)"}},
        {R"({"input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]})",
         {400, "input[0].content[0].type",
          "'input[0].content[0].type' = \"input_image\" is not supported by duet (allowed: input_text)"}},
        {R"({"input":[{"role":"tool","content":"x"}]})",
         {400, "input[0].role",
          "'input[0].role' = \"tool\" is not allowed (allowed: user, assistant, system, developer)"}},
        {R"({"input":[{"role":"user"}]})", {400, "input[0].content", "'input[0].content' is required"}},
        {R"({"input":[{"type":"function_call","name":"f","arguments":"{}"}]})",
         {400, "input[0].call_id", "'input[0].call_id' is required"}},
        {R"({"input":[{"type":"function_call_output","call_id":"c"}]})",
         {400, "input[0].output", "'input[0].output' is required"}},
        {R"({"input":"x","tools":[{"type":"web_search"}]})",
         {400, "tools[0].type", "'tools[0].type' = \"web_search\" is not supported by duet (allowed: function)"}},
        {R"({"input":"x","tools":[{"type":"function","name":"a b"}]})",
         {400, "tools[0].name",
          "'tools[0].name' = \"a b\" is not allowed (allowed: 1 to 64 of a-z, A-Z, 0-9, _ and -)"}},
        {R"({"input":"x","tool_choice":"auto"})", {400, "tool_choice", "'tool_choice' needs 'tools'"}},
        {R"({"input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"allowed_tools"}})",
         {400, "tool_choice.type",
          "'tool_choice.type' = \"allowed_tools\" is not supported by duet (allowed: none, auto, required, or "
          "{\"type\": \"function\", \"name\": ...})"}},
        {R"({"input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"g"}})",
         {400, "tool_choice.name", "'tool_choice.name' = \"g\" is not one of the 'tools'"}},
        {R"({"input":"x","text":{"format":{"type":"xml"}}})",
         {400, "text.format.type",
          "'text.format.type' = \"xml\" is not allowed (allowed: text, json_object, json_schema)"}},
        {R"({"input":"x","text":{"format":{"type":"json_schema","name":"p"}}})",
         {400, "text.format.schema", "'text.format.schema' is required and must be an object"}},
        {R"({"input":"x","text":{"format":{"type":"json_schema","schema":{}}}})",
         {400, "text.format.name",
          "'text.format.name' = \"\" is not allowed (allowed: 1 to 64 of a-z, A-Z, 0-9, _ and -)"}},
        {R"({"input":"x","text":{"verbosity":"low"}})",
         {400, "text.verbosity", "'text.verbosity' is not supported by duet (allowed: medium)"}},
        {R"({"input":"x","tools":[{"type":"function","name":"f"}],"text":{"format":{"type":"json_object"}}})",
         {400, "text.format", "'text.format' cannot be combined with 'tools' unless 'tool_choice' is \"none\""}},
        {R"({"input":"x","max_output_tokens":0})",
         {400, "max_output_tokens", "'max_output_tokens' = 0 must be at least 1"}},
        {R"({"input":"x","temperature":3})",
         {400, "temperature", "'temperature' = 3 is out of range (allowed: 0 to 2)"}},
        {R"({"input":"x","stream_options":{}})",
         {400, "stream_options", "'stream_options' is only allowed when 'stream' is true"}},
        {R"({"input":"x","metadata":{"k":1}})", {400, "metadata.k", "'metadata.k' must be a string, got number"}},
        {R"({"input":"x","store":"yes"})", {400, "store", "'store' must be a boolean, got string"}},
    };
    for (const auto& [body, want] : cases) EXPECT_EQ(error_of(body), want) << body;
}

TEST(ResponsesRequest, AnOutputMustAnswerACallOfTheConversation) {
    auto r = parse_responses_request(R"({"input":[{"type":"function_call_output","call_id":"call_9","output":"1"}]})");
    const ordered_json history =
        ordered_json::parse(R"([{"type":"message","role":"user","content":[{"type":"input_text","text":"q"}]}])");
    ordered_json all = history;
    all.push_back(r.input_items[0]);
    try {
        items_to_messages(all, nullptr, "input", history.size());
        FAIL() << "no error";
    } catch (const ApiError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "'input[0].call_id' = \"call_9\" answers no function_call of the conversation");
        EXPECT_EQ(e.to_json()["error"]["param"], "input[0].call_id");
    }
    // A call made in the stored history is answerable.
    all.insert(all.begin() + 1,
               ordered_json::parse(R"({"type":"function_call","call_id":"call_9","name":"f","arguments":"{}"})"));
    EXPECT_EQ(items_to_messages(all, nullptr, "input", 2).back().tool_call_id, "call_9");
}

std::vector<std::string> types_of(const std::vector<ordered_json>& events) {
    std::vector<std::string> t;
    for (const auto& e : events) t.push_back(e["type"]);
    return t;
}

TEST(ResponsesOutput, TextThenCallEventOrderAndItems) {
    ResponsesOutput out(true);
    std::vector<ordered_json> ev;
    auto add = [&](const json& d) {
        for (auto& e : out.feed(d)) ev.push_back(e);
    };
    add({{"content", "Hel"}});
    add({{"content", "lo"}});
    add({{"tool_calls", json::array({{{"index", 0},
                                      {"id", "call_a"},
                                      {"type", "function"},
                                      {"function", {{"name", "f"}, {"arguments", ""}}}}})}});
    add({{"tool_calls", json::array({{{"index", 0}, {"function", {{"arguments", "{\"x\""}}}}})}});
    add({{"tool_calls", json::array({{{"index", 0}, {"function", {{"arguments", ":1}"}}}}})}});
    for (auto& e : out.finish(false)) ev.push_back(e);
    EXPECT_EQ(types_of(ev), (std::vector<std::string>{
                                "response.output_item.added", "response.content_part.added",
                                "response.output_text.delta", "response.output_text.delta", "response.output_text.done",
                                "response.content_part.done", "response.output_item.done", "response.output_item.added",
                                "response.function_call_arguments.delta", "response.function_call_arguments.delta",
                                "response.function_call_arguments.done", "response.output_item.done"}));
    const ordered_json& items = out.items();
    ASSERT_EQ(items.size(), 2u);
    EXPECT_EQ(items[0]["type"], "message");
    EXPECT_EQ(items[0]["status"], "completed");
    EXPECT_EQ(items[0]["content"][0]["text"], "Hello");
    EXPECT_EQ(items[1]["type"], "function_call");
    EXPECT_EQ(items[1]["call_id"], "call_a");
    EXPECT_EQ(items[1]["arguments"], "{\"x\":1}");
    // Events name their item and index; the added item is empty, the done item whole.
    EXPECT_EQ(ev[0]["item"]["content"], ordered_json::array());
    EXPECT_EQ(ev[2]["item_id"], items[0]["id"]);
    EXPECT_EQ(ev[4]["text"], "Hello");
    EXPECT_EQ(ev[6]["item"], items[0]);
    EXPECT_EQ(ev[7]["output_index"], 1);
    EXPECT_EQ(ev[7]["item"]["arguments"], "");
    EXPECT_EQ(ev[10]["arguments"], "{\"x\":1}");
    EXPECT_EQ(ev[10]["name"], "f");
    EXPECT_EQ(out.output_text(), "Hello");
}

TEST(ResponsesOutput, CutShortIsIncompleteAndEmptyOutputHasAMessage) {
    ResponsesOutput cut(true);
    cut.feed({{"content", "abc"}});
    cut.finish(true);
    EXPECT_EQ(cut.items()[0]["status"], "incomplete");
    ResponsesOutput empty(true);
    EXPECT_EQ(types_of(empty.finish(false)),
              (std::vector<std::string>{"response.output_item.added", "response.content_part.added",
                                        "response.output_text.done", "response.content_part.done",
                                        "response.output_item.done"}));
    EXPECT_EQ(empty.items()[0]["content"][0]["text"], "");
}

TEST(ResponsesOutput, ParallelToolCallsFalseKeepsTheFirstCall) {
    ResponsesOutput out(false);
    for (int i = 0; i < 2; ++i) {
        out.feed({{"tool_calls", json::array({{{"index", i},
                                               {"id", "call_" + std::to_string(i)},
                                               {"type", "function"},
                                               {"function", {{"name", "f"}, {"arguments", ""}}}}})}});
        out.feed({{"tool_calls", json::array({{{"index", i}, {"function", {{"arguments", "{}"}}}}})}});
    }
    out.finish(false);
    ASSERT_EQ(out.items().size(), 1u);
    EXPECT_EQ(out.items()[0]["call_id"], "call_0");
    EXPECT_EQ(out.items()[0]["arguments"], "{}");
}

TEST(ResponsesStore, SurvivesReopenBoundedAndDeletes) {
    namespace fs = std::filesystem;
    const fs::path path = fs::temp_directory_path() / ("duet_responses_store_" + std::to_string(getpid()) + ".db");
    fs::remove(path);
    {
        ResponsesStore s(path.string(), 3);
        for (int i = 0; i < 4; ++i) {
            StoredResponse r;
            r.id = "resp_" + std::to_string(i);
            r.created_ms = 1000 + i;
            r.response = {{"id", r.id}, {"n", i}};
            r.context = ordered_json::array({{{"type", "message"}, {"i", i}}});
            r.tokens = {1, -0, 70000 + i};
            s.put(r);
        }
        EXPECT_EQ(s.count(), 3);
        EXPECT_FALSE(s.get("resp_0"));  // the oldest went when the fourth came
    }
    ResponsesStore s(path.string(), 3);  // a restart
    auto r = s.get("resp_3");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->response, ordered_json({{"id", "resp_3"}, {"n", 3}}));
    EXPECT_EQ(r->context, ordered_json::array({{{"type", "message"}, {"i", 3}}}));
    EXPECT_EQ(r->tokens, (std::vector<int32_t>{1, 0, 70003}));
    EXPECT_EQ(r->created_ms, 1003);
    EXPECT_TRUE(s.remove("resp_2"));
    EXPECT_FALSE(s.remove("resp_2"));
    EXPECT_FALSE(s.get("resp_2"));
    EXPECT_EQ(s.count(), 2);
    EXPECT_EQ((fs::status(path).permissions() & fs::perms::all), fs::perms::owner_read | fs::perms::owner_write);
    fs::remove(path);
    fs::remove(path.string() + "-wal");
    fs::remove(path.string() + "-shm");
}

TEST(ResponsesStore, RefusesAZeroBoundAndAnUnopenablePath) {
    EXPECT_THROW(ResponsesStore(":memory:", 0), Error);
    namespace fs = std::filesystem;
    // A path under a regular file cannot be created, even by root.
    const fs::path file = fs::temp_directory_path() / ("duet_responses_notdir_" + std::to_string(getpid()));
    { std::ofstream(file) << "x"; }
    const std::string path = (file / "x.db").string();
    try {
        ResponsesStore store(path, 10);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
        EXPECT_NE(std::string(e.what()).find("responses store"), std::string::npos) << e.what();
    }
    fs::remove(file);
}

}  // namespace
}  // namespace duet::server
