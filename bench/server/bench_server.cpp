// Load benchmark of `duet serve`: N concurrent streaming clients on a generated model, with
// continuous batching on and off (--no-continuous-batching), reporting requests/s, tokens/s and
// p50/p99 TTFT of each and their ratio. Runs the real binary on 127.0.0.1 (free ports).
// Usage: bench_server [--clients N[,N...]] (default 1,8,32) [--requests R] (2) [--max-tokens T] (64)
//        [--parallel P] (8) [--arch PRESET] (small-llama) [--layers N] (the preset's)
//        [--model FILE] (serve this GGUF instead of generating one) [--serve-args "ARGS"] (added to serve)
//        [--duet PATH[,PATH...]] (default: this build's duet; several: each is run in turn, ratios
//        are to the first) [--rounds N] (1: repeat, alternating the binaries)
//        [--modes continuous,static] (both)
//        [--first-request] (instead of the load: first vs warm TTFT after start, warm-up on/off;
//        [--warm-requests K] (5) [--prompt-words W] (32)) [--help]
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include "common/bench_args.h"
#include "server_process.h"

namespace {

using Clock = std::chrono::steady_clock;
using duet::test::ServerProcess;

struct Options {
    std::vector<int> client_counts = {1, 8, 32};
    int requests = 2, max_tokens = 64, parallel = 8, rounds = 1, layers = 0;
    std::string arch = "small-llama", model;
    std::vector<std::string> duets;  // empty: duet_binary()
    std::vector<std::string> serve_extra;  // --serve-args: appended to every `duet serve`
    bool continuous = true, static_batching = true;
    bool first_request = false;
    int warm_requests = 5, prompt_words = 32;
};

struct Result {
    double seconds = 0, requests_per_s = 0, tokens_per_s = 0, ttft_p50_ms = 0, ttft_p99_ms = 0;
    int failed = 0;
};

double pct(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(q * double(v.size())))];
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// One streaming completion; ttft_ms is measured at the client (first SSE chunk).
struct Completion {
    bool ok = false;
    double ttft_ms = 0;
    double server_ttft_ms = -1;  // the server's own (submit to the batcher -> first token), from "duet"."host"
    long prompt_tokens = 0, completion_tokens = 0;
};

Completion complete(httplib::Client& cl, const nlohmann::json& body) {
    Completion c;
    const auto start = Clock::now();
    bool first = true;
    std::string buf;
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.headers = {{"Content-Type", "application/json"}};
    req.body = body.dump();
    req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
        if (first) {
            c.ttft_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
            first = false;
        }
        buf.append(d, n);
        return true;
    };
    auto res = cl.send(req);
    const size_t u = buf.find("\"completion_tokens\":"), p = buf.find("\"prompt_tokens\":");
    if (!res || res->status != 200 || u == std::string::npos || p == std::string::npos) return c;
    c.completion_tokens = std::stol(buf.substr(u + 20));
    c.prompt_tokens = std::stol(buf.substr(p + 16));
    const size_t h = buf.find("\"ttft_ms\":", buf.find("\"host\":"));
    if (h != std::string::npos) c.server_ttft_ms = std::stod(buf.substr(h + 10));
    c.ok = true;
    return c;
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
                const nlohmann::json body = {
                    {"prompt", "Once upon a time, client " + std::to_string(c) + " asked"},
                    {"max_tokens", n_tokens}, {"ignore_eos", true}, {"temperature", 0.8}, {"seed", c * 1000 + r},
                    {"stream", true}, {"stream_options", {{"include_usage", true}}}};
                const Completion done = complete(cl, body);
                if (!done.ok) {
                    ++failed;
                    continue;
                }
                std::lock_guard<std::mutex> lock(mu);
                ttft.push_back(done.ttft_ms);
                tokens += done.completion_tokens;
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

