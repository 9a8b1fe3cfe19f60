// `duet bench --workload serving` end to end: the report's schema, determinism with --seed,
// and bad traces rejected with exact messages and exit status 2.
#include <gtest/gtest.h>

#include "bench_report_run.h"
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

using Result = duet::test::BenchRun;

// These tests check the numbers; the verdicts' exit status is checked once, below.
Result run(const std::string& args, bool gate = false) {
    return duet::test::run_bench("--workload serving " + args, "serving_cli_test", "", "off", gate);
}

const char* kSmall = "--model llama2-7b --requests 40 --seq-len 256 --gen-len 16 --rate 8 ";

TEST(ServingCli, ReportsBothPlacementsWithPercentilesAndGoodput) {
    const Result r = run(std::string(kSmall) + "--seed 3 --slo-ttft-ms 200 --slo-tpot-ms 40");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("KV cache (npu_only): "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("TTFT ms p99"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("goodput (req/s)"), std::string::npos) << r.out;
    EXPECT_EQ(r.report["schema"], "duet.serving/1");
    for (const char* side : {"baseline", "target"}) {
        const nlohmann::json& s = r.report["serving"][side];
        EXPECT_EQ(s["completed"], 40) << side;
        for (const char* k : {"output_tokens_per_s", "requests_per_s", "goodput_rps"}) EXPECT_GT(s[k], 0.0) << k;
        for (const char* d : {"ttft_ms", "tpot_ms", "e2e_ms"}) {
            EXPECT_LE(s[d]["p50"].get<double>(), s[d]["p90"].get<double>()) << d;
            EXPECT_LE(s[d]["p90"].get<double>(), s[d]["p99"].get<double>()) << d;
            EXPECT_GT(s[d]["mean"].get<double>(), 0.0) << d;
        }
        EXPECT_EQ(s["per_request"].size(), 40u);
        EXPECT_GT(s["kv_cache"]["blocks"].get<int64_t>(), 0);
    }
    EXPECT_EQ(r.report["serving"]["baseline"]["policy"], "npu_only");
    EXPECT_EQ(r.report["serving"]["target"]["policy"], "npu_pim_coop");
}

TEST(ServingCli, TraceHoldsTheFirstStepsOfBothPlacements) {
    const std::string trace = std::string(DUET_BINARY_DIR) + "/serving_cli_test_trace.json";
    std::remove(trace.c_str());
    const Result r = run(std::string(kSmall) + "--trace " + trace + " --trace-steps 50");
    ASSERT_EQ(r.code, 0) << r.out;
    const nlohmann::json t = nlohmann::json::parse(std::ifstream(trace));
    int steps[3] = {0, 0, 0};
    double last_end[3] = {0, 0, 0};
    for (const nlohmann::json& e : t["traceEvents"]) {
        if (e["ph"] != "X") continue;
        const int pid = e["pid"].get<int>();
        ASSERT_TRUE(pid == 1 || pid == 2);
        ++steps[pid];
        EXPECT_GT(e["dur"].get<double>(), 0.0);
        EXPECT_GE(e["ts"].get<double>() + 1e-6, last_end[pid]);  // steps never overlap
        last_end[pid] = e["ts"].get<double>() + e["dur"].get<double>();
        char want[64];
        std::snprintf(want, sizeof want, "P%lld D%lld", (long long)e["args"]["prompt_tokens"].get<int64_t>(),
                      (long long)e["args"]["decode_seqs"].get<int64_t>());
        EXPECT_EQ(e["name"].get<std::string>(), want);
    }
    EXPECT_EQ(steps[1], 50);
    EXPECT_EQ(steps[2], 50);
}

// A shared system prompt: every request after the first reuses its 384 tokens (3 blocks of 128)
// from the first request's KV or the prefix cache, and the first tokens come sooner.
TEST(ServingCli, SharedPrefixIsComputedOnce) {
    const std::string args = "--model llama2-7b --requests 40 --seq-len 512 --gen-len 16 --rate 4 ";
    const Result plain = run(args), shared = run(args + "--shared-prefix 384");
    ASSERT_EQ(shared.code, 0) << shared.out;
    EXPECT_NE(shared.out.find("prompt tokens cached"), std::string::npos);
    for (const char* side : {"baseline", "target"}) {
        const nlohmann::json& s = shared.report["serving"][side];
        for (size_t i = 0; i < 40; ++i) EXPECT_EQ(s["per_request"][i]["cached_tokens"], i == 0 ? 0 : 384) << i;
        EXPECT_EQ(s["cached_prompt_tokens"], 39 * 384);
        EXPECT_LT(s["ttft_ms"]["mean"].get<double>(), plain.report["serving"][side]["ttft_ms"]["mean"].get<double>());
        EXPECT_EQ(plain.report["serving"][side]["cached_prompt_tokens"], 0);
    }
    const Result bad = run(args + "--shared-prefix 512");
    EXPECT_EQ(bad.code, 2);
    EXPECT_EQ(bad.out, "duet: error: --shared-prefix 512 is not below a prompt of 512 tokens (allowed: 0 to 511)\n");
}

// Text prompts tokenized by a GGUF model keep their ids: a second prompt that starts like the first
// reuses the first's full KV blocks (128 tokens each on the modelled NPU) from the prefix cache.
TEST(ServingCli, TextPromptsShareTheirCommonStartThroughThePrefixCache) {
    const std::string model = std::string(DUET_BINARY_DIR) + "/serving_cli_test_tiny.gguf";
    const std::string gen = std::string(DUET_BINARY_DIR) + "/duet gen-model --arch tiny-llama --dtype f32 --seed 3 -o " +
                            model + " > /dev/null 2>&1";
    ASSERT_EQ(std::system(gen.c_str()), 0);
    std::string system;
    for (int i = 0; i < 40; ++i) system += "You are a careful assistant who answers briefly. ";
    const std::string p = std::string(DUET_BINARY_DIR) + "/serving_cli_test_text.jsonl";
    std::ofstream(p) << "{\"arrival_s\": 0, \"prompt\": \"" << system << "First question?\", \"output_tokens\": 4}\n"
                     << "{\"arrival_s\": 5, \"prompt\": \"" << system << "Second one?\", \"output_tokens\": 4}\n";
    const Result r = run("--model " + model + " --workload-file " + p + " --ctx 2048 --kv-blocks 64");
    ASSERT_EQ(r.code, 0) << r.out;
    const nlohmann::json& s = r.report["serving"]["baseline"];
    EXPECT_EQ(s["per_request"][0]["cached_tokens"], 0);
    const int64_t cached = s["per_request"][1]["cached_tokens"].get<int64_t>();
    EXPECT_GT(cached, 0);
    EXPECT_EQ(cached % 128, 0);  // whole blocks
    EXPECT_LT(cached, s["per_request"][1]["prompt_tokens"].get<int64_t>());
}

TEST(ServingCli, TheSeedDecidesTheArrivals) {
    const Result a = run(std::string(kSmall) + "--seed 1"), b = run(std::string(kSmall) + "--seed 1"),
                 c = run(std::string(kSmall) + "--seed 2");
    ASSERT_EQ(a.code, 0) << a.out;
    EXPECT_EQ(a.report["serving"], b.report["serving"]);
    EXPECT_NE(a.report["serving"]["baseline"]["per_request"], c.report["serving"]["baseline"]["per_request"]);
}

// Requests far apart never share a step: each one's TTFT and TPOT are those of `duet bench` for
// one request of the same lengths (the same planner and timeline, a different path to them).
TEST(ServingCli, LightLoadGivesTheSingleRequestBenchFigures) {
    const Result s = run("--model llama2-7b --requests 5 --rate 0.01 --seq-len 512 --gen-len 32");
    ASSERT_EQ(s.code, 0) << s.out;
    const duet::test::BenchRun bench = duet::test::run_bench("--model llama2-7b --seq-len 512 --gen-len 32", "serving_cli_test");
    ASSERT_EQ(bench.code, 0) << bench.out;
    const nlohmann::json& b = bench.report;
    for (const char* side : {"baseline", "target"}) {
        const nlohmann::json& sv = s.report["serving"][side];
        EXPECT_EQ(sv["steps"], 5 * 32) << side;  // one prefill and 31 decode steps each, never batched
        const double ttft_ms = b[side]["timeline"]["ttft_ns"].get<double>() / 1e6;
        const double tbt_ms = b[side]["tbt_mean_ns"].get<double>() / 1e6;
        EXPECT_NEAR(sv["ttft_ms"]["p50"].get<double>(), ttft_ms, ttft_ms * 1e-3) << side;
        // decode contexts are timed on the length grid (at most 6.25 % off, attention only)
        EXPECT_NEAR(sv["tpot_ms"]["mean"].get<double>(), tbt_ms, tbt_ms * 0.01) << side;
    }
    // The same verdicts: TBT reduction and TTFT increase as `duet bench` judges one request.
    ASSERT_EQ(s.report["verdicts"].size(), 3u);
    EXPECT_EQ(s.report["verdicts"][0]["name"], "tbt_reduction");
    EXPECT_NEAR(s.report["verdicts"][0]["value"].get<double>(), b["verdicts"][0]["value"].get<double>(), 0.01);
    EXPECT_EQ(s.report["verdicts"][1]["name"], "ttft_increase_ms");
    EXPECT_NEAR(s.report["verdicts"][1]["value"].get<double>(), b["verdicts"][1]["value"].get<double>(), 0.01);
    EXPECT_EQ(s.report["verdicts"][2]["name"], "memory_increase");
    // Exit status as `duet bench`: 3 when a verdict is NOT MET (the TBT reduction here).
    const Result gated = run("--model llama2-7b --requests 5 --rate 0.01 --seq-len 512 --gen-len 32", true);
    EXPECT_EQ(gated.code, 3) << gated.out;
    EXPECT_NE(gated.out.find("TPOT reduction"), std::string::npos);
}

TEST(ServingCli, RateSweepFindsTheHighestRateWithinTheSlos) {
    const std::string svg = std::string(DUET_BINARY_DIR) + "/serving_cli_test_sweep.svg";
    std::remove(svg.c_str());
    // TPOT SLO 40 ms: llama2-7b's queue1 decode step is about 16 ms of operators plus the 910B2
    // preset's 10.63 ms serving step (configs/hw/ascend910b2.toml [serving_step]).
    const Result r = run("--model llama2-7b --requests 100 --rate 2 --seq-len 256 --gen-len 32 --slo-tpot-ms 40 "
                         "--rate-sweep --svg " + svg);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_TRUE(std::filesystem::exists(svg));
    for (const char* side : {"baseline", "target"}) {
        const nlohmann::json& sw = r.report["serving"][side]["rate_sweep"];
        const double max_rate = sw["max_rate_rps"].get<double>();
        EXPECT_GT(max_rate, 0.0) << side;
        bool above_misses = false;
        for (const nlohmann::json& p : sw["points"]) {
            if (p["rate_rps"].get<double>() <= max_rate) EXPECT_TRUE(p["meets"].get<bool>()) << p.dump();
            else above_misses = above_misses || !p["meets"].get<bool>();
        }
        EXPECT_TRUE(above_misses) << side;  // the first rate above it was tried and missed
    }
    const Result no_slo = run("--model llama2-7b --rate-sweep");
    EXPECT_EQ(no_slo.code, 2);
    EXPECT_EQ(no_slo.out, "duet: error: --rate-sweep needs an SLO to meet (allowed: --slo-ttft-ms and/or "
                          "--slo-tpot-ms)\n");
}

// --dp 2: two replicas behind the router; every request is served by one, round robin alternates.
TEST(ServingCli, ReplicasShareTheRequestsAndReportTheirShares) {
    const Result r = run(std::string(kSmall) + "--dp 2");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("replicas: 2 behind the round_robin router"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("requests per replica"), std::string::npos) << r.out;
    EXPECT_EQ(r.report["workload"]["dp"], 2);
    EXPECT_EQ(r.report["workload"]["router"], "round_robin");
    for (const char* side : {"baseline", "target"}) {
        const nlohmann::json& s = r.report["serving"][side];
        EXPECT_EQ(s["completed"], 40);
        ASSERT_EQ(s["replicas"].size(), 2u);
        for (const nlohmann::json& rep : s["replicas"]) {
            EXPECT_EQ(rep["requests"], 20);
            EXPECT_GT(rep["busy_share"].get<double>(), 0.0);
            EXPECT_LE(rep["busy_share"].get<double>(), 1.0);
        }
        for (size_t i = 0; i < 40; ++i) EXPECT_EQ(s["per_request"][i]["replica"], int(i % 2)) << i;
    }
    const Result lot = run(std::string(kSmall) + "--dp 3 --router least_outstanding_tokens");
    ASSERT_EQ(lot.code, 0) << lot.out;
    int64_t total = 0;
    for (const nlohmann::json& rep : lot.report["serving"]["target"]["replicas"]) total += rep["requests"].get<int64_t>();
    EXPECT_EQ(total, 40);
}

// Agent sessions over four replicas: every call's prompt is its session's transcript so far.
// Prefix affinity sends a session's next call where its transcript went, so more prompt tokens
// come from the prefix cache than under round robin, which spreads a session's calls.
TEST(ServingCli, PrefixAffinityKeepsASessionsTranscriptCached) {
    const std::string p = std::string(DUET_BINARY_DIR) + "/serving_cli_test_agent.jsonl";
    std::ofstream(p) << "{\"role\": \"system\", \"tokens\": 1536}\n{\"role\": \"user\", \"tokens\": 48}\n"
                        "{\"role\": \"tool_call\", \"tokens\": 32}\n{\"role\": \"tool\", \"tokens\": 256}\n"
                        "{\"role\": \"tool_call\", \"tokens\": 32}\n{\"role\": \"tool\", \"tokens\": 256}\n"
                        "{\"role\": \"assistant\", \"tokens\": 64}\n";
    const std::string args = "--model llama2-7b --workload-file " + p +
                             " --requests 200 --rate 8 --think-ms 500 --dp 4 --kv-blocks 60 --router ";
    const Result rr = run(args + "round_robin"), pa = run(args + "prefix_affinity");
    ASSERT_EQ(rr.code, 0) << rr.out;
    ASSERT_EQ(pa.code, 0) << pa.out;
    for (const char* side : {"baseline", "target"}) {
        const nlohmann::json &a = rr.report["serving"][side], &b = pa.report["serving"][side];
        EXPECT_EQ(a["prompt_tokens"], b["prompt_tokens"]) << side;
        EXPECT_GT(b["cached_prompt_tokens"].get<int64_t>(), a["cached_prompt_tokens"].get<int64_t>()) << side;
    }
}

// One request alone on the serving model gets `duet bench <machine>`'s TTFT and mean TBT (its
// decode steps on the step cache's length grid: within 1 %).
static void expect_single_request_is_bench(const Result& s, const std::string& machine, const std::string& tag) {
    const duet::test::BenchRun bench = duet::test::run_bench(machine, "serving_cli_test");
    ASSERT_EQ(bench.code, 0) << bench.out;
    const nlohmann::json& b = bench.report;
    for (const char* side : {"baseline", "target"}) {
        const nlohmann::json& sv = s.report["serving"][side];
        const double ttft_ms = b[side]["timeline"]["ttft_ns"].get<double>() / 1e6;
        const double tbt_ms = b[side]["tbt_mean_ns"].get<double>() / 1e6;
        EXPECT_NEAR(sv["ttft_ms"]["p50"].get<double>(), ttft_ms, ttft_ms * 1e-3) << tag << " " << side;
        EXPECT_NEAR(sv["tpot_ms"]["mean"].get<double>(), tbt_ms, tbt_ms * 0.01) << tag << " " << side;
    }
}

// Device busy shares: one request alone keeps each device busy for what `duet bench` says it
// computes in that request's prefill and decode (the steps' contexts on the cache's grid: 2 %).
TEST(ServingCli, DeviceBusySharesAreTheBenchsDeviceTimesOverTheRun) {
    const std::string machine = "--model llama2-7b --seq-len 128 --gen-len 16 ";
    const auto s = duet::test::run_bench("--workload serving " + machine + "--requests 1 --rate inf",
                                         "serving_cli_test");
    const auto b = duet::test::run_bench(machine, "serving_cli_test");
    ASSERT_EQ(s.code, 0) << s.out;
    ASSERT_EQ(b.code, 0) << b.out;
    EXPECT_NE(s.out.find("  PIM busy "), std::string::npos) << s.out;
    for (const char* side : {"baseline", "target"}) {
        const nlohmann::json& sv = s.report["serving"][side];
        const double duration_ns = sv["duration_s"].get<double>() * 1e9;
        const nlohmann::json& tl = b.report[side]["timeline"];
        for (const auto& [device, i] : {std::pair{"npu0", 0}, std::pair{"pim0", 1}}) {
            const double bench_ns = tl["prefill"]["devices"][i]["busy_ns"].get<double>() +
                                    tl["decode"]["devices"][i]["busy_ns"].get<double>();
            const double served_ns = sv["device_busy_share"][device].get<double>() * duration_ns;
            EXPECT_NEAR(served_ns, bench_ns, 0.02 * bench_ns + 1) << side << " " << device;
        }
    }
}

// Where the placement's crossover lies: the serving report's last batch whose decode step runs a
// weight matmul on PIM is the trace-only `duet bench --batch B` answer at the same context (B runs
// PIM matmuls, B + 1 none) — on the default 910B + HBM2 PIM pair and on the 310P3 one where PIM
// pays at batch 1.
TEST(ServingCli, ThePimCrossoverIsWhereBenchStopsPuttingMatmulsOnPim) {
    for (const std::string env : {"", "env DUET_SOC_VERSION=Ascend310P3 "}) {
        const auto s = duet::test::run_bench("--workload serving --model llama2-7b --requests 20 --rate 0.5 "
                                             "--seq-len 512 --gen-len 128", "serving_cli_test", env);
        ASSERT_EQ(s.code, 0) << s.out;
        EXPECT_TRUE(s.report["serving"]["baseline"]["pim_crossover"].is_null());
        const nlohmann::json& c = s.report["serving"]["target"]["pim_crossover"];
        EXPECT_EQ(c["context"], 576) << s.out;  // 512 + 128 / 2
        const int64_t last = c["last_pim_batch"].get<int64_t>();
        ASSERT_GE(last, 1) << env;
        EXPECT_NE(s.out.find("PIM crossover (npu_pim_coop): at 576 positions decode steps of up to " +
                             std::to_string(last) + " sequences run weight matmuls on PIM; larger batches on the NPU\n"),
                  std::string::npos) << s.out;
        for (const int64_t b : {last, last + 1}) {
            const auto t = duet::test::run_bench("--model llama2-7b --seq-len 576 --gen-len 2 --batch " +
                                                 std::to_string(b), "serving_cli_test", env);
            ASSERT_EQ(t.code, 0) << t.out;
            const int64_t parts = t.report["target"]["timeline"]["pim_matmul_parts"].get<int64_t>();
            if (b == last) EXPECT_GT(parts, 0) << env << " batch " << b;
            else EXPECT_EQ(parts, 0) << env << " batch " << b;
        }
    }
}

// Tensor parallelism: every step runs as rank 0's graph with its collectives over the 8 ranks'
// links, so one request alone gets `duet bench --tp 8`'s TTFT and TBT; with many, each rank's
// share of weights and KV heads decides the KV pool. --dp beside --tp on a machine that is not
// dp x tp NPUs is refused.
TEST(ServingCli, TensorParallelStepsAreTheBenchsTensorParallelForwards) {
    const std::string machine = "--model llama2-70b --tp 8 --npus 8 --pims 8 --seq-len 128 --gen-len 16 ";
    const Result s = run(machine + "--requests 1 --rate inf");
    ASSERT_EQ(s.code, 0) << s.out;
    expect_single_request_is_bench(s, machine, "tp");
    for (const char* side : {"baseline", "target"}) {
        const nlohmann::json& sv = s.report["serving"][side];
        // 8 ranks of 64 GiB: per rank 1/8 of the weights and one of the 8 KV heads
        EXPECT_EQ(sv["kv_cache"]["device_bytes"].get<double>(), 512.0 * (1 << 30)) << side;
        EXPECT_LT(sv["kv_cache"]["other_bytes"].get<double>(), 160.0 * (1 << 30)) << side;
    }
    Result r = run(machine + "--requests 4 --dp 2");
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "duet: error: --tp 8 --dp 2 with 8 NPU(s): each replica is a tensor-parallel group of 8 NPUs "
                     "(allowed: --npus 16, or [topology] npus = 16)\n");
}

