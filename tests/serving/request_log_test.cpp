// A real server's request log replays: `duet serve --request-log` on a generated model answers
// real HTTP requests, and `duet bench --workload serving --workload-file` reads the log it wrote.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "server_process.h"

namespace fs = std::filesystem;
using nlohmann::json;
using duet::test::duet_binary;
using duet::test::run_command;

TEST(RequestLog, TheServersLogReplaysThroughTheSimulator) {
    const fs::path dir = fs::temp_directory_path() / ("duet_request_log_test_" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string model = (dir / "tiny.gguf").string(), log = (dir / "requests.jsonl").string();
    auto [rc, out] = run_command(duet_binary() + " gen-model --arch tiny-llama --dtype f32 --seed 3 -o " + model);
    ASSERT_EQ(rc, 0) << out;
    std::vector<json> usage;
    {
        duet::test::ServerProcess server({"--log-level", "warn", "serve", "-m", model, "--port", "0", "--no-auth",
                                          "--ctx", "256", "--threads", "1", "--tasks-db", (dir / "t.db").string(),
                                          "--request-log", log},
                                         {});
        httplib::Client c("127.0.0.1", server.port());
        c.set_read_timeout(std::chrono::seconds(60));
        const std::pair<const char*, int> reqs[] = {{"Once upon a time", 5}, {"The cat", 3}, {"Hello there, friend", 7}};
        for (const auto& [prompt, n] : reqs) {
            auto r = c.Post("/v1/completions", json{{"prompt", prompt}, {"max_tokens", n}, {"temperature", 0}}.dump(),
                            "application/json");
            ASSERT_TRUE(r);
            ASSERT_EQ(r->status, 200) << r->body;
            usage.push_back(json::parse(r->body)["usage"]);
        }
    }
    std::ifstream in(log);
    std::vector<json> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
    ASSERT_EQ(lines.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(lines[i]["prompt_tokens"], usage[i]["prompt_tokens"]) << i;
        EXPECT_EQ(lines[i]["output_tokens"], usage[i]["completion_tokens"]) << i;
        if (i > 0) {
            EXPECT_GT(lines[i]["arrival_s"].get<double>(), lines[i - 1]["arrival_s"].get<double>());
        }
    }
    const std::string report = (dir / "replay.json").string();
    std::tie(rc, out) = run_command(duet_binary() + " --log-level off bench --workload serving --model " + model +
                                    " --workload-file " + log + " --ctx 256 --kv-blocks 64 --no-verdict-exit --report " + report);
    ASSERT_EQ(rc, 0) << out;
    const json r = json::parse(std::ifstream(report));
    for (const char* side : {"baseline", "target"}) {
        const json& s = r["serving"][side];
        EXPECT_EQ(s["completed"], 3) << side;
        for (size_t i = 0; i < 3; ++i) {
            EXPECT_EQ(s["per_request"][i]["prompt_tokens"], lines[i]["prompt_tokens"]) << i;
            EXPECT_EQ(s["per_request"][i]["output_tokens"], lines[i]["output_tokens"]) << i;
            EXPECT_NEAR(s["per_request"][i]["arrival_s"].get<double>(), lines[i]["arrival_s"].get<double>(), 1e-9);
        }
    }
    fs::remove_all(dir);
}