std::vector<std::string> split(const std::string& text) {
    std::vector<std::string> out;
    size_t at = 0;
    while (at <= text.size()) {
        const size_t comma = std::min(text.find(',', at), text.size());
        out.push_back(text.substr(at, comma - at));
        at = comma + 1;
    }
    return out;
}

std::vector<std::string> serve_args(const Options& o, const std::string& model, const std::filesystem::path& dir,
                                    int parallel) {
    std::vector<std::string> args = {"--log-level", "warn", "serve",      "-m",         model,
                                     "--port",      "0",    "--no-auth",  "--parallel", std::to_string(parallel),
                                     "--ctx",       "512",  "--tasks-db", (dir / "t.db").string()};
    args.insert(args.end(), o.serve_extra.begin(), o.serve_extra.end());
    return args;
}

// The load table: every client count, mode, round and binary (binaries alternate within a round).
int run_load(const Options& o, const std::string& model, const std::filesystem::path& dir) {
    std::printf("duet serve load: %s, each client %d streaming requests of %d/4..%d tokens, --parallel %d\n",
                o.model.empty() ? (o.arch + " f16").c_str() : o.model.c_str(), o.requests, o.max_tokens,
                o.max_tokens, o.parallel);
    const bool several = o.duets.size() > 1 || o.rounds > 1;
    for (size_t b = 0; b < o.duets.size() && several; ++b) std::printf("binary %zu: %s\n", b, o.duets[b].c_str());
    std::printf("%8s %-22s %9s %11s %10s %12s %12s %7s\n", "clients", several ? "mode (binary, round)" : "mode",
                "wall s", "requests/s", "tokens/s", "TTFT p50 ms", "TTFT p99 ms", "failed");
    std::vector<int> modes;
    if (o.continuous) modes.push_back(0);
    if (o.static_batching) modes.push_back(1);
    int failed = 0;
    for (int clients : o.client_counts) {
        std::map<std::pair<size_t, int>, std::vector<Result>> all;  // (binary, mode) -> every round
        for (int round = 0; round < o.rounds; ++round)
            for (size_t b = 0; b < o.duets.size(); ++b) {
                Result res[2];
                for (int mode : modes) {
                    std::vector<std::string> args = serve_args(o, model, dir, o.parallel);
                    if (mode == 1) args.push_back("--no-continuous-batching");
                    ServerProcess s(args, {}, {}, o.duets[b]);
                    res[mode] = load(s.port(), clients, o.requests, o.max_tokens);
                    const Result& r = res[mode];
                    all[{b, mode}].push_back(r);
                    failed += r.failed;
                    std::string label = mode == 0 ? "continuous batching" : "static batching";
                    if (several) label = (mode == 0 ? "continuous" : "static") + std::string(" (") +
                                         std::to_string(b) + ", " + std::to_string(round + 1) + ")";
                    std::printf("%8d %-22s %9.2f %11.2f %10.1f %12.1f %12.1f %7d\n", clients, label.c_str(),
                                r.seconds, r.requests_per_s, r.tokens_per_s, r.ttft_p50_ms, r.ttft_p99_ms, r.failed);
                    std::fflush(stdout);
                }
                if (modes.size() == 2)
                    std::printf(
                        "%8d continuous / static: requests/s x%.2f, tokens/s x%.2f, TTFT p50 x%.2f, TTFT p99 x%.2f\n",
                        clients, res[0].requests_per_s / res[1].requests_per_s,
                        res[0].tokens_per_s / res[1].tokens_per_s,
                        res[0].ttft_p50_ms / std::max(1e-9, res[1].ttft_p50_ms),
                        res[0].ttft_p99_ms / std::max(1e-9, res[1].ttft_p99_ms));
            }
        if (!several) continue;
        // Medians over the rounds, and each binary against binary 0 (median of per-round ratios).
        for (int mode : modes)
            for (size_t b = 0; b < o.duets.size(); ++b) {
                const auto& rs = all[{b, mode}];
                auto med = [&](double Result::*f) {
                    std::vector<double> v;
                    for (const Result& r : rs) v.push_back(r.*f);
                    return median(v);
                };
                std::printf("%8d %s binary %zu, median of %d: tokens/s %.1f, TTFT p50 %.1f ms, p99 %.1f ms", clients,
                            mode == 0 ? "continuous" : "static", b, o.rounds, med(&Result::tokens_per_s),
                            med(&Result::ttft_p50_ms), med(&Result::ttft_p99_ms));
                if (b > 0) {
                    const auto& base = all[{0, mode}];
                    auto ratio = [&](double Result::*f) {
                        std::vector<double> v;
                        for (size_t i = 0; i < rs.size(); ++i) v.push_back(rs[i].*f / std::max(1e-9, base[i].*f));
                        return median(v);
                    };
                    std::printf("; / binary 0: tokens/s x%.2f, TTFT p50 x%.2f, p99 x%.2f", ratio(&Result::tokens_per_s),
                                ratio(&Result::ttft_p50_ms), ratio(&Result::ttft_p99_ms));
                }
                std::printf("\n");
            }
    }
    return failed;
}

