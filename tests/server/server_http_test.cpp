// End-to-end tests of `duet serve`: the real binary on 127.0.0.1, spoken to over HTTP.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "server_process.h"

namespace duet::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* kKey = "test-key-4f1c";

class ServerTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new fs::path(fs::temp_directory_path() / ("duet_server_test_" + std::to_string(getpid())));
        fs::remove_all(*dir_);
        fs::create_directories(*dir_);
        model_ = new std::string((*dir_ / "tiny.gguf").string());
        auto [rc, out] = run_command(duet_binary() + " gen-model --arch tiny-llama --dtype f32 --seed 3 -o " + *model_);
        ASSERT_EQ(rc, 0) << out;
        server_ = new ServerProcess({"--log-level", "warn", "serve", "-m", *model_, "--port", "0", "--parallel", "4",
                                     "--ctx", "256", "--threads", "1", "--max-body-bytes", "65536", "--tasks-db",
                                     (*dir_ / "tasks.db").string()},
                                    {std::string("DUET_API_KEY=") + kKey});
    }
    static void TearDownTestSuite() {
        delete server_;
        fs::remove_all(*dir_);
        delete dir_;
        delete model_;
    }

    static httplib::Client client(bool auth = true) {
        httplib::Client c("127.0.0.1", server_->port());
        c.set_read_timeout(std::chrono::seconds(60));
        if (auth) c.set_bearer_token_auth(kKey);
        return c;
    }
    static json post(const std::string& path, const json& body, int want_status = 200) {
        auto c = client();
        auto r = c.Post(path, body.dump(), "application/json");
        EXPECT_TRUE(r);
        if (!r) return {};
        EXPECT_EQ(r->status, want_status) << r->body;
        return json::parse(r->body);
    }
    static std::string stream_text(const json& body, std::string* raw = nullptr) {
        auto c = client();
        std::string all;
        auto r = c.Post("/v1/completions", body.dump(), "application/json");
        EXPECT_TRUE(r && r->status == 200);
        if (!r) return "";
        if (raw) *raw = r->body;
        std::string text;
        size_t pos = 0;
        while ((pos = r->body.find("data: ", pos)) != std::string::npos) {
            const size_t end = r->body.find("\n\n", pos);
            const std::string payload = r->body.substr(pos + 6, end - pos - 6);
            pos = end;
            if (payload == "[DONE]") break;
            json j = json::parse(payload);
            if (!j["choices"].empty()) text += j["choices"][0].value("text", "");
        }
        return text;
    }
    static double metric(const std::string& name) {
        auto r = client(false).Get("/metrics");
        const std::string& b = r->body;
        const size_t at = b.find("\n" + name + " ");
        if (at == std::string::npos) return -1;
        return std::stod(b.substr(at + name.size() + 2));
    }
    // `duet run`'s text as the API carries it: JSON strings hold UTF-8, so bytes of the random
    // model's byte tokens that form no character arrive as U+FFFD; run ends with a newline.
    static std::string run_output(const std::string& args) {
        auto [rc, out] = run_command(duet_binary() + " run -m " + *model_ + " --no-timings --threads 1 " + args);
        EXPECT_EQ(rc, 0) << out;
        if (!out.empty() && out.back() == '\n') out.pop_back();
        return json::parse(json(out).dump(-1, ' ', false, json::error_handler_t::replace)).get<std::string>();
    }

    static fs::path* dir_;
    static std::string* model_;
    static ServerProcess* server_;
};
fs::path* ServerTest::dir_ = nullptr;
std::string* ServerTest::model_ = nullptr;
ServerProcess* ServerTest::server_ = nullptr;

