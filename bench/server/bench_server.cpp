// Load benchmark of `duet serve`: N concurrent streaming clients on a generated model, with
// continuous batching on and off (--no-continuous-batching), reporting requests/s, tokens/s and
// p50/p99 TTFT of each and their ratio. Runs the real binary on 127.0.0.1 (free ports).
// Usage: bench_server [--clients N[,N...]] (default 1,8,32) [--requests R] (2) [--max-tokens T] (64)
//        [--parallel P] (8) [--arch PRESET]
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "server_process.h"

namespace {

using Clock = std::chrono::steady_clock;
using duet::test::ServerProcess;

struct Result {
    double seconds = 0, requests_per_s = 0, tokens_per_s = 0, ttft_p50_ms = 0, ttft_p99_ms = 0;
    int failed = 0;
};

double pct(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(q * double(v.size())))];
}

Result load(int port, int clients, int requests, int max_tokens) {
    std::mutex mu;
    std::vector<double> ttft;
    std::atomic<long> tokens{0};
    std::atomic<int> failed{0};
    const auto t0 = Clock::now();
    std::vector<std::thread> th;
    for (int c = 0; c < clients; ++c)
        th.emplace_back([&, c] {
            httplib::Client cl("127.0.0.1", port);
            cl.set_read_timeout(std::chrono::seconds(300));
            for (int r = 0; r < requests; ++r) {
                // Mixed lengths (1/4 .. 4/4 of max_tokens), as real traffic has: a static batch
                // waits for its longest member, a continuous one refills the freed slot at once.
                const int n_tokens = std::max(1, max_tokens / 4 * (1 + (c * 7 + r * 3) % 4));
                const std::string body =
                    nlohmann::json{{"prompt", "Once upon a time, client " + std::to_string(c) + " asked"},
                                   {"max_tokens", n_tokens}, {"ignore_eos", true}, {"temperature", 0.8}, {"seed", c * 1000 + r},
                                   {"stream", true}, {"stream_options", {{"include_usage", true}}}}.dump();
                const auto start = Clock::now();
                bool first = true;
                std::string buf;
                httplib::Request req;
                req.method = "POST";
                req.path = "/v1/completions";
                req.headers = {{"Content-Type", "application/json"}};
                req.body = body;
                req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
                    if (first) {
                        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
                        std::lock_guard<std::mutex> lock(mu);
                        ttft.push_back(ms);
                        first = false;
                    }
                    buf.append(d, n);
                    return true;
                };
                auto res = cl.send(req);
                const size_t u = buf.find("\"completion_tokens\":");
                if (!res || res->status != 200 || u == std::string::npos) {
                    ++failed;
                    continue;
                }
                tokens += std::stol(buf.substr(u + 20));
            }
        });
    for (auto& t : th) t.join();
    Result r;
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    r.requests_per_s = double(clients * requests - failed) / r.seconds;
    r.tokens_per_s = double(tokens) / r.seconds;
    r.ttft_p50_ms = pct(ttft, 0.5);
    r.ttft_p99_ms = pct(ttft, 0.99);
    r.failed = failed;
    return r;
}

std::vector<int> parse_list(const std::string& text) {
    std::vector<int> out;
    size_t at = 0;
    while (at <= text.size()) {
        const size_t comma = std::min(text.find(',', at), text.size());
        out.push_back(std::stoi(text.substr(at, comma - at)));
        at = comma + 1;
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> client_counts = {1, 8, 32};
    int requests = 2, max_tokens = 64, parallel = 8;
    std::string arch = "small-llama";
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--clients") client_counts = parse_list(argv[i + 1]);
        else if (a == "--requests") requests = std::stoi(argv[i + 1]);
        else if (a == "--max-tokens") max_tokens = std::stoi(argv[i + 1]);
        else if (a == "--parallel") parallel = std::stoi(argv[i + 1]);
        else if (a == "--arch") arch = argv[i + 1];
        else {
            std::fprintf(stderr, "bench_server: unknown option %s (allowed: --clients N[,N...], --requests, --max-tokens, "
                         "--parallel, --arch)\n", a.c_str());
            return 2;
        }
    }
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("duet_bench_server_" + std::to_string(getpid()));
    fs::create_directories(dir);
    const std::string model = (dir / "m.gguf").string();
    auto [rc, out] = duet::test::run_command(duet::test::duet_binary() + " gen-model --arch " + arch +
                                             " --dtype f16 --seed 1 -o " + model);
    if (rc != 0) {
        std::fprintf(stderr, "%s", out.c_str());
        return 1;
    }
    std::printf("duet serve load: %s f16, each client %d streaming requests of %d/4..%d tokens, --parallel %d\n",
                arch.c_str(), requests, max_tokens, max_tokens, parallel);
    std::printf("%8s %-22s %9s %11s %10s %12s %12s %7s\n", "clients", "mode", "wall s", "requests/s", "tokens/s",
                "TTFT p50 ms", "TTFT p99 ms", "failed");
    int failed = 0;
    for (int clients : client_counts) {
        Result res[2];
        for (int mode = 0; mode < 2; ++mode) {
            std::vector<std::string> args = {"--log-level", "warn", "serve", "-m", model, "--port", "0", "--no-auth",
                                             "--parallel", std::to_string(parallel), "--ctx", "512", "--tasks-db",
                                             (dir / "t.db").string()};
            if (mode == 1) args.push_back("--no-continuous-batching");
            ServerProcess s(args, {});
            res[mode] = load(s.port(), clients, requests, max_tokens);
            const Result& r = res[mode];
            failed += r.failed;
            std::printf("%8d %-22s %9.2f %11.2f %10.1f %12.1f %12.1f %7d\n", clients,
                        mode == 0 ? "continuous batching" : "static batching", r.seconds, r.requests_per_s,
                        r.tokens_per_s, r.ttft_p50_ms, r.ttft_p99_ms, r.failed);
        }
        std::printf("%8d continuous / static: requests/s x%.2f, tokens/s x%.2f, TTFT p50 x%.2f, TTFT p99 x%.2f\n",
                    clients, res[0].requests_per_s / res[1].requests_per_s, res[0].tokens_per_s / res[1].tokens_per_s,
                    res[0].ttft_p50_ms / std::max(1e-9, res[1].ttft_p50_ms),
                    res[0].ttft_p99_ms / std::max(1e-9, res[1].ttft_p99_ms));
    }
    fs::remove_all(dir);
    return failed == 0 ? 0 : 1;
}
