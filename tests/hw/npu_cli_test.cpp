// `duet pim-sim npu` end to end: the real binary, its output and its errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/wait.h>

namespace {

struct CliRun {
    int code = -1;
    std::string out;
};

CliRun run(const std::string& args) {
    const std::string cmd = std::string(DUET_BINARY_DIR) + "/duet pim-sim npu " + args + " 2>&1";
    CliRun r;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return r;
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
    const int status = pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

bool have_binary() { return std::filesystem::exists(std::string(DUET_BINARY_DIR) + "/duet"); }

}  // namespace

TEST(NpuCli, GemvReportsMemoryBound) {
    if (!have_binary()) GTEST_SKIP() << "build the duet target first";
    const CliRun r = run("--soc Ascend910B2 --op gemv --n 4096 --k 4096 --npu-dispatch graph");
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("Ascend910B2, gemv m=1 n=4096 k=4096 f16, dispatch graph"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("  bound             memory\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("fractal padding 6.25 %"), std::string::npos) << r.out;
}

TEST(NpuCli, AliasAndErrors) {
    if (!have_binary()) GTEST_SKIP() << "build the duet target first";
    EXPECT_NE(run("--soc Ascend910B --n 64 --k 64 --m 64").out.find("Ascend910B2, gemm"), std::string::npos);
    CliRun r = run("--soc Ascend910 --n 64 --k 64");
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out,
              "duet: error: unknown soc_version 'Ascend910' (known: Ascend310B4, Ascend310P3, Ascend910B (alias of "
              "Ascend910B2), Ascend910B1, Ascend910B2, Ascend910B3, Ascend910B4)\n");
    r = run("--op gemv --m 4 --n 64 --k 64");
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "duet: error: --m = 4 is not allowed with --op gemv (allowed: 1; use --op gemm for more rows)\n");
    r = run("--soc Ascend310P3 --dtype bf16 --m 16 --n 64 --k 64");
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "duet: error: Ascend310P3: bf16 is not supported by this SoC (allowed: f16, i8)\n");
    r = run("--npu-dispatch fast --n 64 --k 64 --m 1");
    EXPECT_EQ(r.out, "duet: error: --npu-dispatch = 'fast' is not allowed (allowed: eager, queue0, queue1, queue2, graph)\n");
}

// `duet bench` and `duet pim-sim npu` model the same NPU (one construction path, default peak).
TEST(NpuCli, MemoryEfficiencyDefaultIsBenchsPeak) {
    if (!have_binary()) GTEST_SKIP() << "build the duet target first";
    const std::string op = "--soc Ascend910B2 --op gemv --n 4096 --k 4096";
    const CliRun peak = run(op), dram = run(op + " --memory-efficiency dram");
    EXPECT_NE(peak.out.find("x efficiency 1.000 (published peak, as duet bench)"), std::string::npos) << peak.out;
    EXPECT_NE(dram.out.find("(DRAM model, sequential stream)"), std::string::npos) << dram.out;
    const CliRun bad = run(op + " --memory-efficiency 1.5");
    EXPECT_EQ(bad.code, 2);
    EXPECT_EQ(bad.out, "duet: error: --memory-efficiency = '1.5' is not allowed (allowed: peak, dram, or a number greater "
                       "than 0 and at most 1)\n");
}

// A bad [serving_step] value in an NPU preset stops `duet bench` with exit 2 and one line naming
// the file, the key, the value and the allowed range.
TEST(NpuCli, BadServingStepKeyExitsWith2) {
    if (!have_binary()) GTEST_SKIP() << "build the duet target first";
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / "duet_npu_cli_step_test";
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::copy(std::string(DUET_SOURCE_DIR) + "/configs/hw", dir / "hw", fs::copy_options::recursive);
    const fs::path preset = dir / "hw" / "ascend910b2.toml";
    std::string text;
    {
        std::ifstream in(preset);
        text.assign(std::istreambuf_iterator<char>(in), {});
    }
    const std::string key = "eager_step_us = 10630";
    ASSERT_NE(text.find(key), std::string::npos);
    text.replace(text.find(key), key.size(), "eager_step_us = -1   ");
    std::ofstream(preset) << text;
    const std::string cmd = "DUET_CONFIG_DIR=" + dir.string() + " " + std::string(DUET_BINARY_DIR) +
                            "/duet bench --model llama2-7b --seq-len 64 --gen-len 4 --baseline npu_only --target "
                            "npu_only 2>&1";
    CliRun r;
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
    const int status = pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_EQ(r.out, "duet: error: " + preset.string() +
                         ": key 'serving_step.eager_step_us' = -1 is out of range (allowed: 0 to 1000000)\n");
    fs::remove_all(dir);
}