TEST_F(ServerTest, AuthIsRequiredOnV1) {
    auto c = client(false);
    auto r = c.Get("/v1/models");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401);
    EXPECT_EQ(json::parse(r->body)["error"]["message"],
              "You didn't provide an API key. Provide it in an Authorization header: 'Authorization: Bearer YOUR_KEY'");
    c.set_bearer_token_auth("wrong");
    r = c.Get("/v1/models");
    EXPECT_EQ(r->status, 401);
    EXPECT_EQ(json::parse(r->body)["error"]["code"], "invalid_api_key");
    auto ok = client().Get("/v1/models");
    EXPECT_EQ(ok->status, 200);
    EXPECT_EQ(json::parse(ok->body)["data"][0]["id"], "tiny");
    EXPECT_EQ(client(false).Get("/health")->status, 200);  // open, like /metrics
}

TEST_F(ServerTest, ErrorsHaveOpenAiShapeAndStatus) {
    json e = post("/v1/chat/completions", {{"model", "gpt-9"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}}, 404);
    EXPECT_EQ(e["error"]["param"], "model");
    EXPECT_EQ(e["error"]["message"], "The model 'gpt-9' does not exist (this server serves 'tiny')");
    e = post("/v1/completions", {{"prompt", "x"}, {"temperature", 9}}, 400);
    EXPECT_EQ(e["error"]["param"], "temperature");
    EXPECT_EQ(e["error"]["message"], "'temperature' = 9 is out of range (allowed: 0 to 2)");
    auto c = client();
    auto r = c.Post("/v1/completions", "{oops", "application/json");
    EXPECT_EQ(r->status, 400);
    EXPECT_EQ(json::parse(r->body)["error"]["message"], "request body is not valid JSON");
    r = c.Get("/v1/tasks/task-ffffffffffffffff");
    EXPECT_EQ(r->status, 404);
    EXPECT_EQ(json::parse(r->body)["error"]["message"], "No task with id 'task-ffffffffffffffff'");
    r = c.Post("/v1/completions", std::string(70000, ' '), "application/json");
    EXPECT_EQ(r->status, 413);
    EXPECT_EQ(json::parse(r->body)["error"]["message"], "Request body is larger than the server's limit of 65536 bytes (--max-body-bytes)");
    std::string long_prompt;
    for (int i = 0; i < 300; ++i) long_prompt += " the cat";
    e = post("/v1/completions", {{"prompt", long_prompt}, {"max_tokens", 4}}, 400);
    EXPECT_EQ(e["error"]["code"], "context_length_exceeded");
    EXPECT_NE(e["error"]["message"].get<std::string>().find("maximum context length is 256 tokens"), std::string::npos);
}

