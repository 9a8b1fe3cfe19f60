// The host profile (hw/cpu/host_profile.h) and the device that prices operators with it
// (hw/cpu/host_engine_device.h): the file round-trips, every bad value names its file and key,
// the matmul rate interpolates as documented, and each operator class costs what the header says.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "../error_message.h"
#include "hw/cpu/host_engine_device.h"
#include "hw/cpu/host_profile.h"

using namespace duet;
using namespace duet::hw;
using namespace duet::hw::cpu;

namespace {

HostProfile sample_profile() {
    HostProfile p;
    p.cpu = "Test CPU \"quoted\"";
    p.model = "m.gguf";
    p.measured = "2026-12-07T00:00:00Z";
    p.threads = 2;
    p.kv_block_tokens = 16;
    p.memory_gib = 23.5;
    p.matmul[DType::Q8_0] = {{1, 0.03}, {8, 0.15}, {64, 0.8}};
    p.matmul[DType::F16] = {{1, 0.06}};
    p.attention_ns = 10000, p.attention_ns_per_kv_byte = 0.125, p.attention_ns_per_flop = 0.011;
    p.elementwise = {300, 0.045};
    p.copy = {1400, 1.25};
    p.step_ns = 80000, p.step_ns_per_seq = 41000;
    return p;
}

std::string write(const std::string& name, const std::string& text) {
    const std::string path = ::testing::TempDir() + name;
    std::ofstream(path) << text;
    return path;
}

}  // namespace

TEST(HostProfile, RoundTripsThroughItsFile) {
    const HostProfile p = sample_profile();
    const HostProfile q = load_host_profile(write("host_rt.toml", host_profile_toml(p)));
    EXPECT_EQ(q.cpu, p.cpu);
    EXPECT_EQ(q.model, p.model);
    EXPECT_EQ(q.measured, p.measured);
    EXPECT_EQ(q.threads, 2);
    EXPECT_EQ(q.kv_block_tokens, 16);
    EXPECT_DOUBLE_EQ(q.memory_gib, 23.5);
    EXPECT_EQ(q.matmul, p.matmul);
    EXPECT_DOUBLE_EQ(q.attention_ns, 10000);
    EXPECT_DOUBLE_EQ(q.attention_ns_per_kv_byte, 0.125);
    EXPECT_DOUBLE_EQ(q.attention_ns_per_flop, 0.011);
    EXPECT_DOUBLE_EQ(q.elementwise.ns_per_byte, 0.045);
    EXPECT_DOUBLE_EQ(q.copy.ns, 1400);
    EXPECT_DOUBLE_EQ(q.step_ns_per_seq, 41000);
}

TEST(HostProfile, BadValuesNameTheFileAndKey) {
    const std::string good = host_profile_toml(sample_profile());
    auto load_with = [&](const std::string& from, const std::string& to) {
        std::string t = good;
        const size_t at = t.find(from);
        EXPECT_NE(at, std::string::npos) << from;
        t.replace(at, from.size(), to);
        const std::string path = write("host_bad.toml", t);
        return std::make_pair(path, test::error_of([&] { load_host_profile(path); }));
    };
    auto [p1, e1] = load_with("[matmul.f16]", "[matmul.f17]");
    EXPECT_EQ(e1, p1 + ": section [matmul.f17] is not a matmul weight dtype (allowed: " + matmul_weight_dtype_names() + ")");
    auto [p2, e2] = load_with("m1 = 0.06", "x1 = 0.06");
    EXPECT_EQ(e2, p2 + ": key 'matmul.f16.x1' is not allowed (allowed: m<rows>, e.g. m1, m16, with rows >= 1)");
    auto [p3, e3] = load_with("ns_per_seq = 41000", "");
    EXPECT_NE(e3.find(p3), std::string::npos) << e3;
    EXPECT_NE(e3.find("step.ns_per_seq"), std::string::npos) << e3;
}

TEST(HostProfile, MatmulRateInterpolatesInRowsAndGrowsPastTheLargest) {
    const HostProfile p = sample_profile();
    EXPECT_DOUBLE_EQ(matmul_ns_per_weight_byte(p, DType::Q8_0, 1), 0.03);
    EXPECT_DOUBLE_EQ(matmul_ns_per_weight_byte(p, DType::Q8_0, 8), 0.15);
    EXPECT_DOUBLE_EQ(matmul_ns_per_weight_byte(p, DType::Q8_0, 4), 0.03 + (3.0 / 7.0) * (0.15 - 0.03));
    EXPECT_DOUBLE_EQ(matmul_ns_per_weight_byte(p, DType::Q8_0, 36), 0.15 + 0.5 * (0.8 - 0.15));
    EXPECT_DOUBLE_EQ(matmul_ns_per_weight_byte(p, DType::Q8_0, 256), 0.8 * 4);  // compute bound: x rows
    EXPECT_DOUBLE_EQ(matmul_ns_per_weight_byte(p, DType::F16, 100), 0.06 * 100);
    EXPECT_EQ(test::error_of([&] { matmul_ns_per_weight_byte(p, DType::Q4_0, 1); }),
              "host profile (in memory): no matmul rates for weight dtype q4_0 (measured: f16, q8_0; run `duet "
              "calibrate --host-profile FILE` on a model of that dtype)");
}

TEST(HostEngineDevice, PricesEachClassAsTheProfileSays) {
    const HostEngineDevice dev(sample_profile());
    OpShape mm;
    mm.cls = OpClass::GEMM;
    mm.m = 8;
    mm.weight_dtype = DType::Q8_0;
    mm.weight_bytes = 1000000;
    EXPECT_DOUBLE_EQ(dev.estimate(mm).t_ns, 1000000 * 0.15);
    OpShape att;
    att.cls = OpClass::ATTENTION;
    att.weight_bytes = 4096;  // KV read
    att.flops = 1e6;
    EXPECT_DOUBLE_EQ(dev.estimate(att).t_ns, 10000 + 0.125 * 4096 + 0.011 * 1e6);
    OpShape norm;  // f16 activations in the op shape: the engine's f32 rows are twice the bytes
    norm.act_dtype = DType::F16;
    norm.in_bytes = norm.out_bytes = 2048;
    norm.weight_bytes = 4096;
    EXPECT_DOUBLE_EQ(dev.estimate(norm).t_ns, 300 + 0.045 * (4096 + 2.0 * 4096));
    OpShape kv;
    kv.cls = OpClass::COPY;
    kv.act_dtype = DType::F32;
    kv.in_bytes = 1024;
    kv.out_bytes = 512;
    EXPECT_DOUBLE_EQ(dev.estimate(kv).t_ns, 1400 + 1.25 * 1536);
}
