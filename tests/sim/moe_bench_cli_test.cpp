// `duet bench --model <MoE/MLA preset | config.json>` end to end: the four real presets print a
// table and write a report whose memory splits experts / shared weights / latent KV; a config.json
// works in file and directory form; a config duet cannot model exits 2 naming the field; --tp
// splits experts and latent attention (generation and serving), --tp N --ep N puts E/N whole experts
// on the tensor-parallel ranks, --fuse and --tp with a different --ep exit 2.
#include <gtest/gtest.h>

#include "bench_report_run.h"
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <string>

namespace {

using Result = duet::test::BenchRun;

// The real presets' layer 0 (every expert of it, pre-converted to NZ for the first token) needs a
// conversion cache of up to 4.6 GiB (Qwen3-235B-A22B: 128 experts x 3 x 4096 x 1536 x 2 bytes),
// beyond the shipped 512 MiB: the large dense presets need the same (llama2-70b: 1.6 GiB).
const char* kCacheEnv = "env DUET_MEMORY_CACHE_LIMIT_MB=8192 ";

Result bench(const std::string& args, const std::string& log_level = "off") {
    return duet::test::run_bench(args, "moe_bench_cli", kCacheEnv, log_level);
}

std::string hf(const std::string& name) { return std::string(DUET_SOURCE_DIR) + "/tests/model/data/hf/" + name; }

}  // namespace

TEST(MoeBenchCli, FourPresetsBench) {
    for (const char* preset : {"mixtral-8x7b", "qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3"}) {
        const Result r = bench(std::string("--model ") + preset + " --seq-len 128 --gen-len 4");
        ASSERT_EQ(r.code, 0) << preset << "\n" << r.out;
        EXPECT_NE(r.out.find("of which routed experts"), std::string::npos) << r.out;
        const auto& m = r.report["baseline"]["memory"];
        EXPECT_GT(m["weights_experts_bytes"].get<double>(), 0.5 * m["weights_bytes"].get<double>()) << preset;
        EXPECT_EQ(m["weights_shared_bytes"].get<uint64_t>() + m["weights_experts_bytes"].get<uint64_t>(),
                  m["weights_bytes"].get<uint64_t>());
        EXPECT_GT(r.report["baseline"]["timeline"]["ttft_ns"].get<double>(), 0) << preset;
        EXPECT_GT(r.report["baseline"]["tbt_mean_ns"].get<double>(), 0) << preset;
    }
}

TEST(MoeBenchCli, DeepSeekV3KvCacheIsTheLatent) {
    const Result r = bench("--model deepseek-v3 --seq-len 1000 --gen-len 24 --batch 2");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("KV cache (paged, MLA latent)"), std::string::npos) << r.out;
    const auto& m = r.report["baseline"]["memory"];
    EXPECT_TRUE(m["kv_cache_latent"].get<bool>());
    // 70 272 bytes per token (61 layers x (512 + 64) values x 2 bytes), over whole paged blocks
    const uint64_t kv = m["kv_cache_bytes"].get<uint64_t>();
    EXPECT_EQ(kv % 70272, 0u);
    const uint64_t tokens = kv / 70272;
    EXPECT_GE(tokens, 2u * 1024);
    EXPECT_LT(tokens, 2u * 1024 + 2 * 1024);  // at most one partial block per sequence
}

TEST(MoeBenchCli, ConfigJsonFileAndDirectory) {
    const Result d = bench("--model " + hf("tiny-deepseek-v3") + " --seq-len 32 --gen-len 4", "warn");
    ASSERT_EQ(d.code, 0) << d.out;
    EXPECT_NE(d.out.find("field 'topk_method' is not modelled (routing is modelled as uniform over the experts)"),
              std::string::npos)
        << d.out;
    const Result f = bench("--model " + hf("tiny-qwen2-moe/config.json") + " --seq-len 32 --gen-len 4");
    ASSERT_EQ(f.code, 0) << f.out;
    EXPECT_NE(f.out.find("of which routed experts"), std::string::npos) << f.out;
    const Result l = bench("--model " + hf("tiny-llama/config.json") + " --seq-len 32 --gen-len 4");
    ASSERT_EQ(l.code, 0) << l.out;
    EXPECT_EQ(l.out.find("of which routed experts"), std::string::npos) << l.out;  // dense: no split
}