TEST_F(ServerTest, NonStreamingAndStreamingEqualDuetRun) {
    const std::string greedy = run_output("-p 'Once upon a time' -n 16 --temp 0");
    json r = post("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 16}, {"temperature", 0}});
    EXPECT_EQ(r["choices"][0]["text"], greedy);
    EXPECT_EQ(r["usage"]["completion_tokens"], 16);
    EXPECT_TRUE(r["duet"]["baseline"].contains("tbt_ms"));
    EXPECT_TRUE(r["duet"]["target"].contains("ttft_ms"));
    std::string raw;
    EXPECT_EQ(stream_text({{"prompt", "Once upon a time"}, {"max_tokens", 16}, {"temperature", 0}, {"stream", true}}, &raw),
              greedy);
    EXPECT_NE(raw.find("data: [DONE]\n\n"), std::string::npos);

    // Sampling with a seed: the same choices as `duet run` with the same knobs.
    const std::string sampled = run_output("-p 'Once upon a time' -n 16 --temp 0.9 --seed 11 --top-k 0 --top-p 1 --min-p 0");
    r = post("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 16}, {"temperature", 0.9}, {"seed", 11}});
    EXPECT_EQ(r["choices"][0]["text"], sampled);
}

// The modelled twin (workload/serve_twin.h): each response's duet.in_batch holds the modelled
// TTFT/TPOT of the steps the request really ran in. Alone, the request's steps are one prefill
// and one decode token per step, as the by-size figures model it; beside three others, each of
// its decode steps carries four sequences and its first step four prompts, so neither figure
// can be smaller than alone.
TEST_F(ServerTest, InBatchModelledTimesFollowTheRealSteps) {
    const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 8}, {"temperature", 0}, {"ignore_eos", true}};
    const double before = metric("duet_modelled_target_ttft_seconds_count");
    const json alone = post("/v1/completions", body);
    const json& in = alone["duet"]["in_batch"];
    ASSERT_TRUE(in.contains("target")) << in.dump();
    EXPECT_EQ(in["baseline"]["policy"], "npu_only");
    EXPECT_EQ(in["target"]["policy"], "npu_pim_coop");
    EXPECT_EQ(in["target"]["tokens"], alone["usage"]["completion_tokens"]);
    for (const char* side : {"baseline", "target"}) {
        SCOPED_TRACE(side);
        EXPECT_GT(in[side]["ttft_ms"].get<double>(), 0);
        EXPECT_GT(in[side]["tpot_ms"].get<double>(), 0);
        // the same prefill as the by-size model's, within the step cache's 6.25 % length grid
        EXPECT_NEAR(in[side]["ttft_ms"].get<double>() / alone["duet"][side]["ttft_ms"].get<double>(), 1.0, 0.15);
    }
    EXPECT_EQ(metric("duet_modelled_target_ttft_seconds_count"), before + 1);

    std::vector<json> together(4);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < together.size(); ++i)
        threads.emplace_back([&, i] { together[i] = post("/v1/completions", body); });
    for (auto& t : threads) t.join();
    for (const json& r : together) {
        const json& b = r["duet"]["in_batch"];
        ASSERT_TRUE(b.contains("baseline")) << b.dump();
        EXPECT_GE(b["baseline"]["ttft_ms"].get<double>(), in["baseline"]["ttft_ms"].get<double>() * 0.999);
        EXPECT_GE(b["baseline"]["tpot_ms"].get<double>(), in["baseline"]["tpot_ms"].get<double>() * 0.999);
    }
}