// Pipeline stages as virtual engines: one request alone gets `duet bench --pp 2`'s forward through
// both stages; at saturation the two engines keep a step in each stage, so two NPUs serve about
// twice what one does (a step that held both stages would give the same throughput as one NPU).
TEST(ServingCli, PipelineStagesAreVirtualEnginesOfOneInstance) {
    const std::string machine = "--model llama2-7b --pp 2 --npus 2 --pims 2 --seq-len 256 ";
    const Result s = run(machine + "--gen-len 16 --requests 1 --rate inf");
    ASSERT_EQ(s.code, 0) << s.out;
    EXPECT_NE(s.out.find("pipeline: 2 stages, 2 virtual engines (each its own scheduler over 1/2 of the KV blocks; a "
                         "step holds the pipeline's entry for its slowest stage)\n"),
              std::string::npos) << s.out;
    EXPECT_EQ(s.report["workload"]["pp"], 2);
    expect_single_request_is_bench(s, machine + "--gen-len 16 ", "pp");
    for (const char* side : {"baseline", "target"}) {
        const int64_t blocks = s.report["serving"][side]["kv_cache"]["blocks"].get<int64_t>();
        EXPECT_NE(s.out.find("  pipeline: 2 virtual engines of " + std::to_string(blocks / 2) + " blocks each\n"),
                  std::string::npos) << s.out;
    }
    const std::string load = "--model llama2-7b --seq-len 256 --gen-len 128 --requests 96 --rate inf --max-seqs 16 ";
    const Result one = run(load + "--npus 1 --pims 1");
    const Result two = run(load + "--pp 2 --npus 2 --pims 2");
    ASSERT_EQ(one.code, 0) << one.out;
    ASSERT_EQ(two.code, 0) << two.out;
    for (const char* side : {"baseline", "target"}) {
        const double ratio = two.report["serving"][side]["output_tokens_per_s"].get<double>() /
                             one.report["serving"][side]["output_tokens_per_s"].get<double>();
        EXPECT_GT(ratio, 1.6) << side;
        EXPECT_LT(ratio, 2.4) << side;
    }
    for (const auto& [flags, message] : std::vector<std::pair<std::string, std::string>>{
             {"--npus 4 --pims 4 --dp 2 --requests 4",
              "--pp 2 with --dp 2: the pipeline stages are one instance's virtual engines (allowed: --pp with --dp 1 "
              "and without --disaggregate)"},
             {"--npus 2 --pims 2 --disaggregate --requests 4",
              "--pp 2 with --disaggregate: the pipeline stages are one instance's virtual engines (allowed: --pp with "
              "--dp 1 and without --disaggregate)"}}) {
        const Result r = run("--model llama2-7b --pp 2 " + flags);
        EXPECT_EQ(r.code, 2) << flags;
        EXPECT_EQ(r.out, "duet: error: " + message + "\n") << flags;
    }
    const Result ep = run("--model mixtral-8x7b --pp 2 --ep 2 --npus 2 --requests 4");
    EXPECT_EQ(ep.code, 2);
    EXPECT_EQ(ep.out, "duet: error: --pp 2 with --ep 2: the serving model runs pipeline stages or expert parallelism, "
                      "not both (allowed: --pp 1 or --ep 1)\n");
}