TEST(MoeBenchCli, UnsupportedConfigExits2NamingTheField) {
    const std::string path = std::string(DUET_BINARY_DIR) + "/moe_bench_cli_falcon.json";
    std::ofstream(path) << R"({"model_type": "falcon", "hidden_size": 64})";
    const Result r = bench("--model " + path);
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("duet: error: " + path +
                         ": field 'model_type' = \"falcon\" is not supported (supported: llama, mistral, qwen2, "
                         "mixtral, qwen2_moe, qwen3_moe, deepseek_v2, deepseek_v3)"),
              std::string::npos)
        << r.out;
    const std::string sw = std::string(DUET_BINARY_DIR) + "/moe_bench_cli_window.json";
    std::ofstream(sw) << R"({"model_type": "mistral", "vocab_size": 100, "max_position_embeddings": 32768,
        "hidden_size": 64, "num_hidden_layers": 2, "intermediate_size": 128, "num_attention_heads": 4,
        "sliding_window": 4096})";
    const Result w = bench("--model " + sw);
    EXPECT_EQ(w.code, 2) << w.out;
    EXPECT_NE(w.out.find("duet: error: " + sw + ": field 'sliding_window' = 4096 is not modelled"), std::string::npos)
        << w.out;
}

double tbt(const Result& r, const char* side) { return r.report[side]["tbt_mean_ns"].get<double>(); }

TEST(MoeBenchCli, TensorParallelSplitsExpertsAndLatentAttention) {
    // Mixtral (experts, grouped-query attention) and DeepSeek-V3 (experts, latent attention): each
    // of two ranks reads half of every expert and of the attention heads' matrices per token
    for (const char* preset : {"mixtral-8x7b", "deepseek-v3"}) {
        const std::string args = std::string("--model ") + preset + " --seq-len 64 --gen-len 4";
        const Result one = bench(args), two = bench(args + " --tp 2 --npus 2 --pims 2");
        ASSERT_EQ(one.code, 0) << one.out;
        ASSERT_EQ(two.code, 0) << two.out;
        EXPECT_EQ(two.report["parallel"]["tp"], 2) << preset;
        EXPECT_NE(two.out.find("parallel: tp 2 x pp 1"), std::string::npos) << two.out;
        for (const char* side : {"baseline", "target"}) EXPECT_LT(tbt(two, side), tbt(one, side)) << preset << " " << side;
        const auto &m1 = one.report["baseline"]["memory"], &m2 = two.report["baseline"]["memory"];
        EXPECT_EQ(2 * m2["weights_experts_bytes"].get<uint64_t>(), m1["weights_experts_bytes"].get<uint64_t>()) << preset;
        EXPECT_GT(two.report["baseline"]["timeline"]["decode"]["devices"][0]["comm_ns"].get<double>(), 0) << preset;
        const auto& e = two.report["target"]["experts"];
        EXPECT_EQ(e["tp"], 2);
        EXPECT_NEAR(e["decode_rows_per_layer"][0].get<double>(),
                    one.report["target"]["experts"]["decode_rows_per_layer"][0].get<double>(), 1e-9);
    }
    // the latent KV is whole on every rank; Mixtral's 8 KV heads split 4 + 4
    const Result v3 = bench("--model deepseek-v3 --seq-len 64 --gen-len 4 --tp 2 --npus 2"),
                 v3_one = bench("--model deepseek-v3 --seq-len 64 --gen-len 4"),
                 mx = bench("--model mixtral-8x7b --seq-len 64 --gen-len 4 --tp 2 --npus 2"),
                 mx_one = bench("--model mixtral-8x7b --seq-len 64 --gen-len 4");
    const auto kv = [](const Result& r) { return r.report["baseline"]["memory"]["kv_cache_bytes"].get<uint64_t>(); };
    EXPECT_EQ(kv(v3), kv(v3_one));
    EXPECT_EQ(2 * kv(mx), kv(mx_one));
}