TEST_F(ServerTest, SixteenConcurrentStreamsFinishAndFreeTheirBlocks) {
    const std::string expect = stream_text({{"prompt", "A dog"}, {"max_tokens", 12}, {"temperature", 0}, {"stream", true}});
    std::vector<std::thread> threads;
    std::atomic<int> ok{0};
    for (int i = 0; i < 16; ++i)
        threads.emplace_back([&] {
            if (stream_text({{"prompt", "A dog"}, {"max_tokens", 12}, {"temperature", 0}, {"stream", true}}) == expect) ++ok;
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(ok.load(), 16);
    // No sequence holds blocks any more: what is used is exactly what the prefix cache keeps.
    EXPECT_EQ(metric("duet_kv_blocks_used"), metric("duet_prefix_cache_blocks"));
    EXPECT_EQ(metric("duet_requests_running"), 0);
}

TEST_F(ServerTest, DisconnectMidStreamFreesBlocks) {
    const double completions_before = metric("duet_completions_total");
    {
        httplib::Client c("127.0.0.1", server_->port());
        c.set_bearer_token_auth(kKey);
        int chunks = 0;
        httplib::Headers h;
        auto body = json{{"prompt", "The end"}, {"max_tokens", 200}, {"temperature", 0}, {"stream", true}}.dump();
        // Read two chunks, then abort the request by returning false from the receiver.
        c.Post("/v1/completions", h, body, "application/json");  // warm (completes)
        httplib::Request req;
        req.method = "POST";
        req.path = "/v1/completions";
        req.headers = {{"Authorization", std::string("Bearer ") + kKey}, {"Content-Type", "application/json"}};
        req.body = json{{"prompt", "The end"}, {"max_tokens", 240}, {"temperature", 0}, {"stream", true}, {"seed", 1}}.dump();
        req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++chunks < 2; };
        auto r = c.send(req);
        EXPECT_GE(chunks, 2);
    }
    // The server notices at its next write and frees the sequence's blocks.
    for (int i = 0; i < 100 && metric("duet_requests_running") != 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(metric("duet_requests_running"), 0);
    EXPECT_EQ(metric("duet_kv_blocks_used"), metric("duet_prefix_cache_blocks"));
    EXPECT_GE(metric("duet_completions_total"), completions_before + 2);
}

TEST_F(ServerTest, PrefixOfAConversationIsReused) {
    json msgs = json::array({{{"role", "system"}, {"content", "You are a helpful assistant that tells short stories."}},
                             {{"role", "user"}, {"content", "Tell me a story about a cat and a dog in the park."}}});
    json first = post("/v1/chat/completions", {{"messages", msgs}, {"max_tokens", 8}, {"temperature", 0}});
    const double hits_before = metric("duet_prefix_cache_hit_tokens_total");
    msgs.push_back({{"role", "assistant"}, {"content", first["choices"][0]["message"]["content"]}});
    msgs.push_back({{"role", "user"}, {"content", "And then?"}});
    json second = post("/v1/chat/completions", {{"messages", msgs}, {"max_tokens", 8}, {"temperature", 0}});
    const int64_t cached = second["usage"]["prompt_tokens_details"]["cached_tokens"];
    EXPECT_GE(cached, 16);  // at least one whole KV block of the shared history
    EXPECT_LT(cached, second["usage"]["prompt_tokens"].get<int64_t>());
    EXPECT_GE(metric("duet_prefix_cache_hit_tokens_total"), hits_before + double(cached));
}

// The client side of the channel: `duet ping` and `duet task` with a settings.json naming this server.
TEST_F(ServerTest, PingAndTaskClients) {
    const std::string base = "http://127.0.0.1:" + std::to_string(server_->port());
    int n_files = 0;
    auto settings = [&](const std::string& model, const std::string& api_base) {
        const std::string path = (*dir_ / ("settings_" + std::to_string(n_files++) + ".json")).string();
        std::ofstream(path) << json{{"api", {{"api_base", api_base}, {"api_key_env", "DUET_TEST_KEY"}, {"model", model},
                                             {"timeout_ms", 5000}, {"max_retries", 0}}}}.dump();
        return path;
    };
    const std::string good = settings("tiny", base);
    auto [rc, out] = run_command("DUET_TEST_KEY=" + std::string(kKey) + " " + duet_binary() + " ping --settings " + good);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_EQ(out.rfind("ok: " + base + " answered for model 'tiny' in ", 0), 0u) << out;

    std::tie(rc, out) = run_command("DUET_TEST_KEY=wrong " + duet_binary() + " ping --settings " + good);
    EXPECT_EQ(rc, 2);
    EXPECT_EQ(out, "duet: error: ping: the server at " + base +
                       " refused the API key: the variable DUET_TEST_KEY (settings api.api_key_env) is set but holds a "
                       "wrong key\n");
    std::tie(rc, out) = run_command("env -u DUET_TEST_KEY " + duet_binary() + " ping --settings " + good);
    EXPECT_NE(out.find("the variable DUET_TEST_KEY (settings api.api_key_env) is not set"), std::string::npos) << out;

    std::tie(rc, out) = run_command("DUET_TEST_KEY=" + std::string(kKey) + " " + duet_binary() + " ping --settings " +
                                    settings("nope", base));
    EXPECT_EQ(rc, 2);
    EXPECT_EQ(out, "duet: error: ping: the server at " + base +
                       " does not know the model 'nope' (settings api.model): The model 'nope' does not exist (this "
                       "server serves 'tiny')\n");
    std::tie(rc, out) = run_command(duet_binary() + " ping --settings " + settings("tiny", "http://127.0.0.1:1"));
    EXPECT_EQ(rc, 2);
    EXPECT_EQ(out.rfind("duet: error: ping: cannot reach http://127.0.0.1:1 (", 0), 0u) << out;

    std::tie(rc, out) = run_command("DUET_TEST_KEY=" + std::string(kKey) + " " + duet_binary() + " task --settings " + good +
                                    " submit --task bench --set model=llama2-7b --set seq_len=128 --set gen_len=4 --wait");
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("\"schema\": \"duet.bench/1\""), std::string::npos) << out;
    const std::string id = out.substr(out.find("task-"), 21);
    std::tie(rc, out) = run_command("DUET_TEST_KEY=" + std::string(kKey) + " " + duet_binary() + " task --settings " + good +
                                    " status " + id);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_EQ(out.rfind(id + "  bench", 0), 0u) << out;
    EXPECT_NE(out.find("done"), std::string::npos) << out;
    std::tie(rc, out) = run_command("DUET_TEST_KEY=" + std::string(kKey) + " " + duet_binary() + " task --settings " + good +
                                    " submit --task bench --set pim.alignment=100");
    EXPECT_EQ(rc, 2);
    EXPECT_NE(out.find("task submit: the server rejected the task: "), std::string::npos) << out;
}

TEST(ServerStandalone, QueueFullIs429AndMissingKeyRefusesToStart) {
    const fs::path dir = fs::temp_directory_path() / ("duet_server_q_" + std::to_string(getpid()));
    fs::create_directories(dir);
    const std::string model = (dir / "m.gguf").string();
    ASSERT_EQ(run_command(duet_binary() + " gen-model --arch tiny-llama --dtype f32 --seed 1 -o " + model).first, 0);
    auto [rc, out] = run_command("env -u DUET_API_KEY " + duet_binary() + " serve -m " + model + " --port 0");
    EXPECT_EQ(rc, 2);
    EXPECT_NE(out.find("the API key variable DUET_API_KEY (settings api.api_key_env) is not set: set it, or start "
                       "with --no-auth to serve without authentication"),
              std::string::npos)
        << out;
    {
        ServerProcess s({"--log-level", "warn", "serve", "-m", model, "--port", "0", "--no-auth", "--queue", "0",
                         "--tasks-db", (dir / "t.db").string()},
                        {});
        httplib::Client c("127.0.0.1", s.port());
        auto r = c.Post("/v1/completions", R"({"prompt":"hi","max_tokens":2})", "application/json");
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 429);
        EXPECT_EQ(json::parse(r->body)["error"]["type"], "rate_limit_error");
    }
    fs::remove_all(dir);
}

