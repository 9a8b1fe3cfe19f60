// The /v1/tasks payloads of `duet serve` (src/server/task_kinds.cpp) checked against the task's
// model before anything is built: a layer past the model in scheduling.npu_only_layers and a
// prompt past its context are 400s naming the field, on the real binary over HTTP.
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "../server/server_process.h"

namespace {

namespace fs = std::filesystem;
using duet::test::duet_binary;
using duet::test::run_command;
using duet::test::ServerProcess;
using json = nlohmann::json;

class TaskLimits : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        dir_ = fs::temp_directory_path() / ("duet_task_limits_" + std::to_string(::getpid()));
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        const std::string model = (dir_ / "tiny.gguf").string();
        const std::string gen = duet_binary() + " gen-model --arch tiny-llama --dtype f32 --seed 1 -o " + model;
        ASSERT_EQ(run_command(gen).first, 0);
        server_ = new ServerProcess({"--log-level", "warn", "serve", "-m", model, "--port", "0", "--no-auth",
                                     "--threads", "1", "--task-memory-mb", "256", "--tasks-db",
                                     (dir_ / "tasks.db").string()},
                                    {});
    }
    static void TearDownTestSuite() {
        delete server_;
        fs::remove_all(dir_);
    }
    // POSTs a task payload; expects a 400 whose error names `param` and has exactly `message`.
    static void expect_refused(const json& payload, const std::string& param, const std::string& message) {
        httplib::Client c("127.0.0.1", server_->port());
        c.set_read_timeout(std::chrono::seconds(30));
        auto r = c.Post("/v1/tasks", payload.dump(), "application/json");
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 400) << r->body;
        const json e = json::parse(r->body)["error"];
        EXPECT_EQ(e["param"], param) << r->body;
        EXPECT_EQ(e["message"], message) << r->body;
    }
    static inline fs::path dir_;
    static inline ServerProcess* server_ = nullptr;
};

TEST_F(TaskLimits, LayersPastTheModelAreRefused) {
    const std::string past = "\"30-40\": layer 32 is past llama2-7b's 32 layers (allowed: layers 0 to 31)";
    for (const char* kind : {"bench", "npu_pim_gemv_optimize"})
        expect_refused({{"task", kind}, {"model", "llama2-7b"}, {"scheduling.npu_only_layers", "30-40"}},
                       "scheduling.npu_only_layers", "task parameter 'scheduling.npu_only_layers' = " + past);
}

TEST_F(TaskLimits, PromptsPastTheContextAreRefused) {
    for (const char* kind : {"bench", "npu_pim_gemv_optimize"})
        expect_refused({{"task", kind}, {"model", "llama2-7b"}, {"seq_len", 100000}}, "seq_len",
                       "task parameter 'seq_len' = 100000 with gen_len = 256 needs 100256 tokens, more than "
                       "llama2-7b's context of 4096 tokens (allowed: seq_len at most 3840)");
    expect_refused({{"task", "bench"}, {"model", "llama2-7b"}, {"gen_len", 5000}}, "gen_len",
                   "gen_len = 5000 does not fit llama2-7b's context of 4096 tokens (allowed: gen_len at most 4095)");
}

// A bench or optimisation task's "topology.ep" splits the experts as `duet bench --ep` does, with its errors.
TEST_F(TaskLimits, ExpertParallelBenchTasksAreCheckedAtSubmission) {
    for (const char* kind : {"bench", "npu_pim_gemv_optimize"})
        expect_refused({{"task", kind}, {"model", "llama2-7b"}, {"topology.ep", 2}, {"topology.npus", 2}},
                       "topology.ep",
                       "--ep = 2: 'llama2-7b' has no routed experts, expert parallelism needs a Mixture-of-Experts "
                       "model (allowed: --ep 1) [task parameter 'topology.ep']");
    expect_refused({{"task", "bench"}, {"model", "mixtral-8x7b"}, {"topology.ep", 4}, {"topology.npus", 6}},
                   "topology.ep",
                   "--ep 4 x --tp 1 x --pp 1 = 4 ranks do not divide the 6 NPUs of the topology: each rank is an NPU "
                   "(allowed: --npus a multiple of 4, or ranks that divide 6) [task parameter 'topology.ep']");
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(std::chrono::seconds(30));
    const json ok = {{"task", "bench"}, {"model", "qwen3-30b-a3b"}, {"topology.ep", 4}, {"topology.npus", 4},
                     {"topology.pims", 4}, {"memory.cache_limit_mb", 8192}, {"seq_len", 64}, {"gen_len", 4}};
    auto r = c.Post("/v1/tasks", ok.dump(), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const std::string id = json::parse(r->body)["id"];
    json t = json::object();
    for (int i = 0; i < 600 && t.value("status", "") != "done" && t.value("status", "") != "failed"; ++i) {
        if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        t = json::parse(c.Get("/v1/tasks/" + id)->body);
    }
    ASSERT_EQ(t["status"], "done") << t.dump();
    EXPECT_EQ(t["result"]["parallel"]["ep"], 4);
    EXPECT_EQ(t["result"]["target"]["experts"]["experts_per_device"], 32);
}

// Tasks estimate what they hold before they are queued (tune/memory_estimate.h): past the
// server's --task-memory-mb a payload is a 400 with the arithmetic (the default optimisation
// task used to peak at 4.6 GB, a 60-byte payload could ask for any gen_len or budget).
TEST_F(TaskLimits, TasksPastTheMemoryCapAreRefused) {
    expect_refused({{"task", "bench"}, {"model", "llama2-7b"}, {"seq_len", 16}, {"gen_len", 2000}}, "gen_len",
                   "a bench task of llama2-7b needs at least 0.28 GiB: 64 MiB base + 1 thread(s) x 221.6 MiB of plans "
                   "(1 batch size(s) x 2 plans x 2000 forwards x 484 op records x 120 B), more than the cap of 0.25 "
                   "GiB (duet serve --task-memory-mb 256; allowed: a smaller gen_len or another model, or a larger "
                   "cap)");
    httplib::Client c("127.0.0.1", server_->port());
    auto r = c.Post("/v1/tasks", R"({"task":"npu_pim_gemv_optimize","model":"llama2-7b","budget":1000000})",
                    "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    const json e = json::parse(r->body)["error"];
    EXPECT_EQ(e["param"], "budget");
    const std::string m = e["message"];
    EXPECT_EQ(m.rfind("this optimisation task needs at least ", 0), 0u) << m;
    EXPECT_NE(m.find(" + 1000009 points x 4500 B + 1 thread(s) x "), std::string::npos) << m;
    EXPECT_NE(m.find("(duet serve --task-memory-mb 256; allowed: a smaller gen_len or budget"), std::string::npos) << m;
    // Within the cap: queued as before.
    auto ok = c.Post("/v1/tasks", R"({"task":"bench","model":"llama2-7b","seq_len":16,"gen_len":8})",
                     "application/json");
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200) << ok->body;
}

}  // namespace
