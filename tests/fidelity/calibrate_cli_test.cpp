// `duet calibrate` end to end: the real binary prints every point with its source and status; and
// the bench labels its energy figures (issue 9 item 5).
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
                             "source: Morteza1814/CENT cent_simulation/simulation_results_reference.csv",
                             "source: derived from CMU-SAFARI/ramulator2 python/ramulator/dram/hbm3.py",
                             "source: Shuhai, Wang et al., FCCM 2020", "source: AMD white paper WP570",
                             "Ascend 910B4 Qwen2-7B TTFT (prefill of 1024 tokens), batch 1, graph",
                             "source: Ascend/torchair npu_tuned_model/llm/qwen/README.md", "FAIL"})
        EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
}

// Points are grouped by device; each group ends with its pass count and residual spread, and the
// harness's reference runs name their repository, commit and table.
TEST(CalibrateCli, GroupsByDeviceWithResidualSpread) {
    if (!have_binary()) GTEST_SKIP() << "duet binary not built";
    const CliRun r = run("calibrate");
    EXPECT_EQ(r.code, 0) << r.out;
    for (const char* line :
         {"[HBM2-PIM (pim_hbm2_fimdram)]\n", "[DRAM hbm3]\n", "[Ascend NPU (whole model, duet bench)]\n",
          "  == HBM2-PIM (pim_hbm2_fimdram): ", "  == DRAM hbm3: 2 PASS, 1 FAIL, 0 missing; residuals -9.4 to -9.4 % (mean |e| 9.4 %, 1 pts); residuals -15.1 to -0.9 pt (mean |e| 8.0 pt, 2 pts)\n",
          "HBM2-PIM fp16 GEMV 8192x8192 B=1 PIM time (PIMSimulator run)",
          "source: SAITPublic/PIMSimulator @b464dde (tools/references/pimsimulator.sh <checkout>, run ",
          "hbm3 random share of peak (64 B requests, Ramulator 2.1 run)",
          "source: CMU-SAFARI/ramulator2 @c5b1c3a (tools/references/ramulator2.sh <checkout>, run "})
        EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
    // every group comes before the total line, which counts all points
    EXPECT_NE(r.out.find(" points: "), std::string::npos);
    EXPECT_LT(r.out.rfind("  == "), r.out.find(" points: "));
}

TEST(CalibrateCli, NotesExplainTheSetUps) {
    if (!have_binary()) GTEST_SKIP() << "duet binary not built";
    const CliRun r = run("calibrate --notes");
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("note:   GeniePIM's host reads at 128 GB/s peak"), std::string::npos) << r.out;
}

// Issue 9 item 5: the bench says what each energy figure is, in the table and in the JSON's
// energy_basis (docs/report-schema.md): per DRAM command where the PIM's memory has a sourced
// [energy] (pim_hbm2_fimdram on hbm2), "not modelled" where it has none (pim_lpddr5x_bank).
TEST(EnergyLabelsCli, BenchSaysWhatEachEnergyFigureIs) {
    if (!have_binary()) GTEST_SKIP() << "duet binary not built";
    const std::string report = testing::TempDir() + "/energy_labels_report.json";
    const std::string common = "--log-level warn bench --baseline npu_only --target npu_pim_coop --model llama2-7b "
                               "--seq-len 128 --gen-len 4 --no-verdict-exit --report " + report;
    struct Case {
        const char* pim;
        const char* table_line;
        const char* json_basis;
    };
    for (const Case& c : {Case{"pim_hbm2_fimdram", "    PIM (per DRAM command)", "\"per_command\""},
                          Case{"pim_lpddr5x_bank", "    PIM (not modelled: no [energy])", "\"not_modelled\""}}) {
        SCOPED_TRACE(c.pim);
        const CliRun r = run(common + " --pim " + c.pim);
        ASSERT_EQ(r.code, 0) << r.out;
        EXPECT_NE(r.out.find("    NPU (TDP x busy, upper bound)"), std::string::npos) << r.out;
        EXPECT_NE(r.out.find(c.table_line), std::string::npos) << r.out;
        std::string json;
        if (FILE* f = std::fopen(report.c_str(), "r")) {
            std::array<char, 4096> buf{};
            for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), f)) > 0;) json.append(buf.data(), n);
            std::fclose(f);
        }
        EXPECT_NE(json.find("\"tdp_x_busy_upper_bound\""), std::string::npos);
        EXPECT_NE(json.find(c.json_basis), std::string::npos);
    }
}
