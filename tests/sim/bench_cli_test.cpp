// `duet bench` / `duet doctor` end to end on the real device models: every config.toml knob
// moves the JSON report in the direction physics says; errors are exact and exit with 2.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

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
    EXPECT_EQ(tracks, (std::set<std::string>{"compute", "conversion (PIM->NZ)", "host launch", "transfers"}));
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

// --kv-type int8: the modelled KV cache holds 34 bytes per 32 values (0.53x of f16) and decode,
// which streams the KV, does not get slower.
TEST(BenchCli, KvTypeInt8ShrinksTheModelledKvCache) {
    const std::string base = std::string(kBench) + " --baseline npu_only --target npu_only";
    Result f16 = run("", base), i8 = run("", base + " --kv-type int8");
    const auto kv = [](const Result& r) { return r.report["target"]["memory"]["kv_cache_bytes"].get<uint64_t>(); };
    ASSERT_GT(kv(f16), 0u);
    EXPECT_EQ(kv(i8) * 64, kv(f16) * 34);
    EXPECT_LE(tbt(i8), tbt(f16));
    Result bad = run("", "bench --model llama2-7b --kv-type q4", false);
    EXPECT_EQ(bad.code, 2);
    EXPECT_NE(bad.out.find("--kv-type 'q4' is not supported (allowed: f32, f16, int8)"), std::string::npos) << bad.out;
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
    // Consecutive 128-bit granules of one row fill a unit's 256-bit column (docs/hardware-model.md
    // 3.1, the granule decision): 256 only changes row padding, none for these shapes.
    EXPECT_NEAR(tbt(wide) / tbt(base), 1.0, 0.01);
    Result bf16 = run("DUET_PIM_PRECISION=bf16 DUET_DTYPE=bfloat16", kBench);  // FIMDRAM has fp16 units only
    ASSERT_EQ(bf16.code, 0) << bf16.out;
    EXPECT_EQ(pim_ops(bf16), 0);
    // an idle PIM is never silent: the warning names the knob
    EXPECT_NE(bf16.out.find("  warning: PIM preset 'pim_hbm2_fimdram' has no bf16 MACs: the PIM runs no operator "
                            "(config.toml [pim] precision = \"bf16\"; allowed for this preset: f16, auto)\n"),
              std::string::npos)
        << bf16.out;
    EXPECT_FALSE(bf16.report["pim_precision"]["pim_supports"].get<bool>());
    Result mixed = run("DUET_DTYPE=float32", kBench, false);  // an alias, read as f32
    EXPECT_EQ(mixed.code, 2);
    EXPECT_NE(mixed.out.find("duet: error: settings runtime.dtype = \"f32\" but config.toml pim.precision = \"auto\""),
              std::string::npos)
        << mixed.out;
}

// GDDR6-AiM has bf16 MACs only: with the default settings (runtime.dtype f16, [pim]
// precision auto) the PIM base is held in bf16, the PIM runs, and the report says so.
TEST(BenchCli, Bf16IsChosenAutomaticallyForABf16OnlyPim) {
    for (const std::string preset : {"pim_gddr6_aim", "pim_cxl_aim"}) {
        SCOPED_TRACE(preset);
        Result r = run("", std::string(kBench) + " --pim " + preset);
        ASSERT_EQ(r.code, 0) << r.out;
        EXPECT_GT(pim_ops(r), 0);
        EXPECT_GT(r.report["target"]["timeline"]["decode"]["pim"]["busy_ns"].get<double>(), 0);
        EXPECT_NE(r.out.find("PIM precision: bf16 (bf16 chosen automatically: PIM preset '" + preset +
                             "' has bf16 MACs only (config.toml [pim] precision = \"auto\"; settings runtime.dtype = "
                             "\"f16\" stays on the NPU))\n"),
                  std::string::npos)
            << r.out;
        const auto& p = r.report["pim_precision"];
        EXPECT_EQ(p["configured"], "auto");
        EXPECT_EQ(p["precision"], "bf16");
        EXPECT_TRUE(p["chosen_automatically"].get<bool>());
        EXPECT_TRUE(p["pim_supports"].get<bool>());
        EXPECT_EQ(r.out.find("warning: PIM preset"), std::string::npos) << r.out;
    }
    // FIMDRAM has fp16 MACs: auto keeps fp16 and states nothing more
    Result fim = run("", kBench);
    EXPECT_EQ(fim.report["pim_precision"]["precision"], "f16");
    EXPECT_FALSE(fim.report["pim_precision"]["chosen_automatically"].get<bool>());
    EXPECT_NE(fim.out.find("PIM precision: f16\n"), std::string::npos) << fim.out;
    // fp16 forced on the bf16-only AiM: nothing runs on the PIM, and the warning names the knob
    Result forced = run("DUET_PIM_PRECISION=fp16", std::string(kBench) + " --pim pim_gddr6_aim");
    ASSERT_EQ(forced.code, 0) << forced.out;
    EXPECT_EQ(pim_ops(forced), 0);
    EXPECT_NE(forced.out.find("  warning: PIM preset 'pim_gddr6_aim' has no f16 MACs: the PIM runs no operator "
                              "(config.toml [pim] precision = \"f16\"; allowed for this preset: bf16, auto)\n"),
              std::string::npos)
        << forced.out;
}