// Page faults of a process so far (/proc/PID/stat fields 10 and 12).
std::pair<long, long> faults_of(int pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const size_t close = s.rfind(')');
    if (close == std::string::npos) return {0, 0};
    std::istringstream in(s.substr(close + 2));
    std::string field[11];
    for (auto& x : field) in >> x;  // state .. majflt (fields 3..12 of the file, 1-based)
    return {std::stol(field[7]), std::stol(field[9])};
}

// The prompt of request i: the same words in a rotated order, so every prompt has the same
// length in tokens but a different first token (no prefix shared; the server also runs with
// --no-prefix-cache).
std::string rotated_prompt(int words, int i) {
    static const char* kWords[] = {"the",   "quick", "brown", "fox",  "jumps", "over",  "lazy",  "dog",
                                   "and",   "then",  "runs",  "far",  "away",  "from",  "home",  "into",
                                   "green", "hills", "where", "tall", "trees", "grow",  "under", "sky",
                                   "while", "birds", "sing",  "old",  "songs", "about", "river", "stone"};
    const int n_words = int(sizeof kWords / sizeof kWords[0]);
    std::string s;
    for (int w = 0; w < words; ++w) {
        if (w) s += ' ';
        s += kWords[(w + i * 5) % n_words];
    }
    return s;
}

// 1 + n prompts with the same token count (rotated_prompt, counted by a server of the same model
// started for this only, so the measured servers see each prompt once): the most common count.
std::vector<std::string> same_length_prompts(const Options& o, const std::string& model,
                                             const std::filesystem::path& dir, int n) {
    std::vector<std::string> args = serve_args(o, model, dir, 1);
    args.push_back("--no-prefix-cache");
    ServerProcess s(args, {}, {}, o.duets[0]);
    httplib::Client cl("127.0.0.1", s.port());
    cl.set_read_timeout(std::chrono::seconds(600));
    std::map<long, std::vector<std::string>> by_count;
    for (int i = 0; i < 32; ++i) {  // 32 distinct rotations
        const std::string text = rotated_prompt(o.prompt_words, i);
        const Completion c = complete(cl, {{"prompt", text}, {"max_tokens", 1}, {"stream", true},
                                           {"stream_options", {{"include_usage", true}}}});
        if (!c.ok) continue;
        auto& v = by_count[c.prompt_tokens];
        v.push_back(text);
        if (int(v.size()) == n + 1) return v;
    }
    std::fprintf(stderr, "bench_server: found no %d prompts of one token count; using mixed lengths\n", n + 1);
    std::vector<std::string> v;
    for (int i = 0; i <= n; ++i) v.push_back(rotated_prompt(o.prompt_words, i));
    return v;
}

