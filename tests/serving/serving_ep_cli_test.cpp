// `duet bench --workload serving --ep N`: expert parallelism under serving load. One request
// alone gets `duet bench --ep N`'s TTFT and TBT; under load the step's tokens decide where the
// experts run; the KV pool is the ranks' blocks together; --tp N --ep N serves with the experts on
// the tensor-parallel ranks; bad combinations exit 2 naming the flags.
#include <gtest/gtest.h>

#include "bench_report_run.h"
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

using Result = duet::test::BenchRun;

// The real MoE presets' layer 0, pre-converted to NZ, needs a conversion cache beyond the shipped
// 512 MiB (tests/sim/moe_bench_cli_test.cpp).
const char* kCacheEnv = "env DUET_MEMORY_CACHE_LIMIT_MB=8192 ";

Result run(const std::string& args, const std::string& workload = "--workload serving ") {
    return duet::test::run_bench(workload + args, "serving_ep_cli", kCacheEnv);
}

// DeepSeek-V3 on eight NPUs with PIM, experts over eight ranks; its weights do not fit 64 GiB a
// device, so the KV pool is given.
const std::string kMachine = "--model deepseek-v3 --npus 8 --pims 8 --ep 8 ";
constexpr double kMoeLayers = 58, kTopK = 8;  // deepseek-v3: layers 3..60 route 8 of 256 experts

// A serving run of one request alone against `duet bench` of the same shape: the same TTFT and TBT
// on both sides.
void expect_one_request_is_the_bench(const Result& s, const Result& b) {
    for (const char* side : {"baseline", "target"}) {
        const nlohmann::json& sv = s.report["serving"][side];
        const double ttft_ms = b.report[side]["timeline"]["ttft_ns"].get<double>() / 1e6;
        const double tbt_ms = b.report[side]["tbt_mean_ns"].get<double>() / 1e6;
        EXPECT_NEAR(sv["ttft_ms"]["p50"].get<double>(), ttft_ms, ttft_ms * 1e-6) << side;
        EXPECT_NEAR(sv["tpot_ms"]["mean"].get<double>(), tbt_ms, tbt_ms * 1e-4) << side;
    }
}

// Every step is EP rank 0's share of the sequences with its experts fed the whole step's tokens,
// so one request alone is `duet bench --ep 8`'s forward: the same TTFT and TBT, and the expert
// rows of a 128-token prompt and 15 one-token steps (each token routed to 8 experts per layer),
// the one-row decode experts on PIM; under uniform routing and under --expert-skew alike (the
// skewed step slower: the rank of the hot experts sets it).
TEST(ServingEpCli, OneRequestIsTheBenchsExpertParallelForward) {
    double tbt_uniform = 0;
    for (const std::string routing : {"", "--expert-skew 0.5 "}) {
        SCOPED_TRACE(routing);
        const std::string shape = kMachine + routing + "--seq-len 128 --gen-len 16 ";
        const Result s = run(shape + "--requests 1 --rate inf --kv-blocks 1000");
        ASSERT_EQ(s.code, 0) << s.out;
        const Result b = run(shape, "");
        ASSERT_EQ(b.code, 0) << b.out;
        expect_one_request_is_the_bench(s, b);
        for (const char* side : {"baseline", "target"}) {
            EXPECT_EQ(s.report["serving"][side]["experts"]["ep"], 8) << side;
            EXPECT_EQ(s.report["serving"][side]["experts"]["routing"], b.report[side]["experts"]["routing"]) << side;
        }
        EXPECT_EQ(s.report["serving"]["baseline"]["experts"]["expert_rows_on_pim"].get<double>(), 0.0);
        const nlohmann::json& e = s.report["serving"]["target"]["experts"];
        if (routing.empty()) {  // skewed: each rank's fractional rows are rounded up (sim/expert_load.h)
            EXPECT_EQ(e["expert_rows"].get<double>(), (128 + 15) * kTopK * kMoeLayers);
            EXPECT_EQ(e["expert_rows_on_pim"].get<double>(), 15 * kTopK * kMoeLayers);
        }
        const double tbt = s.report["serving"]["baseline"]["tpot_ms"]["mean"].get<double>();
        if (routing.empty()) tbt_uniform = tbt;
        else EXPECT_GT(tbt, tbt_uniform * 1.05);  // the hot experts' rank sets the step
    }
}