// --fuse on MoE presets: the fused attention projections launch once instead of three times, so
// Mixtral's and Qwen3-30B-A3B's decode TBT drops and DeepSeek-V3's (latent attention: nothing of
// it fuses) moves by less than 1 %; the expert memory is the same.
TEST(MoeBenchCli, FusionRunsOnMoePresets) {
    const std::string cfg = std::string(DUET_BINARY_DIR) + "/moe_bench_cli_fuse.toml";
    std::ofstream(cfg) << "[memory]\ncache_limit_mb = 8192\n";  // layer 0 pre-converted: up to 2.8 GiB
    for (const std::string model : {"mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3"}) {
        const std::string args = "--model " + model + " --seq-len 64 --gen-len 4 --config " + cfg;
        const Result plain = bench(args), fused = bench(args + " --fuse");
        ASSERT_EQ(plain.code, 0) << plain.out;
        ASSERT_EQ(fused.code, 0) << fused.out;
        const double a = plain.report["baseline"]["tbt_mean_ns"].get<double>(),
                     b = fused.report["baseline"]["tbt_mean_ns"].get<double>();
        if (model == "deepseek-v3") EXPECT_NEAR(b, a, 0.01 * a);
        else EXPECT_LT(b, a) << model;
        EXPECT_EQ(fused.report["baseline"]["memory"]["weights_experts_bytes"],
                  plain.report["baseline"]["memory"]["weights_experts_bytes"]) << model;
    }
}

TEST(MoeBenchCli, TensorRanksThatDoNotDivideTheExpertRanksAreRefused) {
    const std::pair<std::string, std::string> cases[] = {
        {"--model qwen3-30b-a3b --tp 4 --ep 2 --npus 4",
         "duet: error: --tp 4 with --ep 2: the tensor-parallel groups must tile the expert-parallel ranks (allowed: "
         "--ep 1, or --ep a multiple of 4: --ep / --tp groups of 4 ranks, each running its sequences' attention "
         "split over its ranks; or --tp 1 with --ep N)"},
        {"--model qwen3-30b-a3b --tp 2 --ep 4 --npus 2",
         "duet: error: --ep 4 (--tp 2 groups) x --pp 1 = 4 ranks but the topology has 2 NPU(s): each "
         "expert-parallel rank holds its own experts (allowed: --npus 4, or [topology] npus = 4; or fewer ranks)"},
    };
    for (const auto& [args, message] : cases) {
        const Result r = bench(args + " --seq-len 32 --gen-len 2");
        EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
        EXPECT_EQ(r.out, message + "\n") << args;
    }
}

// --tp 2 --ep 4 on four NPUs: two attention groups of two tensor-parallel ranks, experts over all
// four. A rank holds E/4 whole experts (as under --ep 4), the attention and other shared weights
// split in two (as under --tp 2 --ep 2), and the KV of its group's half of the batch over half the
// KV heads (the KV of --ep 4, a quarter of the sequences over every head, at batch 4).
TEST(MoeBenchCli, TensorParallelGroupsInsideDataParallelAttention) {
    const std::string args = "--model qwen3-30b-a3b --seq-len 64 --gen-len 4 --batch 4 ";
    const Result mixed = bench(args + "--npus 4 --pims 4 --tp 2 --ep 4"), ep = bench(args + "--npus 4 --pims 4 --ep 4"),
                 both = bench(args + "--npus 2 --pims 2 --tp 2 --ep 2");
    ASSERT_EQ(mixed.code, 0) << mixed.out;
    ASSERT_EQ(ep.code, 0) << ep.out;
    ASSERT_EQ(both.code, 0) << both.out;
    EXPECT_NE(mixed.out.find("parallel: 2 attention groups of tp 2 = ep 4 x pp 1"), std::string::npos) << mixed.out;
    EXPECT_EQ(mixed.report["parallel"]["attention"],
              "tensor parallel within data-parallel groups (ep / tp groups, each its share of the sequences; experts: "
              "E/ep whole experts per rank)");
    const nlohmann::json &m = mixed.report["baseline"]["memory"], &e = ep.report["baseline"]["memory"],
                         &b = both.report["baseline"]["memory"];
    EXPECT_EQ(m["weights_experts_bytes"], e["weights_experts_bytes"]);
    EXPECT_EQ(m["weights_shared_bytes"], b["weights_shared_bytes"]);
    EXPECT_LT(m["weights_shared_bytes"].get<double>(), e["weights_shared_bytes"].get<double>());
    EXPECT_EQ(m["kv_cache_bytes"], e["kv_cache_bytes"]);
    EXPECT_EQ(mixed.report["baseline"]["experts"]["placement"],
              "whole experts: device e holds experts [e*E/ep, (e+1)*E/ep), attention in 2 data-parallel groups of 2 "
              "tensor-parallel devices");
}

