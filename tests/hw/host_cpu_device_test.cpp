// The host CPU roofline (hw/cpu/host_cpu_device.h) against hand-computed figures from the
// xeon_8380 preset's published numbers, and its preset errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "core/error.h"
#include "hw/cpu/host_cpu_device.h"

using namespace duet::hw;
using namespace duet::hw::cpu;

TEST(HostCpu, PresetHoldsTheCitedFigures) {
    const HostCpuSpec s = load_host_cpu_preset("xeon_8380");
    EXPECT_DOUBLE_EQ(s.memory_bandwidth_gbps, 8 * 25.6);     // 8 channels of DDR4-3200
    EXPECT_DOUBLE_EQ(s.peak_gflops, 40 * 2.30 * 64);         // 40 cores x 2.3 GHz x 64 fp32 flop/cycle
    EXPECT_DOUBLE_EQ(s.op_overhead_ns, 5000);
    EXPECT_DOUBLE_EQ(s.sampling_ns, 150000);  // CENT cent_simulation/utils.py InOut_latency 0.15 ms
}

// The sampling operator pays the preset's sampling_ns once per token it chooses (m sequences),
// on top of its roofline; other operators do not.
TEST(HostCpu, SamplingPaysSamplingNsPerToken) {
    const HostCpuDevice cpu(load_host_cpu_preset("xeon_8380"));
    OpShape sample;  // one token from 32000 logits: f16 logits in, one id out
    sample.elem = ElemOp::SAMPLE;
    sample.m = 1, sample.n = 32000;
    sample.in_bytes = 64000, sample.out_bytes = 2;
    sample.flops = 32000;
    const double roofline = 5000 + 64002 / 204.8;
    EXPECT_DOUBLE_EQ(cpu.estimate(sample).t_ns, roofline + 150000);
    sample.m = 4;  // four sequences, four tokens
    EXPECT_DOUBLE_EQ(cpu.estimate(sample).t_ns, roofline + 4 * 150000);
    OpShape other = sample;
    other.elem = ElemOp::NONE;
    EXPECT_DOUBLE_EQ(cpu.estimate(other).t_ns, roofline);
}

TEST(HostCpu, RooflineTakesTheSlowerOfMemoryAndCompute) {
    const HostCpuDevice cpu(load_host_cpu_preset("xeon_8380"));
    OpShape norm;  // 4096 f16 values in, 4096 out, a few flops each: memory bound
    norm.in_bytes = 8192;
    norm.out_bytes = 8192;
    norm.flops = 4 * 4096;
    ASSERT_TRUE(cpu.supports(norm));
    const Cost n = cpu.estimate(norm);
    EXPECT_DOUBLE_EQ(n.t_ns, 5000 + 16384 / 204.8);
    EXPECT_DOUBLE_EQ(n.bytes_moved, 16384);
    EXPECT_STREQ(n.bound, "memory");
    OpShape gemm;  // 2048 x 4096 x 4096: compute bound
    gemm.cls = OpClass::GEMM;
    gemm.m = 2048, gemm.n = 4096, gemm.k = 4096;
    gemm.weight_bytes = 4096ull * 4096 * 2;
    gemm.in_bytes = gemm.out_bytes = 2048ull * 4096 * 2;
    gemm.flops = 2.0 * 2048 * 4096 * 4096;
    const Cost g = cpu.estimate(gemm);
    EXPECT_DOUBLE_EQ(g.t_ns, 5000 + gemm.flops / 5888);
    EXPECT_STREQ(g.bound, "compute");
    EXPECT_DOUBLE_EQ(g.t_launch_ns, 5000);
    EXPECT_FALSE(cpu.supports(OpShape{}));  // nothing to do
}

TEST(HostCpu, BadPresetNamesTheKey) {
    const std::string dir = std::string(DUET_BINARY_DIR) + "/host_cpu_cfg";
    std::system(("mkdir -p " + dir + "/hw").c_str());
    {
        std::ofstream f(dir + "/hw/host_cpu.toml");
        f << "[slow]\nmemory_bandwidth_gbps = 0\npeak_gflops = 10\nop_overhead_ns = 0\npj_per_byte = 0\n";
    }
    try {
        load_host_cpu_preset("slow", dir);
        FAIL();
    } catch (const duet::Error& e) {
        EXPECT_NE(std::string(e.what()).find("slow.memory_bandwidth_gbps"), std::string::npos) << e.what();
    }
    EXPECT_THROW(load_host_cpu_preset("nope"), duet::Error);
    {
        std::ofstream f(dir + "/hw/host_cpu.toml");
        f << "[slow]\nmemory_bandwidth_gbps = 1\npeak_gflops = 10\nop_overhead_ns = 0\npj_per_byte = 0\n"
             "sampling_ns = -1\n";
    }
    try {
        load_host_cpu_preset("slow", dir);
        FAIL();
    } catch (const duet::Error& e) {
        EXPECT_EQ(std::string(e.what()),
                  dir + "/hw/host_cpu.toml: key 'slow.sampling_ns' = -1 is out of range (allowed: 0 to 1000000000)");
    }
}