// Under load a decode step carries many sequences: each expert receives several rows, the NPU is
// faster for them, and PIM's share of the expert rows falls with it, turning the TPOT verdict.
TEST(ServingEpCli, LoadMovesTheExpertsFromPimToTheNpu) {
    const std::string shape = kMachine + "--seq-len 128 --gen-len 32 --requests 32 --kv-blocks 1000 --rate ";
    const Result light = run(shape + "0.5"), heavy = run(shape + "inf");
    ASSERT_EQ(light.code, 0) << light.out;
    ASSERT_EQ(heavy.code, 0) << heavy.out;
    auto share = [](const Result& r) { return r.report["serving"]["target"]["experts"]["pim_row_share"].get<double>(); };
    auto tpot_gain = [](const Result& r) {
        const nlohmann::json& sv = r.report["serving"];
        return 1 - sv["target"]["tpot_ms"]["mean"].get<double>() / sv["baseline"]["tpot_ms"]["mean"].get<double>();
    };
    EXPECT_GT(share(light), 0.05);  // one decode token a step at most times: one-row experts on PIM
    EXPECT_LT(share(heavy), share(light) / 10);
    EXPECT_GT(tpot_gain(light), 0.05);  // npu_pim_coop faster than npu_only when the steps are small
    EXPECT_LT(tpot_gain(heavy), 0.0);   // and slower when they are large
}

// An EP rank holds its experts' share of the weights and whole KV blocks of its own sequences.
TEST(ServingEpCli, TheKvPoolIsTheRanksBlocksTogether) {
    const Result one = run("--model qwen3-30b-a3b --requests 2 --seq-len 64 --gen-len 4");
    const Result ep = run("--model qwen3-30b-a3b --npus 8 --pims 8 --ep 8 --requests 2 --seq-len 64 --gen-len 4");
    ASSERT_EQ(one.code, 0) << one.out;
    ASSERT_EQ(ep.code, 0) << ep.out;
    for (const char* side : {"baseline", "target"}) {
        const nlohmann::json &k1 = one.report["serving"][side]["kv_cache"], &k8 = ep.report["serving"][side]["kv_cache"];
        const double gib = double(1 << 30), rank_other = k8["other_bytes"].get<double>() / 8;
        EXPECT_EQ(k8["device_bytes"].get<double>(), 8 * 64 * gib) << side;
        EXPECT_EQ(k8["block_bytes"], k1["block_bytes"]) << side;
        EXPECT_LT(rank_other, k1["other_bytes"].get<double>() / 4) << side;  // 16 of 128 experts a layer
        EXPECT_EQ(k8["blocks"].get<double>(),
                  8 * std::floor((64 * gib - rank_other) / k8["block_bytes"].get<double>())) << side;
    }
}