TEST(MoeBenchCli, TensorParallelAttentionWithExpertParallelExperts) {
    // Mixtral on two ranks three ways: --tp 2 (half of every expert), --ep 2 (4 whole experts and
    // every attention weight per rank, each rank its share of the sequences, all-to-alls) and
    // --tp 2 --ep 2 (4 whole experts, attention split as under --tp 2, all-reduces only)
    const std::string args = "--model mixtral-8x7b --seq-len 64 --gen-len 4 --npus 2 --pims 2";
    const Result tp = bench(args + " --tp 2"), ep = bench(args + " --ep 2"), both = bench(args + " --tp 2 --ep 2");
    ASSERT_EQ(tp.code, 0) << tp.out;
    ASSERT_EQ(ep.code, 0) << ep.out;
    ASSERT_EQ(both.code, 0) << both.out;
    EXPECT_EQ(both.report["parallel"]["tp"], 2);
    EXPECT_EQ(both.report["parallel"]["ep"], 2);
    EXPECT_EQ(both.report["parallel"]["attention"], "tensor parallel (experts: E/ep whole experts per rank)");
    EXPECT_NE(both.out.find("parallel: tp 2 = ep 2 (the same ranks) x pp 1"), std::string::npos) << both.out;
    const auto& e = both.report["target"]["experts"];
    EXPECT_EQ(e["tp"], 2);
    EXPECT_EQ(e["ep"], 2);
    EXPECT_EQ(e["experts_per_device"], 4);
    EXPECT_EQ(e["placement"], "whole experts: device e holds experts [e*E/ep, (e+1)*E/ep), tensor-parallel attention");
    for (const auto& rows : e["decode_rows_per_layer"]) EXPECT_NEAR(rows.get<double>(), 1.0, 1e-9);  // 1 token x k 2 / 2
    // a rank holds half the experts' bytes (as both others do), the attention weights and KV of --tp 2
    const auto mem = [](const Result& r, const char* key) { return r.report["baseline"]["memory"][key].get<uint64_t>(); };
    for (const char* key : {"weights_experts_bytes", "weights_shared_bytes", "kv_cache_bytes"})
        EXPECT_EQ(mem(both, key), mem(tp, key)) << key;
    EXPECT_EQ(mem(both, "weights_experts_bytes"), mem(ep, "weights_experts_bytes"));
    EXPECT_LT(mem(both, "weights_shared_bytes"), mem(ep, "weights_shared_bytes"));
    // the collectives of --tp 2: an all-reduce after the attention and one after each MoE combine
    const auto comm = [](const Result& r) {
        return r.report["baseline"]["timeline"]["decode"]["devices"][0]["comm_ns"].get<double>();
    };
    EXPECT_NEAR(comm(both), comm(tp), 1e-6 * comm(tp));
    // a decode token reads as many expert bytes per rank as under --tp 2 (uniform routing), and half
    // the attention weights --ep 2 reads
    EXPECT_NEAR(tbt(both, "baseline"), tbt(tp, "baseline"), 0.02 * tbt(tp, "baseline"));
    EXPECT_LT(tbt(both, "baseline"), tbt(ep, "baseline"));
}