// --tp 2 --dp 2 on 4 NPUs: each replica is a TP group of 2 NPUs with its PIM device, so one request
// alone gets exactly what --tp 2 on 2 NPUs gives it, and at saturation the two groups serve about
// twice the tokens of one.
TEST(ServingCli, TensorParallelReplicasAreGroupsOfTheMachine) {
    const std::string model = "--model llama2-7b --tp 2 --seq-len 256 ";
    const Result one = run(model + "--gen-len 16 --npus 2 --pims 1 --requests 1 --rate inf");
    const Result two = run(model + "--gen-len 16 --npus 4 --pims 2 --dp 2 --requests 1 --rate inf");
    ASSERT_EQ(one.code, 0) << one.out;
    ASSERT_EQ(two.code, 0) << two.out;
    EXPECT_NE(two.out.find("  replica 1: npu2 + npu3 + pim1\n"), std::string::npos) << two.out;
    for (const char* side : {"baseline", "target"}) {
        const nlohmann::json &a = one.report["serving"][side], &b = two.report["serving"][side];
        EXPECT_GT(a["ttft_ms"]["mean"].get<double>(), 0.0) << side;
        EXPECT_EQ(b["ttft_ms"]["mean"], a["ttft_ms"]["mean"]) << side;
        EXPECT_EQ(b["tpot_ms"]["mean"], a["tpot_ms"]["mean"]) << side;
        EXPECT_EQ(b["kv_cache"]["blocks"], a["kv_cache"]["blocks"]) << side;
    }
    const std::string load = model + "--gen-len 128 --requests 96 --rate inf --max-seqs 16 ";
    const Result sat1 = run(load + "--npus 2 --pims 1");
    const Result sat2 = run(load + "--npus 4 --pims 2 --dp 2");
    ASSERT_EQ(sat1.code, 0) << sat1.out;
    ASSERT_EQ(sat2.code, 0) << sat2.out;
    for (const char* side : {"baseline", "target"}) {
        const double t1 = sat1.report["serving"][side]["output_tokens_per_s"].get<double>();
        const double t2 = sat2.report["serving"][side]["output_tokens_per_s"].get<double>();
        EXPECT_GT(t2, 1.6 * t1) << side;
        EXPECT_LT(t2, 2.1 * t1) << side;
    }
    Result r = run(model + "--npus 3 --pims 2 --dp 2 --requests 4");
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "duet: error: --tp 2 --dp 2 with 3 NPU(s): each replica is a tensor-parallel group of 2 NPUs "
                     "(allowed: --npus 4, or [topology] npus = 4)\n");
    r = run(model + "--npus 4 --pims 1 --dp 2 --requests 4");
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "duet: error: --pims 1 with --tp 2 --dp 2: each replica takes an equal share of the PIM devices "
                     "(allowed: --pims a multiple of 2, or [topology] pims = a multiple of 2)\n");
    r = run(model + "--npus 2 --disaggregate --requests 4");
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "duet: error: --tp 2 --disaggregate with 2 NPU(s): each replica is a prefill group and a decode "
                     "group of 2 NPUs each (allowed: --npus 4, or [topology] npus = 4)\n");
}

