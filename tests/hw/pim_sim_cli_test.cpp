// `duet pim-sim mem|gemv` end to end: the real binary, its output lines and exit codes.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>
#include <sys/wait.h>

namespace {

struct CliRun {
    int code = -1;
    std::string out;
};

CliRun run(const std::string& args) {
    const std::string bin = std::string(DUET_BINARY_DIR) + "/duet";
    CliRun r;
    FILE* p = popen((bin + " " + args + " 2>&1").c_str(), "r");
    std::array<char, 4096> buf{};
    while (p && fgets(buf.data(), int(buf.size()), p)) r.out += buf.data();
    const int st = p ? pclose(p) : -1;
    r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

bool have_binary() { return std::filesystem::exists(std::string(DUET_BINARY_DIR) + "/duet"); }

}  // namespace

TEST(PimSimCli, MemPrintsBandwidthLatencyAndRowHits) {
    if (!have_binary()) GTEST_SKIP() << "duet binary not built";
    const CliRun r = run("pim-sim mem --memory lpddr5 --pattern stream --bytes 262144 --fidelity analytical");
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("bandwidth     "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("of 51.20 GB/s peak"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("row hit rate  0.98"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("bytes         requested 262144, served 262144"), std::string::npos) << r.out;
}

TEST(PimSimCli, GemvPrintsCountsUtilisationSpeedupAndFunctionalError) {
    if (!have_binary()) GTEST_SKIP() << "duet binary not built";
    const CliRun r = run("pim-sim gemv --pim pim_lpddr5x_bank --m 256 --k 512 --dtype i8 --alignment 256 --functional");
    EXPECT_EQ(r.code, 0) << r.out;
    for (const char* line : {"commands      ACT_AB ", "MAC_AB ", "mode switches 32", "utilisation   units ",
                             "lanes 100.0 % (256-bit columns", "PIM speedup ", "error vs f64  max 0, mean 0"})
        EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
}

TEST(PimSimCli, BatchAndRequestBytes) {
    if (!have_binary()) GTEST_SKIP() << "duet binary not built";
    CliRun r = run("pim-sim gemv --pim pim_lpddr5x_bank --m 2048 --k 2048 --dtype i8 --batch 2 --fidelity analytical");
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("batch 2, fidelity analytical"), std::string::npos) << r.out;
    r = run("pim-sim mem --memory hbm3 --pattern random --bytes 65536 --fidelity analytical");
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("1024 requests of 64 B (2 bursts of 32 B)"), std::string::npos) << r.out;
    r = run("pim-sim gemv --pim pim_hbm3_bank --batch 0");
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "duet: error: --batch: 0 is out of range (allowed: 1 to 64)\n");
}

// Q8_0 as int8 with its block scales: the scale columns are printed and cost time.
TEST(PimSimCli, ScaleBlockLoadsScales) {
    if (!have_binary()) GTEST_SKIP() << "duet binary not built";
    CliRun r = run("pim-sim gemv --pim pim_lpddr5x_bank --m 4096 --k 4096 --dtype i8 --scale-block 32");
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("block scales  one f16 per 32 elements: 8 column loads per 4096-element task"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("MAC_AB 34816 "), std::string::npos) << r.out;  // 4096 x (128 + 8) / 16 units
    r = run("pim-sim gemv --pim pim_lpddr5x_bank --m 64 --k 64 --dtype i8 --scale-block 24");
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "duet: error: --scale-block 24 is not allowed (allowed: 0 for none, or a power of two from 8 to 4096, "
                     "e.g. 32)\n");
}

TEST(PimSimCli, BadInputExitsTwoWithOneLine) {
    if (!have_binary()) GTEST_SKIP() << "duet binary not built";
    CliRun r = run("pim-sim gemv --pim pim_nope");
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out,
              "duet: error: unknown PIM preset 'pim_nope' (known: pim_hbm2_fimdram, pim_gddr6_aim, pim_lpddr5x_bank, "
              "pim_hbm3_bank, pim_cxl_aim)\n");
    r = run("pim-sim mem --memory lpddr5 --pattern zigzag");
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "duet: error: --pattern 'zigzag' is not known (allowed: stream, random, strided)\n");
}