TEST(MoeBenchCli, ServingWithTensorParallelExperts) {
    // Qwen3-30B-A3B serves on one NPU and on two ranks: the ranks hold half of every expert each,
    // so the two devices leave room for more KV blocks, and a step's matmuls read half the bytes
    const std::string args = "--workload serving --model qwen3-30b-a3b --seq-len 64 --gen-len 8 --requests 4 --rate inf";
    const Result one = bench(args), two = bench(args + " --tp 2 --npus 2 --pims 2");
    ASSERT_EQ(one.code, 0) << one.out;
    ASSERT_EQ(two.code, 0) << two.out;
    EXPECT_EQ(two.report["workload"]["tp"], 2);
    for (const char* side : {"baseline", "target"}) {
        const auto &a = one.report["serving"][side], &b = two.report["serving"][side];
        EXPECT_EQ(b["completed"], 4) << side;
        EXPECT_EQ(b["kv_cache"]["block_bytes"], a["kv_cache"]["block_bytes"]) << side;  // 4 KV heads: 2 per rank
        EXPECT_GT(b["kv_cache"]["blocks"].get<int64_t>(), 2 * a["kv_cache"]["blocks"].get<int64_t>()) << side;
        for (const char* t : {"ttft_ms", "tpot_ms"})
            EXPECT_LT(b[t]["mean"].get<double>(), a[t]["mean"].get<double>()) << side << " " << t;
        EXPECT_EQ(b["experts"]["expert_rows"], a["experts"]["expert_rows"]) << side;  // the same routed rows
    }
}

TEST(MoeBenchCli, PipelineStagesSplitTheExperts) {
    // 61 layers over 4 stages: stage 0 (whose memory the report shows) holds layers 0-14 of which
    // 3 dense, so about 12/58 of the routed experts.
    const Result one = bench("--model deepseek-v3 --seq-len 64 --gen-len 4");
    const Result four = bench("--model deepseek-v3 --seq-len 64 --gen-len 4 --pp 4 --npus 4 --pims 4");
    ASSERT_EQ(one.code, 0) << one.out;
    ASSERT_EQ(four.code, 0) << four.out;
    const double e1 = one.report["baseline"]["memory"]["weights_experts_bytes"].get<double>();
    const double e4 = four.report["baseline"]["memory"]["weights_experts_bytes"].get<double>();
    EXPECT_NEAR(e4 / e1, 12.0 / 58.0, 1e-9);
}

TEST(MoeBenchCli, ExpertParallelSplitsTheExpertsAndAddsAllToAlls) {
    const Result one = bench("--model qwen3-30b-a3b --seq-len 64 --gen-len 4");
    const Result four = bench("--model qwen3-30b-a3b --seq-len 64 --gen-len 4 --ep 4 --npus 4 --pims 4");
    ASSERT_EQ(one.code, 0) << one.out;
    ASSERT_EQ(four.code, 0) << four.out;
    EXPECT_NE(four.out.find("parallel: tp 1 x pp 1 x ep 4"), std::string::npos) << four.out;
    EXPECT_NE(four.out.find("experts: routing uniform"), std::string::npos) << four.out;
    const auto& m1 = one.report["baseline"]["memory"];
    const auto& m4 = four.report["baseline"]["memory"];
    // a device holds 32 of the 128 experts of every layer and all the shared weights
    EXPECT_EQ(4 * m4["weights_experts_bytes"].get<uint64_t>(), m1["weights_experts_bytes"].get<uint64_t>());
    EXPECT_EQ(m4["weights_shared_bytes"].get<uint64_t>(), m1["weights_shared_bytes"].get<uint64_t>());
    EXPECT_EQ(four.report["parallel"]["ep"], 4);
    const auto& e = four.report["target"]["experts"];
    EXPECT_EQ(e["ep"], 4);
    EXPECT_EQ(e["experts_per_device"], 32);
    EXPECT_EQ(e["decode_rows_per_layer"].size(), 4u);
    EXPECT_NEAR(e["decode_rows_per_layer"][0].get<double>(), 8.0 / 4, 1e-9);  // 1 token x k 8 / 4 devices
    EXPECT_GT(e["decode_experts_on_pim_per_layer"][0].get<double>(), 0);
    // two all-to-alls per MoE layer on every NPU, none without expert parallelism
    EXPECT_GT(four.report["baseline"]["timeline"]["decode"]["devices"][0]["comm_ns"].get<double>(), 0) << four.out;
}