// --disaggregate --tp 2 on 4 NPUs: npu2 + npu3 prefill as a TP group, npu0 + npu1 with pim0 decode;
// each prefill rank sends its 16 of the 32 KV heads to its decode rank over its own hccs_910b
// link, so TTFT is the TP prefill step plus one shard's transfer.
TEST(ServingCli, TensorParallelDisaggregationMovesEachRanksKvShard) {
    const Result s = run("--model llama2-7b --tp 2 --requests 3 --rate 0.01 --seq-len 512 --gen-len 32 --npus 4 "
                         "--disaggregate");
    ASSERT_EQ(s.code, 0) << s.out;
    EXPECT_NE(s.out.find("disaggregated: prefill on npu2 + npu3 (npu_only), decode on npu0 + npu1 + pim0; KV shards, "
                         "rank to rank, over npu2-npu0 (hccs_910b"), std::string::npos) << s.out;
    const duet::test::BenchRun bench = duet::test::run_bench("--model llama2-7b --tp 2 --npus 2 --seq-len 512 --gen-len 32", "serving_cli_test");
    ASSERT_EQ(bench.code, 0) << bench.out;
    const nlohmann::json& b = bench.report;
    // llama2-7b: 32 layers, 32 KV heads of 128, fp16 K and V, 16 heads per rank; hccs_910b: 56 GB/s,
    // 1000 ns latency, 2000 ns per transfer.
    const double shard_bytes = 512.0 * 2 * 32 * 16 * 128 * 2;
    const double xfer_ms = (shard_bytes / 56.0 + 1000 + 2000) / 1e6;
    const double prefill_ms = b["baseline"]["timeline"]["ttft_ns"].get<double>() / 1e6;  // npu_only, TP 2
    for (const char* side : {"baseline", "target"}) {
        const nlohmann::json& sv = s.report["serving"][side];
        ASSERT_EQ(sv["completed"], 3) << side;
        for (const nlohmann::json& q : sv["per_request"]) {
            EXPECT_NEAR(q["kv_transfer_ms"].get<double>(), xfer_ms, 1e-6) << side;
            EXPECT_NEAR(q["ttft_ms"].get<double>(), prefill_ms + xfer_ms, prefill_ms * 1e-3) << side;
        }
        EXPECT_EQ(sv["replicas"][0]["kv_transfer_bytes"].get<double>(), 3 * shard_bytes) << side;
    }
}