TEST(ServerStandalone, SmallKvPoolGives503AndPreemptsWithoutChangingOutput) {
    const fs::path dir = fs::temp_directory_path() / ("duet_server_kv_" + std::to_string(getpid()));
    fs::create_directories(dir);
    const std::string model = (dir / "m.gguf").string();
    ASSERT_EQ(run_command(duet_binary() + " gen-model --arch tiny-llama --dtype f32 --seed 1 -o " + model).first, 0);
    // 6 blocks of 16 = 96 token positions shared by up to 4 sequences.
    ServerProcess s({"--log-level", "warn", "serve", "-m", model, "--port", "0", "--no-auth", "--ctx", "256",
                     "--kv-blocks", "6", "--threads", "1", "--no-prefix-cache", "--tasks-db", (dir / "t.db").string()},
                    {});
    httplib::Client c("127.0.0.1", s.port());
    c.set_read_timeout(std::chrono::seconds(60));
    std::string long_prompt;
    for (int i = 0; i < 40; ++i) long_prompt += " the cat";
    auto r = c.Post("/v1/completions", json{{"prompt", long_prompt}, {"max_tokens", 4}}.dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 503);
    EXPECT_EQ(json::parse(r->body)["error"]["message"].get<std::string>().rfind("The KV cache pool (6 blocks) cannot hold a prompt of", 0), 0u);
    EXPECT_NE(json::parse(r->body)["error"]["message"].get<std::string>().find("--kv-blocks"), std::string::npos);
    // Eight requests that need 6 blocks each cannot run at once: when they overlap, the newest
    // are preempted and recomputed, and every answer equals the one it gets alone.
    const json body = {{"prompt", "Once upon a time there was"}, {"max_tokens", 80}, {"temperature", 0}};
    auto alone = c.Post("/v1/completions", body.dump(), "application/json");
    ASSERT_EQ(alone->status, 200);
    const json expect = json::parse(alone->body)["choices"][0]["text"];
    std::vector<std::thread> threads;
    std::atomic<int> same{0};
    for (int i = 0; i < 8; ++i)
        threads.emplace_back([&] {
            httplib::Client ci("127.0.0.1", s.port());
            ci.set_read_timeout(std::chrono::seconds(60));
            auto ri = ci.Post("/v1/completions", body.dump(), "application/json");
            if (ri && ri->status == 200 && json::parse(ri->body)["choices"][0]["text"] == expect) ++same;
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(same.load(), 8);
    // Whether HTTP arrivals overlapped enough to preempt depends on scheduling; the batcher's
    // own test (tests/runtime/batcher_test.cpp) forces and asserts the preemption.
    EXPECT_NE(c.Get("/metrics")->body.find("\nduet_batch_preemptions_total "), std::string::npos);
    fs::remove_all(dir);
}

TEST(ServerStandalone, TasksSurviveKillAndRestart) {
    const fs::path dir = fs::temp_directory_path() / ("duet_server_t_" + std::to_string(getpid()));
    fs::create_directories(dir);
    const std::string model = (dir / "m.gguf").string(), db = (dir / "tasks.db").string();
    ASSERT_EQ(run_command(duet_binary() + " gen-model --arch tiny-llama --dtype f32 --seed 1 -o " + model).first, 0);
    const std::vector<std::string> args = {"--log-level", "warn", "serve", "-m", model, "--port", "0", "--no-auth",
                                           "--tasks-db", db};
    std::string done_id, pending_id;
    {
        ServerProcess s(args, {});
        httplib::Client c("127.0.0.1", s.port());
        auto bad = c.Post("/v1/tasks", R"({"task":"bench","pim.alignment":100})", "application/json");
        EXPECT_EQ(bad->status, 400);
        EXPECT_EQ(json::parse(bad->body)["error"]["param"], "pim.alignment");
        auto r = c.Post("/v1/tasks", R"({"task":"bench","model":"llama2-7b","seq_len":256,"gen_len":8})", "application/json");
        ASSERT_EQ(r->status, 200) << r->body;
        done_id = json::parse(r->body)["id"];
        for (int i = 0; i < 200; ++i) {
            if (json::parse(c.Get("/v1/tasks/" + done_id)->body)["status"] == "done") break;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        // A long sweep, then kill -9 while it runs or waits.
        r = c.Post("/v1/tasks", R"({"task":"npu_pim_gemv_optimize","model":"llama2-7b","seq_len":2048})", "application/json");
        ASSERT_EQ(r->status, 200) << r->body;
        pending_id = json::parse(r->body)["id"];
        s.kill_now(SIGKILL);
    }
    ServerProcess s(args, {});
    httplib::Client c("127.0.0.1", s.port());
    json list = json::parse(c.Get("/v1/tasks")->body)["data"];
    ASSERT_EQ(list.size(), 2u);
    json done = json::parse(c.Get("/v1/tasks/" + done_id)->body);
    EXPECT_EQ(done["status"], "done");
    EXPECT_EQ(done["result"]["schema"], "duet.bench/1");
    json pending = json::parse(c.Get("/v1/tasks/" + pending_id)->body);
    // Killed before it finished: interrupted, with the reason; or finished in time (a fast machine).
    if (pending["status"] != "done") {
        EXPECT_EQ(pending["status"], "interrupted");
        EXPECT_NE(pending["error"].get<std::string>().find("the server stopped while the task was"), std::string::npos);
    }
    fs::remove_all(dir);
}

}  // namespace
}  // namespace duet::test