// First request after `duet serve` printed its address vs warm ones, warm-up on and off.
int run_first_request(const Options& o, const std::string& model, const std::filesystem::path& dir) {
    std::printf("duet serve first request: %s, prompts of %d words (same token count, different text, "
                "--no-prefix-cache), 4 generated tokens, %d warm requests, --parallel %d\n",
                o.model.empty() ? (o.arch + " f16").c_str() : o.model.c_str(), o.prompt_words, o.warm_requests,
                o.parallel);
    for (size_t b = 0; b < o.duets.size() && o.duets.size() > 1; ++b)
        std::printf("binary %zu: %s\n", b, o.duets[b].c_str());
    std::printf("%-26s %7s %10s %9s %9s %6s %14s %13s %12s %11s %6s\n", "warm-up (binary, round)", "start s",
                "prompt tok", "first ms", "warm ms", "ratio", "srv first ms", "srv warm ms", "first minflt",
                "warm minflt", "majflt");
    const std::vector<std::string> prompts = same_length_prompts(o, model, dir, o.warm_requests);
    int failed = 0;
    std::map<std::pair<size_t, int>, std::vector<double>> ratios;
    for (int round = 0; round < o.rounds; ++round)
        for (size_t b = 0; b < o.duets.size(); ++b)
            for (int warm = 1; warm >= 0; --warm) {
                std::vector<std::string> args = serve_args(o, model, dir, o.parallel);
                args.push_back("--no-prefix-cache");
                if (!warm) args.push_back("--no-warmup");
                const auto t0 = Clock::now();
                ServerProcess s(args, {}, {}, o.duets[b]);
                const double start_s = std::chrono::duration<double>(Clock::now() - t0).count();
                httplib::Client cl("127.0.0.1", s.port());
                cl.set_read_timeout(std::chrono::seconds(600));
                std::vector<double> warm_ms, srv_warm_ms;
                std::vector<long> warm_minflt;
                double first_ms = 0, srv_first_ms = 0;
                long first_minflt = 0, majflt = 0, n_prompt = -1;
                bool same_length = true;
                for (int i = 0; i <= o.warm_requests; ++i) {
                    const nlohmann::json body = {{"prompt", prompts[size_t(i)]},
                                                 {"max_tokens", 4},
                                                 {"ignore_eos", true},
                                                 {"temperature", 0},
                                                 {"stream", true},
                                                 {"stream_options", {{"include_usage", true}}}};
                    const auto f0 = faults_of(s.pid());
                    const Completion c = complete(cl, body);
                    const auto f1 = faults_of(s.pid());
                    if (!c.ok) {
                        ++failed;
                        continue;
                    }
                    if (n_prompt >= 0 && c.prompt_tokens != n_prompt) same_length = false;
                    n_prompt = c.prompt_tokens;
                    majflt += f1.second - f0.second;
                    if (i == 0) {
                        first_ms = c.ttft_ms;
                        srv_first_ms = c.server_ttft_ms;
                        first_minflt = f1.first - f0.first;
                    } else {
                        warm_ms.push_back(c.ttft_ms);
                        srv_warm_ms.push_back(c.server_ttft_ms);
                        warm_minflt.push_back(f1.first - f0.first);
                    }
                }
                std::vector<double> wf(warm_minflt.begin(), warm_minflt.end());
                const double w = median(warm_ms), ratio = first_ms / std::max(1e-9, w);
                ratios[{b, warm}].push_back(ratio);
                const std::string label = std::string(warm ? "on (default)" : "off (--no-warmup)") + " (" +
                                          std::to_string(b) + ", " + std::to_string(round + 1) + ")";
                std::printf("%-26s %7.2f %9ld%s %9.1f %9.1f %6.2f %14.1f %13.1f %12ld %11.0f %6ld\n", label.c_str(),
                            start_s, n_prompt, same_length ? " " : "!", first_ms, w, ratio, srv_first_ms,
                            median(srv_warm_ms), first_minflt, median(wf), majflt);
                std::fflush(stdout);
            }
    for (size_t b = 0; b < o.duets.size(); ++b)
        for (int warm = 1; warm >= 0; --warm)
            std::printf("binary %zu, warm-up %s: first / warm TTFT, median of %d rounds: x%.2f\n", b,
                        warm ? "on" : "off", o.rounds, median(ratios[{b, warm}]));
    std::printf("('!' after the prompt tokens: the prompts' token counts differed; minflt: minor page faults of the "
                "server during the request, warm: median)\n");
    return failed;
}



