// `duet calibrate` end to end: the real binary prints every point with its source and status.
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

TEST(CalibrateCli, PrintsEveryPointWithItsSource) {
    if (!have_binary()) GTEST_SKIP() << "duet binary not built";
    const CliRun r = run("calibrate");
    EXPECT_EQ(r.code, 0) << r.out;
    for (const char* line : {"GeniePIM int8 GEMV 6144x2048 N=1 speedup", "source: AMDResearch/AMDGeniePIM README.md",
                             "HBM2-PIM fp16 GEMV 4096x4096 speedup over streaming", "missing", "PASS",
                             "AttAcc HBM3 bank PIM attention L=128 heads=2050 d=128 (power limit)",
                             "source: scale-snu/attacc_simulator ramulator.out (row 128,2050,128,2,BA,True",
                             "source: Morteza1814/CENT cent_simulation/simulation_results_reference.csv"})
        EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
}

TEST(CalibrateCli, NotesExplainTheSetUps) {
    if (!have_binary()) GTEST_SKIP() << "duet binary not built";
    const CliRun r = run("calibrate --notes");
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("note:   GeniePIM's host reads at 128 GB/s peak"), std::string::npos) << r.out;
}
