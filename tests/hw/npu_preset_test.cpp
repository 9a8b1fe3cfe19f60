// Ascend presets: every file loads strictly, closed-form peaks, alias, unknown-name error,
// and every number in every preset carries a source comment.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/error.h"
#include "hw/npu/npu_preset.h"

using namespace duet;
using namespace duet::hw::npu;

namespace {
const std::string kDir = std::string(DUET_SOURCE_DIR) + "/configs/hw";
const char* kSocs[] = {"Ascend910B1", "Ascend910B2", "Ascend910B3", "Ascend910B4", "Ascend310P3", "Ascend310B4"};
}  // namespace

TEST(NpuPreset, EverySocLoadsWithConsistentFigures) {
    for (const char* soc : kSocs) {
        const NpuPreset p = load_npu_preset(soc, kDir);
        EXPECT_EQ(p.soc_version, soc);
        EXPECT_EQ(p.fractal_fp16.macs_per_cycle(), 16 * 16 * 16) << soc;
        EXPECT_EQ(p.fractal_int8.k0, 32) << soc;
        EXPECT_GT(p.memory_bandwidth_gbps, 0) << soc;
    }
}

TEST(NpuPreset, PeakCubeThroughputClosedForms) {
    // cube cores x M*K*N x 2 x clock
    EXPECT_DOUBLE_EQ(load_npu_preset("Ascend910B2", kDir).peak_cube_flops(false), 24.0 * 4096 * 2 * 1800e6);
    EXPECT_DOUBLE_EQ(load_npu_preset("Ascend910B1", kDir).peak_cube_flops(false), 24.0 * 4096 * 2 * 1850e6);
    EXPECT_DOUBLE_EQ(load_npu_preset("Ascend910B3", kDir).peak_cube_flops(false), 20.0 * 4096 * 2 * 1800e6);
    EXPECT_DOUBLE_EQ(load_npu_preset("Ascend910B4", kDir).peak_cube_flops(false), 245.76e12);
    EXPECT_DOUBLE_EQ(load_npu_preset("Ascend910B4", kDir).peak_cube_flops(true), 491.52e12);
    EXPECT_DOUBLE_EQ(load_npu_preset("Ascend310P3", kDir).peak_cube_flops(true), 8.0 * 8192 * 2 * 1060e6);  // ~140 TOPS
    EXPECT_DOUBLE_EQ(load_npu_preset("Ascend310B4", kDir).peak_cube_flops(true), 8.192e12);  // the "8T" board
}

TEST(NpuPreset, MemoryTypesNameDramPresets) {
    EXPECT_EQ(load_npu_preset("Ascend910B2", kDir).memory_type, "hbm2e");
    EXPECT_EQ(load_npu_preset("Ascend310P3", kDir).memory_type, "lpddr4x");
    EXPECT_EQ(load_npu_preset("Ascend310B4", kDir).memory_type, "lpddr4x");
}

TEST(NpuPreset, FamilyNameIsAnAliasOf910B2) {
    const NpuPreset p = load_npu_preset("Ascend910B", kDir);
    EXPECT_EQ(p.soc_version, "Ascend910B2");
    EXPECT_EQ(p.short_soc_version, "Ascend910B");
}

TEST(NpuPreset, UnknownSocListsTheKnownOnes) {
    try {
        load_npu_preset("Ascend910", kDir);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(),
                     "unknown soc_version 'Ascend910' (known: Ascend310B4, Ascend310P3, Ascend910B (alias of "
                     "Ascend910B2), Ascend910B1, Ascend910B2, Ascend910B3, Ascend910B4)");
    }
}

TEST(NpuPreset, StrictKeys) {
    const auto tmp = std::filesystem::temp_directory_path() / "duet_npu_preset_test";
    std::filesystem::create_directories(tmp);
    std::ifstream in(kDir + "/ascend910b4.toml");
    std::stringstream text;
    text << in.rdbuf();
    const std::string bad = std::regex_replace(text.str(), std::regex("\\[power\\]"), "[power]\ntdp_watts = 1");
    const std::string path = (tmp / "ascend_bad.toml").string();
    std::ofstream(path) << bad;
    try {
        load_npu_preset_file(path);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), (path + ": unknown key 'power.tdp_watts' (allowed here: tdp_w)").c_str());
    }
    std::filesystem::remove_all(tmp);
}

TEST(NpuPreset, EveryNumberCitesItsSource) {
    const std::regex number_line(R"(^\s*[A-Za-z0-9_]+\s*=\s*[-0-9.]+)");
    int checked = 0;
    for (const auto& f : std::filesystem::directory_iterator(kDir)) {
        const std::string name = f.path().filename().string();
        if (name.rfind("ascend", 0) != 0) continue;
        std::ifstream in(f.path());
        std::string line;
        int n = 0;
        while (std::getline(in, line)) {
            ++n;
            if (!std::regex_search(line, number_line)) continue;
            ++checked;
            const auto hash = line.find('#');
            EXPECT_NE(hash, std::string::npos) << name << ":" << n << " has no source comment: " << line;
            if (hash != std::string::npos) {
                EXPECT_GT(line.size() - hash, 8u) << name << ":" << n;
            }
        }
    }
    EXPECT_GE(checked, 6 * 30);
}

namespace {

// Loads ascend910b4.toml with `from` replaced by `to`; returns the error message ("(no error)").
std::string load_edited(const std::string& from, const std::string& to, std::string& path) {
    const auto tmp = std::filesystem::temp_directory_path() / "duet_npu_step_test";
    std::filesystem::create_directories(tmp);
    std::ifstream in(kDir + "/ascend910b4.toml");
    std::stringstream text;
    text << in.rdbuf();
    path = (tmp / "ascend_edit.toml").string();
    std::ofstream(path) << std::regex_replace(text.str(), std::regex(from), to);
    std::string msg = "(no error)";
    try {
        load_npu_preset_file(path);
    } catch (const Error& e) {
        msg = e.what();
    }
    std::filesystem::remove_all(tmp);
    return msg;
}

}  // namespace

// [serving_step] is required, strict and range-checked; every message names the file and key.
TEST(NpuPreset, ServingStepKeysAreValidated) {
    const NpuPreset p = load_npu_preset("Ascend910B4", kDir);
    EXPECT_DOUBLE_EQ(p.serving_step.eager_step_us, 10630);
    EXPECT_DOUBLE_EQ(p.serving_step.graph_step_us, 1270);
    std::string path;
    std::string msg = load_edited("eager_step_us = 10630", "eager_step_us = -1", path);
    EXPECT_EQ(msg, path + ": key 'serving_step.eager_step_us' = -1 is out of range (allowed: 0 to 1000000)");
    msg = load_edited("graph_step_us = 1270", "graph_step_us = \"fast\"", path);
    EXPECT_EQ(msg, path + ": key 'serving_step.graph_step_us' has type string, expected number");
    msg = load_edited("\\[serving_step\\]", "[serving_step]\nstep_us = 1", path);
    EXPECT_EQ(msg, path + ": unknown key 'serving_step.step_us' (allowed here: eager_step_us, graph_step_us)");
    msg = load_edited("\\[serving_step\\]", "[serving]", path);
    EXPECT_EQ(msg, path + ": missing section [serving_step]");
}