TEST(ServingCli, BadReplicaAndDisaggregationFlagsExitTwo) {
    Result r = run(std::string(kSmall) + "--dp 2 --router random");
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "duet: error: --router = \"random\" is not a router (allowed: round_robin, "
                     "least_outstanding_tokens, prefix_affinity)\n");
    r = run(std::string(kSmall) + "--router prefix_affinity");
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "duet: error: --router prefix_affinity with one replica routes nothing (allowed: --dp 2 or more)\n");
    r = run(std::string(kSmall) + "--dp 0");
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "duet: error: --dp: 0 is out of range (allowed: 1 to 64)\n");
    r = run(std::string(kSmall) + "--disaggregate");
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "duet: error: --disaggregate with 1 NPU(s): a replica is one prefill NPU (npu1) and one decode NPU "
                     "with the PIM devices (npu0) (allowed: --npus 2, or [topology] npus = 2; more replicas: --dp N)\n");
}

// Disaggregated at light load: the prefill NPU's single-request TTFT plus the KV transfer over
// hccs_910b, then the decode device's single-request TBT per token.
TEST(ServingCli, DisaggregationAddsTheKvTransferToTtftAndDecodesAtTheDecodeDevicesTbt) {
    const Result s = run("--model llama2-7b --requests 3 --rate 0.01 --seq-len 512 --gen-len 32 --npus 2 "
                         "--disaggregate");
    ASSERT_EQ(s.code, 0) << s.out;
    const duet::test::BenchRun bench = duet::test::run_bench("--model llama2-7b --seq-len 512 --gen-len 32", "serving_cli_test");
    ASSERT_EQ(bench.code, 0) << bench.out;
    const nlohmann::json& b = bench.report;
    // llama2-7b: 32 layers, 32 KV heads of 128, fp16 K and V; configs/hw/links.toml hccs_910b:
    // 56 GB/s, 1000 ns latency, 2000 ns per transfer.
    const double kv_bytes = 512.0 * 2 * 32 * 32 * 128 * 2;
    const double xfer_ms = (kv_bytes / 56.0 + 1000 + 2000) / 1e6;
    EXPECT_EQ(s.report["workload"]["kv_link"]["preset"], "hccs_910b");
    const double prefill_ms = b["baseline"]["timeline"]["ttft_ns"].get<double>() / 1e6;  // npu_only on one NPU
    for (const char* side : {"baseline", "target"}) {
        const nlohmann::json& sv = s.report["serving"][side];
        ASSERT_EQ(sv["completed"], 3) << side;
        for (const nlohmann::json& q : sv["per_request"]) {
            EXPECT_NEAR(q["kv_transfer_ms"].get<double>(), xfer_ms, 1e-6) << side;
            EXPECT_NEAR(q["ttft_ms"].get<double>(), prefill_ms + xfer_ms, prefill_ms * 1e-3) << side;
        }
        // decode contexts are timed on the length grid (at most 6.25 % off, attention only)
        const double tbt_ms = b[side]["tbt_mean_ns"].get<double>() / 1e6;
        EXPECT_NEAR(sv["tpot_ms"]["mean"].get<double>(), tbt_ms, tbt_ms * 0.01) << side;
        const nlohmann::json& rep = sv["replicas"][0];
        EXPECT_EQ(rep["kv_transfers"], 3);
        EXPECT_EQ(rep["kv_transfer_bytes"].get<double>(), 3 * kv_bytes);
        EXPECT_EQ(rep["steps"], 3);             // one prefill step each
        EXPECT_EQ(rep["decode_steps"], 3 * 31);  // every later token on the decode instance
        EXPECT_NEAR(rep["link_busy_share"].get<double>(),
                    3 * xfer_ms / 1e3 / sv["duration_s"].get<double>(), 1e-9);
    }
}

TEST(ServingCli, BadTracesAndFlagsExitTwoNamingTheCulprit) {
    const std::string p = std::string(DUET_BINARY_DIR) + "/serving_cli_test_bad.jsonl";
    std::ofstream(p) << "{\"arrival_s\": 0, \"prompt_tokens\": 10, \"output_tokens\": 4}\n"
                        "{\"arrival_s\": -2, \"prompt_tokens\": 10, \"output_tokens\": 4}\n";
    Result r = run("--model llama2-7b --workload-file " + p);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "duet: error: " + p + " line 2: field \"arrival_s\" = -2 is negative (allowed: seconds >= 0)\n");
    std::ofstream(p) << "{\"arrival_s\": 0, \"prompt_tokens\": 4000, \"output_tokens\": 100}\n";
    r = run("--model llama2-7b --workload-file " + p);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "duet: error: " + p + " line 1: field \"output_tokens\": prompt 4000 + output 100 = 4100 tokens "
                     "exceeds the context of 4096 tokens (allowed: at most 4096 in all)\n");
    r = run("--model llama2-7b --rate fast");
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "duet: error: --rate = \"fast\" is not allowed (allowed: requests per second > 0, or inf)\n");
}

}  // namespace