// --tp 2 --ep 2: the experts on the tensor-parallel ranks. A block spans the two ranks (each holds
// its KV heads of every sequence) as under --tp 2, a rank holds half the experts whole, and the
// routed rows are the step's tokens x k as under --tp 2.
TEST(ServingEpCli, TensorAndExpertParallelOnTheSameRanks) {
    const std::string args = "--model qwen3-30b-a3b --npus 2 --pims 2 --requests 4 --rate inf --seq-len 64 --gen-len 8";
    const Result tp = run(args + " --tp 2"), both = run(args + " --tp 2 --ep 2");
    ASSERT_EQ(tp.code, 0) << tp.out;
    ASSERT_EQ(both.code, 0) << both.out;
    for (const char* side : {"baseline", "target"}) {
        const nlohmann::json &a = tp.report["serving"][side], &b = both.report["serving"][side];
        EXPECT_EQ(b["completed"], 4) << side;
        EXPECT_EQ(b["experts"]["ep"], 2) << side;
        EXPECT_EQ(b["experts"]["expert_rows"], a["experts"]["expert_rows"]) << side;
        const nlohmann::json& k = b["kv_cache"];
        EXPECT_EQ(k["block_bytes"], a["kv_cache"]["block_bytes"]) << side;
        const double gib = double(1 << 30), rank_other = k["other_bytes"].get<double>() / 2;
        EXPECT_EQ(k["device_bytes"].get<double>(), 2 * 64 * gib) << side;
        EXPECT_EQ(k["blocks"].get<double>(), std::floor((64 * gib - rank_other) / (k["block_bytes"].get<double>() / 2)))
            << side;
    }
}

// --ep 2 --dp 2 on four NPUs: two replicas, each an expert-parallel group of two NPUs and two PIM
// devices. Two requests at once go one to each replica (round robin), so each is served as one
// request on one group alone: the same TTFT and TPOT as --ep 2 on two NPUs.
TEST(ServingEpCli, ReplicasAreExpertParallelGroups) {
    const std::string shape = "--model qwen3-30b-a3b --ep 2 --rate inf --seq-len 64 --gen-len 8 ";
    const Result one = run(shape + "--npus 2 --pims 2 --requests 1");
    const Result two = run(shape + "--npus 4 --pims 4 --dp 2 --requests 2");
    ASSERT_EQ(one.code, 0) << one.out;
    ASSERT_EQ(two.code, 0) << two.out;
    EXPECT_NE(two.out.find("  replica 0: npu0 + npu1 + pim0 + pim1\n  replica 1: npu2 + npu3 + pim2 + pim3\n"),
              std::string::npos) << two.out;
    EXPECT_EQ(two.report["workload"]["dp"], 2);
    EXPECT_EQ(two.report["workload"]["ep"], 2);
    for (const char* side : {"baseline", "target"}) {
        const nlohmann::json &a = one.report["serving"][side], &b = two.report["serving"][side];
        EXPECT_EQ(b["completed"], 2) << side;
        EXPECT_EQ(b["experts"]["ep"], 2) << side;
        ASSERT_EQ(b["replicas"].size(), 2u) << side;
        for (const nlohmann::json& rep : b["replicas"]) EXPECT_EQ(rep["requests"], 1) << side;
        for (const char* m : {"ttft_ms", "tpot_ms"})
            for (const char* q : {"p50", "p99"})
                EXPECT_NEAR(b[m][q].get<double>(), a[m][q].get<double>(), a[m][q].get<double>() * 1e-9) << side << m;
        EXPECT_EQ(b["experts"]["expert_rows"].get<double>(), 2 * a["experts"]["expert_rows"].get<double>()) << side;
    }
}

// --tp 2 --ep 4: attention groups of two tensor-parallel ranks, experts over all four. One request
// alone is `duet bench --tp 2 --ep 4`'s forward (its group's attention, every rank's experts fed
// the request's tokens).
TEST(ServingEpCli, TensorParallelGroupsInsideDataParallelAttention) {
    const std::string shape = "--model qwen3-30b-a3b --npus 4 --pims 4 --tp 2 --ep 4 --seq-len 64 --gen-len 8 ";
    const Result s = run(shape + "--requests 1 --rate inf --kv-blocks 1000");
    const Result b = run(shape, "");
    ASSERT_EQ(s.code, 0) << s.out;
    ASSERT_EQ(b.code, 0) << b.out;
    expect_one_request_is_the_bench(s, b);
    EXPECT_EQ(s.report["workload"]["tp"], 2);
    EXPECT_EQ(s.report["workload"]["ep"], 4);
}

