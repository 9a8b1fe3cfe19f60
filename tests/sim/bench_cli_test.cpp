// `duet bench` / `duet doctor` end to end on the real device models: every config.toml knob
// moves the JSON report in the direction physics says; errors are exact and exit with 2.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>

namespace {

struct Result {
    int code = -1;
    std::string out;
    nlohmann::json report;
};

Result run(const std::string& env, const std::string& args, bool want_report = true) {
    static int counter = 0;
    const std::string report = std::string(DUET_BINARY_DIR) + "/bench_cli_test_" + std::to_string(counter++) + ".json";
    std::remove(report.c_str());
    // These tests check the numbers; the verdict exit status (3 when NOT MET) is tested in tests/tune.
    const std::string no_gate = args.rfind("bench", 0) == 0 ? " --no-verdict-exit" : "";
    std::string cmd = "env " + env + " " + std::string(DUET_BINARY_DIR) + "/duet --log-level off " + args + no_gate +
                      (want_report ? " --report " + report : "") + " 2>&1";
    Result r;
    FILE* p = popen(cmd.c_str(), "r");
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    int status = pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream in(report);
    if (in) r.report = nlohmann::json::parse(in);
    return r;
}

const char* kBench = "bench --model llama2-7b --gen-len 8";

double ttft(const Result& r) { return r.report["target"]["timeline"]["ttft_ns"].get<double>(); }
double tbt(const Result& r) { return r.report["target"]["tbt_mean_ns"].get<double>(); }
int64_t pim_ops(const Result& r) { return r.report["target"]["timeline"]["decode"]["pim"]["ops"].get<int64_t>(); }

}  // namespace

TEST(BenchCli, DefaultRunPrintsTableAndVerdicts) {
    Result r = run("", kBench);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("TBT p99"), std::string::npos);
    EXPECT_NE(r.out.find("TBT reduction"), std::string::npos);
    EXPECT_NE(r.out.find("TTFT increase"), std::string::npos);
    EXPECT_NE(r.out.find("Memory increase"), std::string::npos);
    EXPECT_EQ(r.report["schema"], "duet.bench/1");
    EXPECT_EQ(r.report["verdicts"].size(), 3u);
    EXPECT_LT(tbt(r), r.report["baseline"]["tbt_mean_ns"].get<double>());
    EXPECT_GT(pim_ops(r), 0);
}

