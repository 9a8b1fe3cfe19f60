// The host twin's CLI: `duet calibrate --host-profile FILE` profiles the real engine on a generated model and
// writes a profile that loads back; `duet bench --workload serving --host-profile` times every
// step with it (a profile whose operators cost nothing leaves exactly the step's host work:
// step.ns + ns_per_seq x sequences, hand-computed below); bad combinations exit 2 with the
// exact message. The accuracy against the real server is a bench (bench/server/host_twin.sh).
#include <gtest/gtest.h>

#include "run_command.h"
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "hw/cpu/host_profile.h"

namespace {

struct Result {
    int code = -1;
    std::string out;
};

Result sh(const std::string& args) {
    const std::string cmd = std::string(DUET_BINARY_DIR) + "/duet --log-level off " + args + " 2>&1";
    Result r;
    const duet::test::CommandResult c = duet::test::run_command(cmd);
    r.code = c.code;
    r.out = c.out;
    return r;
}

std::string dir() { return std::string(DUET_BINARY_DIR) + "/host_twin_cli_"; }

const std::string& tiny_model() {
    static const std::string path = [] {
        const std::string p = dir() + "tiny.gguf";
        const Result r = sh("gen-model --arch tiny-llama --dtype f32 --seed 3 -o " + p);
        EXPECT_EQ(r.code, 0) << r.out;
        return p;
    }();
    return path;
}

// Operators free, the step's host work 1 ms + 0.5 ms per sequence.
std::string step_only_profile() {
    const std::string path = dir() + "step_only.toml";
    std::ofstream(path) << "[host]\ncpu = \"test\"\nthreads = 1\nmodel = \"tiny\"\nmeasured = \"now\"\n"
                           "kv_block_tokens = 16\nmemory_gib = 1\n"
                           "[matmul.f32]\nm1 = 0\n"
                           "[attention]\nns = 0\nns_per_kv_byte = 0\nns_per_flop = 0\n"
                           "[elementwise]\nns = 0\nns_per_byte = 0\n[copy]\nns = 0\nns_per_byte = 0\n"
                           "[step]\nns = 1000000\nns_per_seq = 500000\n";
    return path;
}

nlohmann::json serve_report(const std::string& args) {
    const std::string report = dir() + "report.json";
    std::remove(report.c_str());
    const Result r = sh("bench --workload serving --host-profile " + step_only_profile() + " -m " + tiny_model() +
                        " --seq-len 8 --gen-len 5 --kv-blocks 64 --ctx 64 --no-verdict-exit --report " + report + " " +
                        args);
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("machine: host CPU (test, 1 threads) from host profile"), std::string::npos) << r.out;
    std::ifstream in(report);
    return in ? nlohmann::json::parse(in) : nlohmann::json();
}

}  // namespace

TEST(HostTwinCli, CalibrateHostWritesAProfileOfTheEnginesOperators) {
    const std::string out = dir() + "probe.toml", samples = dir() + "probe.csv";
    const Result r = sh("calibrate --host-profile " + out + " -m " + tiny_model() + " --samples " + samples +
                        " --max-batch 2 --threads 1");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("2 request(s) of 32 prompt + 24 output tokens"), std::string::npos) << r.out;
    const duet::hw::cpu::HostProfile p = duet::hw::cpu::load_host_profile(out);
    EXPECT_EQ(p.threads, 1);
    EXPECT_EQ(p.model, "host_twin_cli_tiny.gguf");
    ASSERT_EQ(p.matmul.count(duet::DType::F32), 1u);
    const auto& rates = p.matmul.at(duet::DType::F32);
    ASSERT_TRUE(rates.count(1) && rates.count(2)) << "decode batches of 1 and 2 were probed";
    EXPECT_GT(rates.at(1), 0);
    std::ifstream csv(samples);
    std::string header, line;
    std::getline(csv, header);
    EXPECT_EQ(header, "kind,class,m,n,k,weight_dtype,weight_bytes,in_bytes,out_bytes,flops,ns");
    int matmuls = 0, attentions = 0;
    while (std::getline(csv, line)) {
        matmuls += line.rfind("matmul,", 0) == 0;
        attentions += line.rfind("attention,", 0) == 0;
    }
    EXPECT_GT(matmuls, 100);
    EXPECT_GT(attentions, 10);
}

TEST(HostTwinCli, StepsCostTheProfilesHostWorkPerSequence) {
    const nlohmann::json one = serve_report("--requests 1 --rate inf");
    const nlohmann::json& a = one["serving"]["baseline"];
    EXPECT_NEAR(a["ttft_ms"]["p50"].get<double>(), 1.5, 1e-9);  // one step of one sequence
    EXPECT_NEAR(a["tpot_ms"]["p50"].get<double>(), 1.5, 1e-9);
    EXPECT_EQ(one["serving"]["target"]["policy"], "npu_only");  // the host alone on both sides
    const nlohmann::json two = serve_report("--requests 2 --rate inf");
    const nlohmann::json& b = two["serving"]["baseline"];
    EXPECT_NEAR(b["ttft_ms"]["p50"].get<double>(), 2.0, 1e-9);  // both prompts in one step of two sequences
    EXPECT_NEAR(b["tpot_ms"]["p50"].get<double>(), 2.0, 1e-9);
}

TEST(HostTwinCli, BadCombinationsExitTwo) {
    Result r;
    for (const char* split : {" --tp 2", " --pp 2"}) {
        r = sh("bench --workload serving --host-profile " + step_only_profile() + " -m " + tiny_model() + split +
               " --ctx 64");
        EXPECT_EQ(r.code, 2) << split;
        EXPECT_NE(r.out.find("duet: error: --host-profile models one host CPU (allowed: without --tp, --pp, --ep, "
                             "--dp and --disaggregate)"), std::string::npos) << r.out;
    }
    r = sh("calibrate -m x.gguf");
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("duet: error: -m and --samples belong to --host-profile (allowed: duet calibrate "
                         "--host-profile FILE -m MODEL)"), std::string::npos) << r.out;
    r = sh("calibrate --host-profile x.toml");
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("duet: error: --host-profile needs the model to profile (allowed: -m FILE, a GGUF file)"),
              std::string::npos) << r.out;
}