// pim_only as CENT runs it: the PIM takes every operator it supports, the host CPU (cpu0) the
// rest; npu0 runs nothing, and the report lists the devices each run used.
TEST(BenchCli, PimOnlyRunsNothingOnTheNpu) {
    Result r = run("", std::string(kBench) + " --target pim_only");
    ASSERT_EQ(r.code, 0) << r.out;
    for (const char* phase : {"prefill", "decode"}) {
        SCOPED_TRACE(phase);
        const auto& devs = r.report["target"]["timeline"][phase]["devices"];
        ASSERT_EQ(devs.size(), 3u);  // npu0 (the baseline's), pim0, cpu0
        EXPECT_EQ(devs[0]["name"], "npu0");
        EXPECT_EQ(devs[0]["ops"].get<int64_t>(), 0);
        EXPECT_EQ(devs[0]["busy_ns"].get<double>(), 0);
        EXPECT_EQ(devs[2]["name"], "cpu0");
        EXPECT_EQ(devs[2]["kind"], "cpu");
        EXPECT_GT(devs[2]["ops"].get<int64_t>(), 0);  // norms, RoPE, residual adds, ...
        EXPECT_EQ(r.report["target"]["timeline"][phase]["npu"]["ops"].get<int64_t>(), 0);
        EXPECT_GT(r.report["target"]["timeline"][phase]["cpu"]["busy_ns"].get<double>(), 0);
    }
    EXPECT_GT(pim_ops(r), 0);
    EXPECT_EQ(r.report["target"]["devices_used"], nlohmann::json::array({"pim0", "cpu0"}));
    EXPECT_EQ(r.report["baseline"]["devices_used"], nlohmann::json::array({"npu0"}));
    EXPECT_EQ(r.report["topology"]["devices"][2]["model"], "host CPU (xeon_8380)");
    EXPECT_NE(r.out.find("Devices used"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("pim0,cpu0"), std::string::npos) << r.out;
    // without pim_only the machine has no host CPU device
    Result coop = run("", kBench);
    EXPECT_EQ(coop.report["topology"]["devices"].size(), 2u);
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
    EXPECT_NE(zero.out.find("duet: error: --seq-len: 0 is out of range (allowed: 1 to 2^24)"), std::string::npos) << zero.out;
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
    Result d = run("", "doctor -m " + model, false);
    EXPECT_EQ(d.code, 0) << d.out;
    EXPECT_NE(d.out.find("model " + model + ": loaded in"), std::string::npos) << d.out;
    Result b = run("", "bench -m " + model + " --batch 2", false);
    EXPECT_EQ(b.code, 2);
    EXPECT_NE(b.out.find("--batch = 2 with a model file: FILE mode runs one sequence (allowed: 1)"), std::string::npos);
}

// Every weight dtype the engine runs goes through the PIM layout, read in place. Same numerics
// (every dtype, and f32 under force_fp32): identical tokens and logits equal up to the f32
// summation order of the k-blocks. f32 under allow_fp32_to_fp16 (the default): the layout holds
// f16, the report gives both token lists and a nonzero logit difference, and the modelled devices
// hold f16 (the weights' memory is half the f32 file's).
TEST(BenchCli, FileModeRunsEveryDtypeThroughThePimLayout) {
    auto file_of = [](const std::string& dtype) {
        const std::string f = std::string(DUET_BINARY_DIR) + "/bench_cli_tiny_" + dtype + ".gguf";
        EXPECT_EQ(std::system(("'" + std::string(DUET_BINARY_DIR) + "/duet' gen-model --arch tiny-llama --dtype " + dtype +
                               " --seed 7 -o '" + f + "' > /dev/null")
                                  .c_str()),
                  0);
        return f;
    };
    std::vector<std::pair<std::string, std::string>> files;  // (file, env)
    for (const char* dt : {"f16", "bf16", "q8_0", "q4_0", "q5_0", "q4_k", "q6_k"}) files.push_back({file_of(dt), ""});
    const std::string f32 = file_of("f32");
    files.push_back({f32, "DUET_OP_PRECISION_MODE=force_fp32"});
    for (const char* shared : {"stories260K.gguf", "llama-2-tiny-random.gguf"}) {  // files from other tools
        const std::string path = std::string(DUET_SHARED_DIR) + "/models/" + shared;
        if (std::ifstream(path)) files.push_back({path, "DUET_OP_PRECISION_MODE=must_keep_origin_dtype"});
    }
    for (const auto& [file, env] : files) {
        Result r = run(env, "bench -m " + file + " --seq-len 9 --gen-len 5");
        ASSERT_EQ(r.code, 0) << file << ": " << r.out;
        const auto& f = r.report["functional"];
        EXPECT_FALSE(f["precision_changed"].get<bool>()) << file;
        EXPECT_TRUE(f["identical"].get<bool>()) << file;
        EXPECT_EQ(f["tokens_target"].size(), 5u) << file;
        EXPECT_GT(f["target"]["pim_layout_matrices"].get<int64_t>(), 0) << file;
        // a misplaced block moves logits by O(1); summation order by ~1e-6 of their scale
        EXPECT_LT(f["max_logit_diff"].get<double>(), 1e-3) << file;
    }
    Result c = run("", "bench -m " + f32 + " --seq-len 9 --gen-len 5");
    ASSERT_EQ(c.code, 0) << c.out;
    const auto& f = c.report["functional"];
    EXPECT_TRUE(f["precision_changed"].get<bool>());
    EXPECT_EQ(f["op_precision_mode"].get<std::string>(), "allow_fp32_to_fp16");
    EXPECT_EQ(f["target"]["f16_from_f32_matrices"].get<int64_t>(), 7 * 2 + 1);
    EXPECT_EQ(f["tokens_baseline"].size(), 5u);
    EXPECT_EQ(f["tokens_target"].size(), 5u);
    EXPECT_GT(f["max_logit_diff"].get<double>(), 0.0);  // f16 rounding of the weights shows
    EXPECT_LT(f["max_logit_diff"].get<double>(), 0.5);
    EXPECT_NE(c.out.find("held as f16 from f32: ascend.op_precision_mode = allow_fp32_to_fp16"), std::string::npos);
    Result k = run("DUET_OP_PRECISION_MODE=force_fp32", "bench -m " + f32 + " --seq-len 9 --gen-len 5");
    // f32 kept: the layout holds f32, the modelled PIM cannot run it and the verdict says why
    EXPECT_EQ(pim_ops(k), 0);
    EXPECT_NE(k.out.find("the PIM ran no decode operator: the matrices are f32 and no PIM preset has fp32 MACs "
                         "(ascend.op_precision_mode = allow_fp32_to_fp16 holds them as f16)"),
              std::string::npos)
        << k.out;
    // the f16 placement's weights are half the f32 ones in the modelled memory
    EXPECT_NEAR(c.report["target"]["memory"]["weights_bytes"].get<double>() /
                    k.report["target"]["memory"]["weights_bytes"].get<double>(), 0.5, 0.05);
}

// Mixture-of-Experts and latent-attention files through the PIM layout, with and without --fuse:
// each expert's and head's matrix has a base and block index of its own. The f32 router stays f32
// (must_keep_origin_dtype), so the numbers are the plain engine's: identical tokens, logits equal
// up to the f32 summation order of the k-blocks.
TEST(BenchCli, FileModeRunsMoeAndLatentModelsThroughThePimLayout) {
    for (const char* arch : {"tiny-qwen2moe", "tiny-deepseek2"}) {
        for (const char* dtype : {"f16", "q8_0"}) {
            const std::string f = std::string(DUET_BINARY_DIR) + "/bench_cli_" + arch + "_" + dtype + ".gguf";
            ASSERT_EQ(std::system(("'" + std::string(DUET_BINARY_DIR) + "/duet' gen-model --arch " + arch + " --dtype " +
                                   dtype + " --seed 7 -o '" + f + "' > /dev/null")
                                      .c_str()),
                      0);
            for (const char* fuse : {"", " --fuse"}) {
                const std::string what = f + fuse;
                Result r = run("DUET_OP_PRECISION_MODE=must_keep_origin_dtype",
                               "bench -m " + f + " --seq-len 9 --gen-len 5" + fuse);
                ASSERT_EQ(r.code, 0) << what << ": " << r.out;
                const auto& fn = r.report["functional"];
                EXPECT_TRUE(fn["identical"].get<bool>()) << what;
                EXPECT_FALSE(fn["precision_changed"].get<bool>()) << what;
                EXPECT_EQ(fn["tokens_target"].size(), 5u) << what;
                EXPECT_LT(fn["max_logit_diff"].get<double>(), 1e-3) << what;
                if (std::string(arch) == "tiny-qwen2moe")  // per layer q, k, v (fused: one), o, router,
                    // 4 experts x gate, up, down, the shared expert's three and its gate; the LM head
                    EXPECT_EQ(fn["target"]["pim_layout_matrices"].get<int64_t>(), *fuse ? 2 * 19 + 1 : 2 * 21 + 1)
                        << what;
                else
                    EXPECT_GT(fn["target"]["pim_layout_matrices"].get<int64_t>(), 0) << what;
            }
        }
    }
    // [pim] precision = int8: the Q8_0 experts as int8 quants + scales, the f32 routers as f32
    const std::string q8 = std::string(DUET_BINARY_DIR) + "/bench_cli_tiny-qwen2moe_q8_0.gguf";
    Result r = run("DUET_PIM_PRECISION=int8 DUET_OP_PRECISION_MODE=must_keep_origin_dtype",
                   "bench -m " + q8 + " --seq-len 9 --gen-len 5");
    ASSERT_EQ(r.code, 0) << r.out;
    const auto& fn = r.report["functional"];
    EXPECT_TRUE(fn["identical"].get<bool>());
    EXPECT_LT(fn["max_logit_diff"].get<double>(), 1e-3);
    EXPECT_EQ(fn["pim_int8"]["q8_0_matrices"].get<int64_t>(), 2 * 21 + 1 - 2 * 2);  // all but router, shared gate
}

// [pim] precision = int8 (issue 9 item 4): a Q8_0 file's matrices are held as int8 quants in the
// PIM layout with their f16 block scales beside it, and the host GEMV reads both in place with
// Q8_0's arithmetic: tokens identical and logits equal to the last bit. The PIM model runs them
// as int8 MACs on GeniePIM's LPDDR5X preset and, widened, as fp16 MACs on HBM2-PIM (no int8
// lanes), and the report says which; without int8, HBM2-PIM runs no Q8_0 GEMV at all. A float
// file or an architecture preset with int8 is refused, naming the key.
TEST(BenchCli, Int8PrecisionHoldsQ8_0AsInt8WithScales) {
    auto file_of = [](const std::string& dtype) {
        const std::string f = std::string(DUET_BINARY_DIR) + "/bench_cli_int8_" + dtype + ".gguf";
        EXPECT_EQ(std::system(("'" + std::string(DUET_BINARY_DIR) + "/duet' gen-model --arch tiny-llama --dtype " + dtype +
                               " --seed 7 -o '" + f + "' > /dev/null")
                                  .c_str()),
                  0);
        return f;
    };
    const std::string args = "bench -m " + file_of("q8_0") + " --seq-len 9 --gen-len 5";
    Result r = run("DUET_PIM_PRECISION=int8", args);
    ASSERT_EQ(r.code, 0) << r.out;
    const auto& f = r.report["functional"];
    EXPECT_TRUE(f["identical"].get<bool>());
    EXPECT_FALSE(f["precision_changed"].get<bool>());
    EXPECT_EQ(f["max_logit_diff"].get<double>(), 0.0);
    EXPECT_EQ(f["pim_precision"].get<std::string>(), "i8");
    EXPECT_EQ(f["pim_int8"]["q8_0_matrices"].get<int64_t>(), 7 * 2 + 1);
    // the scales are 2 of every 34 bytes of the Q8_0 matrices the target reads
    const double w = r.report["target"]["memory"]["weights_bytes"].get<double>();
    EXPECT_GT(f["pim_int8"]["scale_bytes"].get<double>(), 0.0);
    EXPECT_LE(f["pim_int8"]["scale_bytes"].get<double>(), w * 2.0 / 34.0 + 1);
    EXPECT_EQ(f["pim_int8"]["pim_macs"].get<std::string>(),
              "widened to f16 MACs (the preset has no int8 MACs: costed as a 16-bit GEMV of the same shape)");
    EXPECT_GT(pim_ops(r), 0);
    EXPECT_NE(r.out.find("[pim] precision = int8: 15 Q8_0 matrices held as int8 quants in the PIM layout, their f16 "
                         "block scales beside it"),
              std::string::npos)
        << r.out;
    Result fp16 = run("", args);
    ASSERT_EQ(fp16.code, 0) << fp16.out;
    EXPECT_EQ(pim_ops(fp16), 0);  // HBM2-PIM: fp16 lanes only, Q8_0 is not widened without int8
    Result genie = run("DUET_PIM_PRECISION=int8", args + " --pim pim_lpddr5x_bank");
    ASSERT_EQ(genie.code, 0) << genie.out;
    EXPECT_EQ(genie.report["functional"]["pim_int8"]["pim_macs"].get<std::string>(), "int8 MACs (32 lanes)");
    EXPECT_GT(pim_ops(genie), 0);
    EXPECT_TRUE(genie.report["functional"]["identical"].get<bool>());
    // lower-bit quants keep their ggml rows and run widened to int8 (no preset has int4 MACs), stated
    Result q4 = run("DUET_PIM_PRECISION=int8", "bench -m " + file_of("q4_0") + " --seq-len 9 --gen-len 5");
    ASSERT_EQ(q4.code, 0) << q4.out;
    EXPECT_TRUE(q4.report["functional"]["identical"].get<bool>());
    EXPECT_EQ(q4.report["functional"]["pim_int8"]["q8_0_matrices"].get<int64_t>(), 0);
    EXPECT_EQ(q4.report["functional"]["pim_int8"]["widened_to_int8"].get<std::string>(), "q4_0");
    EXPECT_NE(q4.out.find("  q4_0 matrices keep their ggml rows and run widened to int8 (no PIM preset has int4 MACs)"),
              std::string::npos)
        << q4.out;
    Result f16 = run("DUET_PIM_PRECISION=int8", "bench -m " + file_of("f16") + " --seq-len 9 --gen-len 5", false);
    EXPECT_EQ(f16.code, 2);
    EXPECT_NE(f16.out.find("duet: error: config.toml [pim] precision = i8 holds Q8_0 matrices as int8 quants with "
                           "their block scales, but the model's "),
              std::string::npos)
        << f16.out;
    EXPECT_NE(f16.out.find("(allowed: [pim] precision = f16, bf16 or i8; i8 needs a Q8_0 model file"),
              std::string::npos);
    Result preset = run("DUET_PIM_PRECISION=int8", kBench, false);
    EXPECT_EQ(preset.code, 2);
    EXPECT_NE(preset.out.find("duet: error: config.toml [pim] precision = \"i8\" needs a Q8_0 model file (duet bench "
                              "--model FILE.gguf): the architecture preset 'llama2-7b' is modelled with settings "
                              "runtime.dtype = \"f16\" weights (allowed with a preset: [pim] precision = auto, f16 with "
                              "f16, bf16 with bf16)"),
              std::string::npos)
        << preset.out;
    Result bad = run("DUET_PIM_PRECISION=int4", kBench, false);
    EXPECT_EQ(bad.code, 2);
    EXPECT_NE(bad.out.find("pim.precision"), std::string::npos) << bad.out;
    EXPECT_NE(bad.out.find("(allowed: f16, bf16, i8, auto; also read as one of those: float16, fp16, bfloat16, int8)"), std::string::npos) << bad.out;
}

// Batched decode with a shared weight base (issue 9 item 3): a decode GEMM of B vectors stays on
// the PIM only while re-reading the weights per vector is still faster than the NPU, so the
// PIM is used exactly where it pays. On the HBM3 bank-level PIM the batch-2 GEMMs still pay,
// batch 4 no longer does; `auto` is never slower than npu_pim_coop at any batch.
TEST(BenchCli, BatchedDecodeKeepsThePimWhereItPays) {
    const std::string base = "bench --model llama2-7b --gen-len 4 --pim pim_hbm3_bank";
    Result b2 = run("", base + " --batch 2");
    ASSERT_EQ(b2.code, 0) << b2.out;
    EXPECT_GT(pim_ops(b2), 0);
    EXPECT_LT(tbt(b2), b2.report["baseline"]["tbt_mean_ns"].get<double>());
    Result b4 = run("", base + " --batch 4");
    ASSERT_EQ(b4.code, 0) << b4.out;
    EXPECT_EQ(pim_ops(b4), 0);
    // no GEMV on the PIM: the target differs from the baseline only by the NPU reading its weights
    // through the shared PIM-layout base (the reorder's per-block DMA set-up, a few per cent)
    EXPECT_GE(tbt(b4), b4.report["baseline"]["tbt_mean_ns"].get<double>());
    EXPECT_LT(tbt(b4), b4.report["baseline"]["tbt_mean_ns"].get<double>() * 1.05);
    EXPECT_NE(b4.out.find("with batch 4 and memory.weight_base_shared = true every decode matmul has 4 rows"),
              std::string::npos)
        << b4.out;
    // `auto` places each op where it is faster, so it is never slower than npu_pim_coop. Against
    // the NPU-only baseline it can lose: with the shared weight base the NPU reads its decode
    // weights through the PIM layout's block index and pays the reorder's per-block DMA set-up
    // (docs/hardware-model.md §7), ~3 % of TBT where no GEMV pays on the PIM (batch 4).
    for (const char* pim : {"pim_hbm3_bank", "pim_lpddr5x_bank", "pim_hbm2_fimdram"})
        for (int batch : {1, 2, 4}) {
            const std::string args = std::string("bench --model llama2-7b --gen-len 4 --pim ") + pim + " --batch " +
                                     std::to_string(batch);
            Result a = run("", args + " --target auto");
            Result c = run("", args);
            ASSERT_EQ(a.code, 0) << a.out;
            EXPECT_LE(tbt(a), tbt(c) * (1 + 1e-9)) << pim << " " << batch;
            // Where the PIM wins per GEMV but by less than the shared base's DMA set-up costs the
            // NPU's other matmuls (HBM2-PIM at batch 2: every 4096-row GEMV runs a whole 8-row
            // tile per unit), `auto` may end within that few per cent above the baseline.
            if (pim_ops(a) > 0) {
                EXPECT_LT(tbt(a), a.report["baseline"]["tbt_mean_ns"].get<double>() * 1.05) << pim << " " << batch;
            }
        }
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

// The PIM part of decode TBT is TBT minus the NPU's busy time and the serving stack's host work
// per step (decode is one chain: the host step, then norms, RoPE, attention and sampling on the
// NPU, the GEMVs on the PIM devices). Each GEMV's PIM
// time is a part proportional to its rows (the weight stream through the bank units) plus a
// part that does not shrink with them (mode switches, the input broadcast into every unit,
// reading the partial sums, launch): splitting the rows over two PIM devices running in
// parallel takes the PIM part to a little over half — 0.45 to 0.6 allows the fixed part up to
// a fifth of the GEMV time and catches both "no split" (1.0) and a double count (< 0.45).
// Run on the HBM3 bank PIM: HBM2-PIM runs whole tiles of 8 rows on each of its 512 units
// (PIMSimulator's kernel), so a 4096-row GEMV costs the same on half the rows.
TEST(BenchCli, TwoPimsHalveThePimShareOfTbt) {
    const std::string bench = std::string(kBench) + " --pim pim_hbm3_bank";
    Result one = run("", bench), two = run("", bench + " --pims 2");
    ASSERT_EQ(two.code, 0) << two.out;
    auto pim_share = [](const Result& r) {
        const auto& t = r.report["target"];
        const double steps = double(t["timeline"]["tbt_ns"].size());
        const auto& decode = t["timeline"]["decode"];
        return t["tbt_mean_ns"].get<double>() -
               (decode["npu"]["busy_ns"].get<double>() + decode["step_host_ns"].get<double>()) / steps;
    };
    const double ratio = pim_share(two) / pim_share(one);
    EXPECT_GT(ratio, 0.45) << ratio;
    EXPECT_LT(ratio, 0.60) << ratio;
    // per-device stats: both PIM devices ran every decode GEMV (their halves)
    const auto& devices = two.report["target"]["timeline"]["decode"]["devices"];
    ASSERT_EQ(devices.size(), 3u);
    EXPECT_EQ(devices[0]["name"], "npu0");
    EXPECT_EQ(devices[1]["name"], "pim0");
    EXPECT_EQ(devices[2]["name"], "pim1");
    EXPECT_EQ(devices[1]["ops"], devices[2]["ops"]);
    EXPECT_EQ(devices[1]["ops"].get<int64_t>(), pim_ops(one));
    EXPECT_EQ(two.report["topology"]["devices"].size(), 3u);
    EXPECT_EQ(two.report["topology"]["links"][1]["name"], "pim1-npu0");
    EXPECT_NE(two.out.find("  pim1 "), std::string::npos) << two.out;  // a table row per device
}

TEST(BenchCli, TopologyFlagsFileAndErrors) {
    Result bad = run("", std::string(kBench) + " --npus 0", false);
    EXPECT_EQ(bad.code, 2);
    EXPECT_EQ(bad.out, "duet: error: --npus: 0 is out of range (allowed: 1 to 64)\n");
    const std::string file = std::string(DUET_BINARY_DIR) + "/bench_cli_topology.toml";
    {
        std::ofstream f(file);
        f << "[topology]\npims = 2\npim_link = \"nvlink\"\n";
    }
    Result link = run("", std::string(kBench) + " --topology " + file, false);
    EXPECT_EQ(link.code, 2);
    EXPECT_EQ(link.out, "duet: error: " + file + ": key 'topology.pim_link' = \"nvlink\" is not allowed (allowed: "
                        "shared_hbm, hccs_910b, pcie4_x16, pcie5_x16, cxl2_x16, roce_200g, roce_400g, cxl_cent_x18, cxl_cent_x7, cxl_cent_x4)\n");
    {
        std::ofstream f(file);
        f << "[topology]\npims = 2\npim_link = \"cxl2_x16\"\n";
    }
    Result cxl = run("", std::string(kBench) + " --topology " + file);
    ASSERT_EQ(cxl.code, 0) << cxl.out;
    const auto& links = cxl.report["target"]["timeline"]["links"];
    EXPECT_GT(links[0]["transfers"].get<int64_t>(), 0);  // inputs sent, partial outputs gathered
    EXPECT_EQ(cxl.report["topology"]["links"][0]["preset"], "cxl2_x16");
    EXPECT_EQ(cxl.report["config"]["config"]["topology.pim_link"], "cxl2_x16");
    Result shared = run("", std::string(kBench) + " --pims 2");
    EXPECT_GT(tbt(cxl), tbt(shared));
    Result env = run("DUET_TOPOLOGY_PIMS=2", kBench);
    EXPECT_EQ(tbt(env), tbt(shared));
    Result presets = run("DUET_TOPOLOGY_PIM_PRESETS=pim_hbm2_fimdram,pim_hbm2_fimdram", std::string(kBench) + " --pims 3", false);
    EXPECT_EQ(presets.code, 2);
    EXPECT_EQ(presets.out, "duet: error: --pims = 3 but topology.pim_presets = \"pim_hbm2_fimdram,pim_hbm2_fimdram\" names "
                           "2 presets (allowed: --pims 2, or change pim_presets)\n");
}

// The report's config holds values, not JSON strings of them ("gemv", not "\"gemv\"").
TEST(BenchCli, ReportConfigValuesAreNotDoubleEncoded) {
    Result r = run("", kBench);
    const auto& c = r.report["config"];
    EXPECT_EQ(c["config"]["pim.compute_unit"], "gemv");
    EXPECT_EQ(c["config"]["pim.alignment"], 128);
    EXPECT_EQ(c["config"]["scheduling.zero_copy_switch"], true);
    EXPECT_EQ(c["config"]["topology.pims"], 1);
}

TEST(BenchCli, TraceStepsLimitsTheRecordedDecodeSteps) {
    const std::string all = std::string(DUET_BINARY_DIR) + "/bench_cli_trace_all.json";
    const std::string two = std::string(DUET_BINARY_DIR) + "/bench_cli_trace_two.json";
    Result a = run("", std::string(kBench) + " --seq-len 16 --trace " + all);
    Result b = run("", std::string(kBench) + " --seq-len 16 --trace-steps 2 --trace " + two);
    ASSERT_EQ(b.code, 0) << b.out;
    EXPECT_NE(b.out.find("trace: writing "), std::string::npos) << b.out;  // progress before the write
    auto decode_events = [](const std::string& path, double& last_end_us) {
        std::ifstream in(path);
        nlohmann::json j = nlohmann::json::parse(in);
        int64_t n = 0;
        last_end_us = 0;
        for (const auto& e : j["traceEvents"])
            if (e["ph"] == "X" && e["cat"] == "decode") {
                ++n;
                last_end_us = std::max(last_end_us, e["ts"].get<double>() + e["dur"].get<double>());
            }
        return n;
    };
    double end_all = 0, end_two = 0;
    const int64_t n_all = decode_events(all, end_all), n_two = decode_events(two, end_two);
    // gen-len 8: 7 decode steps; 2 recorded, each with the same events
    EXPECT_EQ(n_two * 7, n_all * 2);
    EXPECT_LT(end_two, end_all);
    EXPECT_EQ(a.report["target"]["tbt_mean_ns"], b.report["target"]["tbt_mean_ns"]);  // figures unchanged
    Result neg = run("", std::string(kBench) + " --trace-steps -2", false);
    EXPECT_EQ(neg.out, "duet: error: --trace-steps: -2 is out of range (allowed: 0 to 2^20)\n");
}

// Scale-out (docs/scale-out.md): llama2-70b over 8 NPUs, each rank's collectives on the HCCS mesh.
namespace {
const char* kTp8 = "bench --model llama2-70b --npus 8 --pims 8 --tp 8 --gen-len 8";
double decode_comm(const Result& r, size_t device = 0) {
    return r.report["target"]["timeline"]["decode"]["devices"][device]["comm_ns"].get<double>();
}
}  // namespace

TEST(BenchCli, TensorParallelOnEightNpusReportsCommunicationPerDevice) {
    const std::string trace = std::string(DUET_BINARY_DIR) + "/bench_cli_tp8_trace.json";
    Result r = run("", std::string(kTp8) + " --trace " + trace);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(r.report["parallel"]["tp"], 8);
    EXPECT_EQ(r.report["parallel"]["hccl_expansion"], "HOST");
    const auto& devs = r.report["target"]["timeline"]["decode"]["devices"];
    ASSERT_EQ(devs.size(), 16u);
    for (size_t d = 0; d < 8; ++d) {
        EXPECT_EQ(devs[d]["name"], "npu" + std::to_string(d));
        EXPECT_GT(devs[d]["comm_ns"].get<double>(), 0) << d;
        EXPECT_LE(devs[d]["exposed_comm_ns"].get<double>(), devs[d]["comm_ns"].get<double>() * (1 + 1e-12)) << d;
        EXPECT_EQ(devs[d]["busy_ns"], devs[0]["busy_ns"]) << d;  // equal shards
        EXPECT_GT(devs[8 + d]["busy_ns"].get<double>(), 0) << d;  // every rank's own PIM device ran its GEMVs
    }
    // 7 NPU links to npu0 + 21 between the others (a full mesh of 28), 8 PIM stacks in HBM (shared memory)
    EXPECT_EQ(r.report["topology"]["links"].size(), 28u + 8u);
    EXPECT_NE(r.out.find("Decode communication per token"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("parallel: tp 8 x pp 1"), std::string::npos) << r.out;
    std::ifstream t(trace);
    const std::string text((std::istreambuf_iterator<char>(t)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("npu7"), std::string::npos);
    EXPECT_NE(text.find("npu6-npu7"), std::string::npos);
    EXPECT_NE(text.find("all_reduce (mesh, 8 ranks)"), std::string::npos);
}

TEST(BenchCli, ExpansionModeAndFlashcommChangeTheCollectivesAsDocumented) {
    Result host = run("", kTp8), aiv = run("", std::string(kTp8) + " --hccl-expansion AIV");
    ASSERT_EQ(aiv.code, 0) << aiv.out;
    EXPECT_LT(decode_comm(aiv), decode_comm(host));  // AIV's launch is the cheapest (configs/hw/collectives.toml)
    Result env = run("HCCL_OP_EXPANSION_MODE=AIV", kTp8);
    EXPECT_EQ(decode_comm(env), decode_comm(aiv));
    Result flag_wins = run("HCCL_OP_EXPANSION_MODE=AIV", std::string(kTp8) + " --hccl-expansion HOST");
    EXPECT_EQ(decode_comm(flag_wins), decode_comm(host));
    // FlashComm: prefill moves 1/p of the all-reduce's bytes per link twice (faster TTFT); batch-1
    // decode pays two launches per block instead of one (more collective time per token)
    Result fc = run("VLLM_ASCEND_ENABLE_FLASHCOMM=1", kTp8);
    ASSERT_EQ(fc.code, 0) << fc.out;
    EXPECT_EQ(fc.report["parallel"]["flashcomm"], true);
    EXPECT_LT(ttft(fc), ttft(host));
    EXPECT_GT(decode_comm(fc), decode_comm(host));
    EXPECT_EQ(decode_comm(run("", std::string(kTp8) + " --flashcomm")), decode_comm(fc));
}

TEST(BenchCli, ScaleOutErrorsNameTheFlagOrVariable) {
    Result bad = run("", std::string(kTp8) + " --hccl-expansion aiv", false);
    EXPECT_EQ(bad.code, 2);
    EXPECT_EQ(bad.out, "duet: error: --hccl-expansion = \"aiv\" is not an HCCL expansion mode (allowed: AI_CPU, AIV, "
                       "HOST, HOST_TS)\n");
    bad = run("HCCL_OP_EXPANSION_MODE=ring", kTp8, false);
    EXPECT_EQ(bad.code, 2);
    EXPECT_EQ(bad.out, "duet: error: HCCL_OP_EXPANSION_MODE = \"ring\" is not allowed (allowed: AI_CPU, AIV, HOST, "
                       "HOST_TS)\n");
    bad = run("VLLM_ASCEND_ENABLE_FLASHCOMM=yes", kTp8, false);
    EXPECT_EQ(bad.code, 2);
    EXPECT_EQ(bad.out, "duet: error: VLLM_ASCEND_ENABLE_FLASHCOMM = \"yes\" is not allowed (allowed: 0, 1)\n");
    bad = run("", "bench --model llama2-70b --tp 3", false);
    EXPECT_EQ(bad.code, 2);
    EXPECT_EQ(bad.out, "duet: error: --tp = 3 does not divide the 64 attention heads of 'llama2-70b' (allowed: a "
                       "divisor of 64)\n");
    bad = run("", "bench --model llama2-7b --pp 33", false);
    EXPECT_EQ(bad.code, 2);
    EXPECT_EQ(bad.out, "duet: error: --pp = 33 is not allowed for the 32 layers of 'llama2-7b' (allowed: 1 to 32)\n");
}

TEST(BenchCli, PimOnlyTensorParallelOverCxlIsAGpuFreePimSystem) {
    const std::string file = std::string(DUET_BINARY_DIR) + "/bench_cli_cent.toml";
    {
        std::ofstream f(file);
        f << "[topology]\npims = 8\npim_link = \"cxl2_x16\"\n";
    }
    Result r = run("", "bench --model llama2-70b --tp 8 --gen-len 8 --baseline pim_only --target pim_only --topology " +
                           file);
    ASSERT_EQ(r.code, 0) << r.out;
    for (const char* run : {"baseline", "target"}) {
        const auto& devs = r.report[run]["timeline"]["decode"]["devices"];
        ASSERT_EQ(devs.size(), 10u);  // npu0 + pim0..pim7 + cpu0
        EXPECT_EQ(devs[0]["name"], "npu0");
        EXPECT_EQ(devs[9]["name"], "cpu0");
        for (const char* phase : {"prefill", "decode"}) {  // pim_only: no rank uses its NPU
            const auto& ds = r.report[run]["timeline"][phase]["devices"];
            EXPECT_EQ(ds[0]["busy_ns"].get<double>(), 0) << run << " " << phase;
            EXPECT_GT(ds[9]["busy_ns"].get<double>(), 0) << run << " " << phase;  // norms etc. on the host CPU
        }
        for (size_t d = 1; d < 9; ++d) {
            EXPECT_GT(devs[d]["busy_ns"].get<double>(), 0) << d;
            EXPECT_GT(devs[d]["comm_ns"].get<double>(), 0) << d;  // the PIM devices all-reduce over CXL
        }
    }
    bool pim_mesh_used = false;
    for (const auto& l : r.report["target"]["timeline"]["links"])
        pim_mesh_used = pim_mesh_used || (l["name"] == "pim0-pim1" && l["transfers"].get<int64_t>() > 0);
    EXPECT_TRUE(pim_mesh_used);
}

TEST(BenchCli, PipelineStagesSplitTheBatchIntoMicroBatches) {
    Result r = run("", "bench --model llama2-7b --npus 2 --pp 2 --batch 4 --gen-len 8 --target npu_only");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(r.report["parallel"]["pp"], 2);
    EXPECT_EQ(r.report["parallel"]["micro_batches"], 2);
    const auto& devs = r.report["target"]["timeline"]["decode"]["devices"];
    EXPECT_GT(devs[0]["comm_ns"].get<double>(), 0);  // stage 0 sends its boundary to stage 1
    EXPECT_GT(devs[1]["busy_ns"].get<double>(), 0);
    // 8 ranks and one PIM device: the target's GEMVs queue on it, and the report says so
    Result shared = run("", "bench --model llama2-70b --npus 8 --tp 8 --gen-len 4");
    ASSERT_EQ(shared.code, 0) << shared.out;
    EXPECT_NE(shared.out.find("warning: tp x pp = 8 ranks share 1 PIM device(s): their GEMVs queue on one device "
                              "(--pims 8 gives each rank its own)"),
              std::string::npos)
        << shared.out;
}

// The plans a trace-only bench holds (gen_len forwards of op records per policy) are estimated
// before they are built (tune/memory_estimate.h) and refused past --max-memory-mb; measured:
// 457 MB peak RSS for this run within the default cap, against the 0.50 GiB estimate.
TEST(BenchCli, PlansPastTheMemoryCapAreRefusedBeforeTheyAreBuilt) {
    const Result r = run("", "bench --model llama2-7b --gen-len 4000 --seq-len 64 --max-memory-mb 128", false);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out,
              "duet: error: this bench of llama2-7b needs at least 0.50 GiB: 64 MiB base + 1 thread(s) x 443.1 MiB of "
              "plans (1 batch size(s) x 2 plans x 4000 forwards x 484 op records x 120 B), more than the cap of 0.12 GiB "
              "(duet bench --max-memory-mb 128; allowed: a smaller --gen-len, or a larger cap)\n");
    EXPECT_EQ(run("", "bench --model llama2-7b --gen-len 400 --seq-len 64 --max-memory-mb 128", false).code, 0);
}