TEST(BenchCli, TraceAndSvgFiles) {
    const std::string trace = std::string(DUET_BINARY_DIR) + "/bench_cli_trace.json";
    const std::string svg = std::string(DUET_BINARY_DIR) + "/bench_cli_chart.svg";
    std::remove(trace.c_str());
    std::remove(svg.c_str());
    Result r = run("", std::string(kBench) + " --seq-len 64 --trace " + trace + " --svg " + svg);
    ASSERT_EQ(r.code, 0) << r.out;
    std::ifstream t(trace);
    nlohmann::json j = nlohmann::json::parse(t);
    std::set<std::string> tracks;
    for (const auto& e : j["traceEvents"])
        if (e["name"] == "thread_name") tracks.insert(e["args"]["name"].get<std::string>());
    EXPECT_EQ(tracks, (std::set<std::string>{"NPU", "PIM", "NPU conversion (PIM->NZ)", "host launch"}));
    std::ifstream g(svg);
    std::string text((std::istreambuf_iterator<char>(g)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text.rfind("<svg", 0), 0u);
    EXPECT_NE(text.find("npu_pim_coop"), std::string::npos);
}

TEST(BenchCli, PrefetchDepthAndPreconvertAtShortPrompts) {
    Result d0 = run("DUET_REORDER_PREFETCH_DEPTH=0 DUET_SCHEDULING_PRECONVERT_FIRST_TOKEN=false", std::string(kBench) + " --seq-len 16");
    Result d4 = run("DUET_SCHEDULING_PRECONVERT_FIRST_TOKEN=false", std::string(kBench) + " --seq-len 16");
    Result pre = run("", std::string(kBench) + " --seq-len 16");
    ASSERT_EQ(d0.code, 0) << d0.out;
    EXPECT_GT(ttft(d0), ttft(d4));
    EXPECT_LE(ttft(pre), ttft(d4));
    EXPECT_GT(pre.report["target"]["memory"]["conversion_bytes"].get<double>(),
              d4.report["target"]["memory"]["conversion_bytes"].get<double>());
}

TEST(BenchCli, ZeroCopySwitchOffCostsTtft) {
    Result on = run("", kBench), off = run("DUET_SCHEDULING_ZERO_COPY_SWITCH=false", kBench);
    EXPECT_GT(off.report["target"]["timeline"]["switch_ns"].get<double>(),
              1000 * on.report["target"]["timeline"]["switch_ns"].get<double>());
    EXPECT_GT(ttft(off), ttft(on));
}

TEST(BenchCli, PlacementKnobs) {
    Result base = run("", kBench);
    Result attn = run("DUET_PIM_COMPUTE_UNIT=gemv_attention", kBench);
    Result npu_dec = run("DUET_SCHEDULING_DECODE_ENGINE=npu_gemv", kBench);
    Result cold = run("DUET_SCHEDULING_NPU_ONLY_LAYERS=0-15", kBench);
    EXPECT_EQ(pim_ops(attn) - pim_ops(base), 7 * 32);  // one attention per layer per decode step
    EXPECT_EQ(pim_ops(npu_dec), 0);
    EXPECT_GT(tbt(npu_dec), tbt(base));
    EXPECT_GT(tbt(cold), tbt(base));
    EXPECT_LT(pim_ops(cold), pim_ops(base));
}

TEST(BenchCli, AlignmentAndPrecision) {
    Result base = run("", kBench);
    Result wide = run("DUET_PIM_ALIGNMENT=256 DUET_PIM_LAYOUT=row_major_256bit", kBench);
    EXPECT_LT(tbt(wide), tbt(base));  // the units' 256-bit columns are used in full
    Result bf16 = run("DUET_PIM_PRECISION=bf16 DUET_DTYPE=bfloat16", kBench);  // FIMDRAM has fp16 units only
    ASSERT_EQ(bf16.code, 0) << bf16.out;
    EXPECT_EQ(pim_ops(bf16), 0);
    Result mixed = run("DUET_DTYPE=float32", kBench, false);
    EXPECT_EQ(mixed.code, 2);
    EXPECT_NE(mixed.out.find("duet: error: settings runtime.dtype = \"float32\" but config.toml pim.precision = \"fp16\""),
              std::string::npos)
        << mixed.out;
}

TEST(BenchCli, AllPoliciesRun) {
    for (const char* p : {"pim_only", "auto", "npu_pim_coop"}) {
        Result r = run("", std::string(kBench) + " --target " + p);
        ASSERT_EQ(r.code, 0) << p << r.out;
        EXPECT_EQ(r.report["target"]["policy"], p);
        EXPECT_GT(pim_ops(r), 0) << p;
        EXPECT_LT(tbt(r), r.report["baseline"]["tbt_mean_ns"].get<double>()) << p;
    }
}

TEST(BenchCli, GraphDispatchRemovesHostLaunchGaps) {
    Result q1 = run("", kBench), graph = run("", std::string(kBench) + " --npu-dispatch graph");
    EXPECT_LT(graph.report["baseline"]["tbt_mean_ns"].get<double>(), q1.report["baseline"]["tbt_mean_ns"].get<double>());
    EXPECT_LE(graph.report["baseline"]["timeline"]["decode"]["npu"]["launch_ns"].get<double>(),
              q1.report["baseline"]["timeline"]["decode"]["npu"]["launch_ns"].get<double>());
}

TEST(BenchCli, UnsharedWeightStreamsWarn) {
    Result shared = run("", std::string(kBench) + " --batch 4 --target npu_only");
    Result own = run("DUET_MEMORY_WEIGHT_BASE_SHARED=false", std::string(kBench) + " --batch 4 --target npu_only");
    EXPECT_GT(tbt(own), 2 * tbt(shared));
    EXPECT_GT(own.report["target"]["decode_ext_bw_util"].get<double>(),
              shared.report["target"]["decode_ext_bw_util"].get<double>());
}

TEST(BenchCli, ErrorsAreExactAndExitTwo) {
    Result cache = run("DUET_MEMORY_CACHE_LIMIT_MB=100", kBench, false);
    EXPECT_EQ(cache.code, 2);
    EXPECT_NE(cache.out.find("duet: error: config.toml: memory.cache_limit_mb = 100 is too small for the conversion "
                             "cache of 387 MiB"),
              std::string::npos)
        << cache.out;
    Result ratio = run("DUET_REORDER_INDEX_RATIO_LIMIT=0.001", kBench, false);
    EXPECT_EQ(ratio.code, 2);
    EXPECT_NE(ratio.out.find("above [reorder] index_ratio_limit = 0.001"), std::string::npos) << ratio.out;
    Result soc = run("DUET_SOC_VERSION=Ascend999", kBench, false);
    EXPECT_EQ(soc.code, 2);
    EXPECT_NE(soc.out.find("duet: error: environment variable DUET_SOC_VERSION: key 'ascend.soc_version' = "
                           "\"Ascend999\" is not a known NPU preset (allowed: Ascend310B4, Ascend310P3, Ascend910B, "),
              std::string::npos)
        << soc.out;
    Result coop_off = run("DUET_ENABLE_PIM_COOP=false", kBench, false);
    EXPECT_EQ(coop_off.code, 2);
    EXPECT_NE(coop_off.out.find("duet: error: settings ascend.enable_pim_coop = false but --target = \"npu_pim_coop\" uses "
                                "the PIM (allowed: set enable_pim_coop to true, or --target npu_only)"),
              std::string::npos)
        << coop_off.out;
    Result zero = run("", std::string(kBench) + " --seq-len 0", false);
    EXPECT_EQ(zero.code, 2);
    EXPECT_NE(zero.out.find("duet: error: --seq-len = 0 is not allowed (allowed: 1 or more)"), std::string::npos) << zero.out;
    Result one = run("", "bench --gen-len 1");
    EXPECT_EQ(one.code, 0);
    EXPECT_NE(one.out.find("NOT MET: no decode step to measure (--gen-len 1)"), std::string::npos) << one.out;
    Result pol = run("", std::string(kBench) + " --target fast", false);
    EXPECT_EQ(pol.code, 2);
    EXPECT_NE(pol.out.find("duet: error: --target = \"fast\" is not a placement policy (allowed: npu_only, pim_only, "
                           "npu_pim_coop, auto)"),
              std::string::npos);
}

TEST(BenchCli, FileModeRunsTheEngineThroughThePimLayout) {
    const std::string model = std::string(DUET_BINARY_DIR) + "/bench_cli_tiny.gguf";
    ASSERT_EQ(std::system(("'" + std::string(DUET_BINARY_DIR) + "/duet' gen-model --arch tiny-llama --dtype f16 --seed 7 -o '" +
                           model + "' > /dev/null")
                              .c_str()),
              0);
    Result r = run("", "bench -m " + model + " --seq-len 12 --gen-len 6");
    ASSERT_EQ(r.code, 0) << r.out;
    const auto& f = r.report["functional"];
    EXPECT_TRUE(f["identical"].get<bool>());
    EXPECT_EQ(f["tokens_target"].size(), 6u);
    EXPECT_EQ(f["tokens_target"], f["tokens_baseline"]);
    EXPECT_EQ(f["target"]["pim_layout_matrices"].get<int64_t>(), 7 * 2 + 1);  // every matrix of the 2 layers + LM head
    EXPECT_EQ(f["baseline"]["pim_layout_matrices"].get<int64_t>(), 0);
    EXPECT_GT(f["target"]["prefill_ms"].get<double>(), 0);
    EXPECT_EQ(r.report["seq_len"].get<int64_t>(), 12);
    EXPECT_EQ(r.report["target"]["timeline"]["tbt_ns"].size(), 5u);
    EXPECT_NE(r.out.find("identical in both runs"), std::string::npos);
    const std::string q4 = std::string(DUET_BINARY_DIR) + "/bench_cli_tiny_q4.gguf";
    ASSERT_EQ(std::system(("'" + std::string(DUET_BINARY_DIR) + "/duet' gen-model --arch tiny-llama --dtype q4_0 --seed 7 -o '" +
                           q4 + "' > /dev/null")
                              .c_str()),
              0);
    Result rq = run("", "bench -m " + q4 + " --seq-len 8 --gen-len 2", false);
    EXPECT_EQ(rq.code, 2);
    EXPECT_NE(rq.out.find(": the NZ and PIM layouts hold 16-bit float weights (allowed: a model with f16 or bf16 "
                          "matrices, e.g. duet gen-model --dtype f16)"),
              std::string::npos)
        << rq.out;
    Result d = run("", "doctor -m " + model, false);
    EXPECT_EQ(d.code, 0) << d.out;
    EXPECT_NE(d.out.find("model " + model + ": loaded in"), std::string::npos) << d.out;
    Result b = run("", "bench -m " + model + " --batch 2", false);
    EXPECT_EQ(b.code, 2);
    EXPECT_NE(b.out.find("--batch = 2 with a model file: FILE mode runs one sequence (allowed: 1)"), std::string::npos);
}

TEST(DoctorCli, ReportsEveryErrorAndNeverTheKey) {
    const std::string cfg = std::string(DUET_BINARY_DIR) + "/doctor_bad.toml";
    std::ofstream(cfg) << "[pim]\nalignment = 3\n[memory]\nfoo = 1\n";
    Result r = run("DUET_API_KEY=sk-secret-value DUET_SEQ_LEN=0", "doctor --config " + cfg, false);
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("ERROR environment variable DUET_SEQ_LEN: key 'runtime.seq_len' = 0 is out of range"),
              std::string::npos) << r.out;
    EXPECT_NE(r.out.find("ERROR " + cfg + ": key 'pim.alignment' = 3 is out of range (allowed: 128 to 256)"),
              std::string::npos);
    EXPECT_NE(r.out.find("ERROR " + cfg + ": unknown key 'memory.foo'"), std::string::npos);
    EXPECT_NE(r.out.find("api key: set, read from variable DUET_API_KEY (value not shown)"), std::string::npos);
    EXPECT_EQ(r.out.find("sk-secret-value"), std::string::npos);
    EXPECT_NE(r.out.find("duet: error: doctor found 3 problems"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("| 0*    | Ascend910B"), std::string::npos);
    Result ok = run("", "doctor -m llama2-7b", false);
    EXPECT_EQ(ok.code, 0) << ok.out;
    EXPECT_NE(ok.out.find("model llama2-7b: 32 layers, n_embd 4096"), std::string::npos) << ok.out;
    Result missing = run("", "doctor -m /nonexistent/model.gguf", false);
    EXPECT_EQ(missing.code, 2);
    EXPECT_NE(missing.out.find("model /nonexistent/model.gguf: ERROR /nonexistent/model.gguf: cannot open"),
              std::string::npos)
        << missing.out;
}

// log_level: info prints one summary per phase and run; debug adds every layout conversion and
// the prefill -> decode pointer switch (or the full conversion when zero_copy_switch is off).
TEST(BenchCli, LogLevelsShowPhasesConversionsAndTheSwitch) {
    auto stderr_of = [](const std::string& env, const std::string& level) {
        const std::string cmd = "env " + env + " " + std::string(DUET_BINARY_DIR) + "/duet --log-level " + level +
                                " bench --model tiny-llama --seq-len 16 --gen-len 2 --no-verdict-exit 2>&1 >/dev/null";
        std::string out;
        FILE* p = popen(cmd.c_str(), "r");
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
        EXPECT_EQ(pclose(p), 0) << out;
        return out;
    };
    const std::string info = stderr_of("", "info");
    EXPECT_NE(info.find("[npu_only] prefill: "), std::string::npos) << info;
    EXPECT_NE(info.find("[npu_pim_coop] decode: "), std::string::npos) << info;
    EXPECT_EQ(info.find("[debug]"), std::string::npos) << info;
    const std::string debug = stderr_of("", "debug");
    EXPECT_NE(debug.find("convert L1 matmul attn_q PIM->NZ: "), std::string::npos) << debug;
    EXPECT_NE(debug.find("pointer switch prefill -> decode: "), std::string::npos) << debug;
    const std::string full = stderr_of("DUET_SCHEDULING_ZERO_COPY_SWITCH=false", "debug");
    EXPECT_NE(full.find("NZ->PIM at the switch: "), std::string::npos) << full;
    EXPECT_EQ(full.find("pointer switch prefill -> decode: "), std::string::npos) << full;
}