constexpr const char* kProgram = "bench_server";
constexpr const char* kUsage =
    "usage: bench_server [--clients N[,N...]] (default 1,8,32) [--requests R] (2) [--max-tokens T] (64)\n"
    "                    [--parallel P] (8) [--arch PRESET] (small-llama) [--layers N] (the preset's)\n"
    "                    [--model FILE] [--serve-args \"ARGS\"] [--duet PATH[,PATH...]] [--rounds N] (1)\n"
    "                    [--modes continuous,static] (both) [--first-request [--warm-requests K] (5)\n"
    "                    [--prompt-words W] (32)]\n";

}  // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--help" || a == "-h") {
            std::fputs(kUsage, stdout);
            return 0;
        }
        if (a == "--first-request") {
            o.first_request = true;
            continue;
        }
        const std::string v = duet::bench::flag_value(kProgram, argc, argv, i);
        int* number = a == "--requests"        ? &o.requests
                      : a == "--max-tokens"    ? &o.max_tokens
                      : a == "--parallel"      ? &o.parallel
                      : a == "--layers"        ? &o.layers
                      : a == "--rounds"        ? &o.rounds
                      : a == "--warm-requests" ? &o.warm_requests
                      : a == "--prompt-words"  ? &o.prompt_words
                                               : nullptr;
        if (number) {
            *number = int(duet::bench::parse_int(kProgram, a, v, 1));
        } else if (a == "--clients") {
            o.client_counts.clear();
            for (const std::string& c : split(v)) o.client_counts.push_back(int(duet::bench::parse_int(kProgram, a, c, 1)));
        }
        else if (a == "--arch") o.arch = v;
        else if (a == "--model") o.model = v;
        else if (a == "--serve-args") {
            std::istringstream in(v);
            for (std::string w; in >> w;) o.serve_extra.push_back(w);
        }
        else if (a == "--duet") o.duets = split(v);
        else if (a == "--modes") {
            o.continuous = o.static_batching = false;
            for (const std::string& m : split(v)) {
                if (m == "continuous") o.continuous = true;
                else if (m == "static") o.static_batching = true;
                else
                    duet::bench::usage_error(kProgram, "--modes " + v + " (allowed: continuous, static, both comma-separated)");
            }
        } else {
            duet::bench::usage_error(kProgram, "unknown option " + a +
                                                   " (allowed: --clients N[,N...], --requests, --max-tokens, --parallel, "
                                                   "--arch, --layers, --model, --serve-args, --duet PATH[,PATH...], "
                                                   "--rounds, --modes, --first-request, --warm-requests, --prompt-words, "
                                                   "--help)");
        }
    }
    if (o.duets.empty()) o.duets = {duet::test::duet_binary()};
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("duet_bench_server_" + std::to_string(getpid()));
    fs::create_directories(dir);
    std::string model = o.model;
    if (model.empty()) {
        model = (dir / "m.gguf").string();
        std::string cmd = duet::test::duet_binary() + " gen-model --arch " + o.arch + " --dtype f16 --seed 1 -o " + model;
        if (o.layers > 0) cmd += " --layers " + std::to_string(o.layers);
        auto [rc, out] = duet::test::run_command(cmd);
        if (rc != 0) {
            std::fprintf(stderr, "%s", out.c_str());
            return 1;
        }
    }
    const int failed = o.first_request ? run_first_request(o, model, dir) : run_load(o, model, dir);
    fs::remove_all(dir);
    return failed == 0 ? 0 : 1;
}