TEST(ServingEpCli, BadExpertParallelFlagsExitTwo) {
    const std::pair<std::string, std::string> cases[] = {
        {"--workload serving --model llama2-7b --ep 2 --npus 2",
         "--ep = 2: 'llama2-7b' has no routed experts, expert parallelism needs a Mixture-of-Experts model (allowed: "
         "--ep 1)"},
        {"--workload serving --model mixtral-8x7b --ep 3 --npus 3",
         "--ep = 3 does not divide the 8 routed experts of 'mixtral-8x7b' (allowed: a divisor of 8)"},
        {"--model mixtral-8x7b --ep 4 --npus 6",
         "--ep 4 x --tp 1 x --pp 1 = 4 ranks do not divide the 6 NPUs of the topology: each rank is an NPU (allowed: "
         "--npus a multiple of 4, or ranks that divide 6)"},
        {"--workload serving --model mixtral-8x7b --ep 4 --npus 6",
         "--ep 4 x --tp 1 x --pp 1 = 4 ranks do not divide the 6 NPUs of the topology: each rank is an NPU (allowed: "
         "--npus a multiple of 4, or ranks that divide 6)"},
        {"--workload serving --model mixtral-8x7b --ep 4 --npus 8",
         "--ep 4 with --workload serving on 8 NPUs: the serving instance is the expert-parallel group, one rank per "
         "NPU (allowed: --npus 4, or --dp N with --npus N x 4)"},
        {"--model deepseek-v3 --tp 8 --ep 2 --npus 16",
         "--tp 8 with --ep 2: the tensor-parallel groups must tile the expert-parallel ranks (allowed: --ep 1, or "
         "--ep a multiple of 8: --ep / --tp groups of 8 ranks, each running its sequences' attention split over its "
         "ranks; or --tp 1 with --ep N)"},
        {"--workload serving --model mixtral-8x7b --tp 4 --ep 2 --npus 4",
         "--tp 4 with --ep 2: the tensor-parallel groups must tile the expert-parallel ranks (allowed: --ep 1, or "
         "--ep a multiple of 4: --ep / --tp groups of 4 ranks, each running its sequences' attention split over its "
         "ranks; or --tp 1 with --ep N)"},
        {"--model mixtral-8x7b --tp 2 --ep 2 --npus 3",
         "--tp 2 with --ep 2 (the same ranks) x --pp 1 = 2 ranks do not divide the 3 NPUs of the topology: each rank "
         "is an NPU (allowed: --npus a multiple of 2, or ranks that divide 3)"},
        {"--workload serving --model mixtral-8x7b --ep 2 --npus 6 --dp 2",
         "--tp 1 --ep 2 --dp 2 with 6 NPU(s): each replica is an expert-parallel group of 2 NPUs (allowed: --npus 4, "
         "or [topology] npus = 4)"},
        {"--workload serving --model mixtral-8x7b --ep 2 --npus 4 --pims 2 --dp 4",
         "--tp 1 --ep 2 --dp 4 with 4 NPU(s): each replica is an expert-parallel group of 2 NPUs (allowed: --npus 8, "
         "or [topology] npus = 8)"},
        {"--workload serving --model mixtral-8x7b --ep 2 --npus 2 --disaggregate",
         "--ep 2 with --disaggregate: the serving model disaggregates dense or tensor-parallel instances only "
         "(allowed: --ep with colocated instances, --dp N for replicas)"},
        {"--workload agent --model mixtral-8x7b --ep 2",
         "--ep 2 with --workload agent: expert parallelism is modelled by the trace-only comparison and --workload "
         "serving (allowed: --ep 1)"},
    };
    for (const auto& [args, message] : cases) {
        const Result r = run(args + " --requests 2 --seq-len 32 --gen-len 2", "");
        EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
        EXPECT_EQ(r.out, "duet: error: " + message + "\n") << args;
    }
}

}  // namespace
