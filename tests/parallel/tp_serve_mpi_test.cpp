// `mpirun -np 2 duet serve --tp 2` (and `--pp 2`): rank 0 serves HTTP and drives rank 1; its
// completions equal those of a one-process server on the same model (the reference).
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "../server/server_process.h"
#include "mpirun.h"

namespace duet::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::string> serve_args(const std::string& model, const fs::path& db) {
    return {"--log-level", "warn", "serve",     "-m",    model,          "--port", "0", "--parallel", "2",
            "--ctx",       "256",  "--threads", "1",     "--no-auth",    "--tasks-db", db.string()};
}

json post(int port, const json& body, int want_status = 200) {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(std::chrono::seconds(120));
    auto r = c.Post("/v1/completions", body.dump(), "application/json");
    EXPECT_TRUE(r);
    if (!r) return {};
    EXPECT_EQ(r->status, want_status) << r->body;
    return json::parse(r->body);
}

// `flag` is "--tp" or "--pp"; `arch` the generated model's preset.
void expect_two_ranks_serve_like_one(const std::string& flag, const std::string& arch = "tiny-mistral") {
    const fs::path dir = fs::temp_directory_path() / ("duet_tp_serve_" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string model = (dir / "tiny.gguf").string();
    auto [rc, out] = run_command(duet_binary() + " gen-model --arch " + arch + " --dtype f32 --seed 5 -o " + model);
    ASSERT_EQ(rc, 0) << out;

    ServerProcess one(serve_args(model, dir / "one.db"), {});
    std::vector<std::string> tp_args = serve_args(model, dir / "two.db");
    tp_args.insert(tp_args.end(), {flag, "2"});
    ServerProcess two(tp_args, {}, mpirun_prefix(2));

    // Sequential requests: the second reuses rank 1's KV slots after the first was released.
    for (const char* prompt : {"Once upon a time", "The little dog", "Once upon a time there was"}) {
        const json body = {{"prompt", prompt}, {"max_tokens", 16}, {"temperature", 0}};
        const json a = post(one.port(), body), b = post(two.port(), body);
        ASSERT_TRUE(a.contains("choices") && b.contains("choices")) << a << b;
        EXPECT_FALSE(a["choices"][0]["text"].get<std::string>().empty());
        EXPECT_EQ(b["choices"][0]["text"], a["choices"][0]["text"]) << prompt << " " << flag << " " << arch;
        EXPECT_EQ(b["usage"]["completion_tokens"], a["usage"]["completion_tokens"]) << prompt;
    }
    // Two at once run in one batch on both ranks.
    json c1, c2;
    std::thread t([&] { c1 = post(two.port(), {{"prompt", "A cat"}, {"max_tokens", 12}, {"temperature", 0}}); });
    c2 = post(two.port(), {{"prompt", "A bird sang"}, {"max_tokens", 12}, {"temperature", 0}});
    t.join();
    EXPECT_EQ(c1["usage"]["completion_tokens"], 12) << c1;
    EXPECT_EQ(c2["usage"]["completion_tokens"], 12) << c2;
    // n > 1 would fork KV the other rank never computed: refused, and the server keeps serving.
    const json e = post(two.port(), {{"prompt", "x"}, {"max_tokens", 2}, {"n", 2}}, 400);
    EXPECT_EQ(e["error"]["message"], "'n' = 2 is more than this server runs at once") << e;
    const json x = {{"prompt", "x"}, {"max_tokens", 2}, {"temperature", 0}};  // greedy: a sampled EOS would stop early
    EXPECT_EQ(post(two.port(), x)["usage"]["completion_tokens"], post(one.port(), x)["usage"]["completion_tokens"]);

    two.kill_now(SIGTERM);  // mpirun forwards it to both ranks
    one.kill_now();
    fs::remove_all(dir);
}

TEST(TpServeMpi, CompletionsOfTwoRanksEqualOneProcess) {
    if (mpirun_path().empty()) GTEST_SKIP() << "mpirun is not installed";
    expect_two_ranks_serve_like_one("--tp");
}

// tiny-deepseek2: Mixture-of-Experts and latent attention in one model.
TEST(TpServeMpi, ExpertAndLatentAttentionCompletionsOfTwoRanksEqualOneProcess) {
    if (mpirun_path().empty()) GTEST_SKIP() << "mpirun is not installed";
    expect_two_ranks_serve_like_one("--tp", "tiny-deepseek2");
}

TEST(PpServeMpi, CompletionsOfTwoStagesEqualOneProcess) {
    if (mpirun_path().empty()) GTEST_SKIP() << "mpirun is not installed";
    expect_two_ranks_serve_like_one("--pp");
}

}  // namespace
}  // namespace duet::test