TEST(MoeBenchCli, SkewMakesTheFirstRankTheBusiest) {
    const Result r = bench("--model mixtral-8x7b --seq-len 64 --gen-len 4 --batch 8 --ep 2 --npus 2 --pims 2 "
                           "--expert-skew 1");
    ASSERT_EQ(r.code, 0) << r.out;
    const auto& e = r.report["target"]["experts"];
    EXPECT_EQ(e["routing"], "zipf s = 1");
    EXPECT_EQ(e["busiest_device"], 0);
    EXPECT_GT(e["decode_rows_per_layer"][0].get<double>(), e["decode_rows_per_layer"][1].get<double>());
    const std::string stats = std::string(DUET_BINARY_DIR) + "/moe_bench_cli_stats.json";
    std::ofstream(stats) << "{\"layers\": [\n{\"layer\": 0, \"fractions\": [0, 0, 0, 0, 0.25, 0.25, 0.25, 0.25]}\n]}\n";
    const Result s = bench("--model mixtral-8x7b --seq-len 64 --gen-len 4 --batch 8 --ep 2 --npus 2 --pims 2 "
                           "--routing-stats " + stats);
    ASSERT_EQ(s.code, 0) << s.out;
    EXPECT_EQ(s.report["target"]["experts"]["busiest_device"], 1);
}

TEST(MoeBenchCli, ExpertFlagErrorsExitTwo) {
    const std::string stats = std::string(DUET_BINARY_DIR) + "/moe_bench_cli_bad_stats.json";
    std::ofstream(stats) << "{\"layers\": [\n{\"layer\": 0, \"fractions\": [0.5, 0.5]}\n]}\n";
    const std::pair<std::string, std::string> cases[] = {
        {"--model mixtral-8x7b --ep 3 --npus 4",
         "duet: error: --ep = 3 does not divide the 8 routed experts of 'mixtral-8x7b' (allowed: a divisor of 8)"},
        {"--model llama2-7b --ep 2 --npus 2",
         "duet: error: --ep = 2: 'llama2-7b' has no routed experts, expert parallelism needs a Mixture-of-Experts model "
         "(allowed: --ep 1)"},
        {"--model deepseek-v3 --ep 8",
         "duet: error: --ep 8 x --tp 1 x --pp 1 = 8 ranks but the topology has 1 NPU(s): each expert-parallel rank "
         "holds its own experts (allowed: --npus 8, or [topology] npus = 8; or fewer ranks)"},
        {"--model mixtral-8x7b --expert-skew 1 --routing-stats " + stats,
         "duet: error: --expert-skew and --routing-stats are both set (allowed: one of them)"},
        {"--model llama2-7b --expert-skew 1",
         "duet: error: --expert-skew: 'llama2-7b' has no routed experts (allowed: a Mixture-of-Experts model)"},
        {"--model mixtral-8x7b --routing-stats " + stats,
         "duet: error: " + stats + ": line 2: layers[0].fractions has 2 values but 'mixtral-8x7b' has 8 routed experts "
         "(allowed: 8 values)"},
    };
    for (const auto& [args, message] : cases) {
        const Result r = bench(args + " --seq-len 32 --gen-len 2");
        EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
        EXPECT_EQ(r.out, message + "\n") << args;
    }
}
