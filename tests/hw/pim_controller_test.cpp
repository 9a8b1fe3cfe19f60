// CENT's CXL-controller work (hw/pim/pim_controller.h) against CENT's own formulas, evaluated by
// hand from the constants of Morteza1814/CENT @a5d6e53 cent_simulation/cent_power_calculator.py
// (FREQ 2 GHz, CH_PER_DV 32, SB_RD_CYCLE = SB_WR_CYCLE = 1, EXP_LANE_CYCLE 11, RV_COUNT 8,
// RV_RMSNorm_CYCLE 26, RV_ROTEmbed_CYCLE 3/8, RV_SFT_CYCLE_PIPELINE 16 + 2/8 + 1) and run_sim.py
// calculate_acc_latency:
//   ACCEL_CYCLE EXP = 32 + 11 + 1 = 44, VEC = 32 x 2 + 1 + 1 = 66 cycles
//   softmax, 32 heads, seqlen 640: 640 x 32 / 16 / 32 x (44 + 66) + 32 x 1 + 32 x 17.25 = 4984 cycles
//   RMSNorm of 4096: 4096 / 16 / 16 / 32 x 66 + (1 + 1 + 1) + 26 = 62 cycles
//   rotary of Llama2-70B (8192, GQA 8): 8192 x 3/8 x (1 + 1/8) = 3456 cycles
// which are 2.492 us, 31 ns and 1.728 us at 2 GHz (run_sim.py gives 0.002492, 2 x 0.000031 and
// 0.001728 ms for one block). And the preset's errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "core/error.h"
#include "hw/memory_presets.h"
#include "hw/pim/pim_controller.h"
#include "hw/pim/pim_device.h"

using namespace duet;
using namespace duet::hw;
using namespace duet::hw::pim;

TEST(PimController, CxlAimPresetHoldsCentsConstants) {
    const PimController c = load_pim_preset("pim_cxl_aim").controller;
    ASSERT_TRUE(c.present());
    EXPECT_DOUBLE_EQ(c.clock_mhz, 2000);
    EXPECT_EQ(c.vector_units, 32);
    EXPECT_EQ(c.vector_lanes, 16);
    EXPECT_EQ(c.riscv_cores, 8);
    EXPECT_DOUBLE_EQ(c.exp_lane_cycles, 11);
    EXPECT_DOUBLE_EQ(c.rv_rmsnorm_cycles, 26);
    // the AiM chip alone has no CXL controller: nothing is added
    const PimController none = load_pim_preset("pim_gddr6_aim").controller;
    EXPECT_FALSE(none.present());
    EXPECT_EQ(controller_softmax_ns(none, 32, 640), 0);
}

TEST(PimController, CostsEqualCentsAccLatencyFormulas) {
    const PimController c = load_pim_preset("pim_cxl_aim").controller;
    EXPECT_NEAR(controller_softmax_ns(c, 32, 640), 4984 / 2.0, 1e-9);
    EXPECT_NEAR(controller_rmsnorm_ns(c, 4096), 62 / 2.0, 1e-9);
    EXPECT_NEAR(controller_rotary_ns(c, 8192, 1024), 3456 / 2.0, 1e-9);
    // softmax grows with context x heads: 64 heads at 4096 positions
    //   4096 x 64 / 512 x 110 + 64 x 18.25 = 57 488 cycles
    EXPECT_NEAR(controller_softmax_ns(c, 64, 4096), 57488 / 2.0, 1e-9);
}

// The device adds the controller's share to the operators it serves: attention (softmax), RMSNorm
// and rotary; the SiLU gate product has none.
TEST(PimController, DeviceAddsTheControllerToAttentionNormAndRotary) {
    PimSpec with = load_pim_preset("pim_cxl_aim");
    PimSpec without = with;
    without.controller = PimController{};
    const PimDevice a(with), b(without);
    OpShape att;
    att.cls = OpClass::ATTENTION;
    att.m = 1, att.n = 640, att.k = 128, att.n_head = att.n_head_kv = 32;
    att.weight_dtype = att.act_dtype = DType::BF16;
    EXPECT_NEAR(a.estimate(att).t_ns - b.estimate(att).t_ns, 2492, 1e-6);
    OpShape norm;
    norm.cls = OpClass::ELEMENTWISE, norm.elem = ElemOp::RMSNORM, norm.m = 1, norm.n = 4096;
    EXPECT_NEAR(a.estimate(norm).t_ns - b.estimate(norm).t_ns, 31, 1e-9);
    OpShape rope;
    rope.cls = OpClass::ELEMENTWISE, rope.elem = ElemOp::ROPE, rope.m = 1, rope.k = 128;
    rope.n_head = 64, rope.n_head_kv = 8, rope.n = (64 + 8) * 128;
    EXPECT_NEAR(a.estimate(rope).t_ns - b.estimate(rope).t_ns, 1728, 1e-6);
    OpShape gate;
    gate.cls = OpClass::ELEMENTWISE, gate.elem = ElemOp::SWIGLU, gate.m = 1, gate.n = 11008;
    EXPECT_DOUBLE_EQ(a.estimate(gate).t_ns, b.estimate(gate).t_ns);
}

namespace {

// A copy of the config folder whose pim_cxl_aim.toml has `from` replaced by `to`.
std::string config_with(const std::string& tag, const std::string& from, const std::string& to) {
    const std::string dir = std::string(DUET_BINARY_DIR) + "/pim_controller_cfg_" + tag;
    std::system(("rm -rf " + dir + " && mkdir -p " + dir + " && cp -r " + config_dir() + "/hw " + dir + "/").c_str());
    const std::string path = dir + "/hw/pim_cxl_aim.toml";
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    std::ofstream(path) << text;
    return dir;
}

std::string load_error(const std::string& dir) {
    try {
        load_pim_spec_file(dir + "/hw/pim_cxl_aim.toml", "pim_cxl_aim", dir);
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST(PimController, BadControllerKeysNameFileKeyAndAllowed) {
    const std::string d1 = config_with("riscv", "riscv_cores = 8 ", "riscv_cores = 0 ");
    EXPECT_EQ(load_error(d1), d1 + "/hw/pim_cxl_aim.toml: key 'controller.riscv_cores' = 0 is out of range (allowed: 1 to 4096)");
    const std::string d2 = config_with("clock", "clock_mhz = 2000 ", "clock_ghz = 2 ");
    EXPECT_NE(load_error(d2).find("missing key 'controller.clock_mhz'"), std::string::npos) << load_error(d2);
    const std::string d3 = config_with("mapping", "attention = \"cent_head_per_bank\"", "attention = \"gemv\"");
    EXPECT_EQ(load_error(d3), d3 + "/hw/pim_cxl_aim.toml: section [controller] is not allowed here (allowed: with "
                                   "[mapping] attention = \"cent_head_per_bank\", whose operators it serves)");
}
