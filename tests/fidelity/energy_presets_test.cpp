// Energy of every memory preset (issue 9 item 5): each [energy] section is recomputed here from
// the raw figures of its cited source (IDD currents by Micron's TN-41-01 method, or per-bit
// energies), independently of the arithmetic written in the preset files. Presets without a
// public source stay unpublished and report "not modelled".
#include <gtest/gtest.h>

#include <string>

#include "hw/memory_presets.h"
#include "hw/pim/pim_gemv.h"

using namespace duet::hw;

namespace {

void expect_energy(const std::string& name, double act_pj, double rd, double wr, double ref_pj, double bg_mw) {
    SCOPED_TRACE(name);
    const dram::DramSpec s = load_memory_preset(name);
    ASSERT_TRUE(s.energy.published);
    const double rel = 0.005;  // the files round to 3-4 digits
    EXPECT_NEAR(s.energy.act_pj, act_pj, rel * act_pj);
    EXPECT_NEAR(s.energy.rd_pj_per_bit, rd, rel * rd);
    EXPECT_NEAR(s.energy.wr_pj_per_bit, wr, rel * wr);
    EXPECT_NEAR(s.energy.ref_pj, ref_pj, rel * ref_pj + 1e-9);
    EXPECT_NEAR(s.energy.background_mw, bg_mw, rel * bg_mw + 1e-9);
}

}  // namespace

// O'Connor et al. (MICRO 2017) per-bit path energies as AttAcc tabulates them (src/config.py).
TEST(EnergyPresets, HbmFromFineGrainedDramPerBitEnergies) {
    const double cell_act = 0.11, cell_rw = 0.44, coldec_bg = 1.01, bg_gio = 1.23, tsv = 0.5, interposer = 0.3;
    const double page_bits = 1024 * 8;
    for (const char* name : {"hbm3", "hbm2e"})
        expect_energy(name, cell_act * page_bits, cell_rw + coldec_bg + bg_gio + tsv + interposer,
                      cell_rw + coldec_bg + bg_gio + tsv + interposer, 0, 0);
}

// CENT's cellar_power_calculator.py: power per channel times tRC / tBL, plus DQ energy per bit.
TEST(EnergyPresets, Gddr6FromCentPowerTable) {
    const double act_mw = 132.6 / 2, rd_mw = 876.3 / 2, wr_mw = 1106.3 / 2, act_stby_mw = 527.5 / 2;
    const double tRC_ns = 44.5, tBL_ns = 1.25, dq = 5.5, word_bits = 256;
    expect_energy("gddr6", act_mw * tRC_ns, rd_mw * tBL_ns / word_bits + dq, wr_mw * tBL_ns / word_bits + dq, 0,
                  act_stby_mw);
}

// DRAMSys MICRON_6Gb_LPDDR4-3200 IDD currents (mA) per supply, TN-41-01.
TEST(EnergyPresets, Lpddr4xFromMicronLpddr4Currents) {
    const double vdd1 = 1.8, vdd2 = 1.1, vddq = 1.1, tck = 0.625;
    const double tRC = 97 * tck, tRAS = 68 * tck, tRFC = 448 * tck, burst_ns = 16 / 3.2, bits = 256;
    const double idd0[2] = {3.5, 45}, idd2n[2] = {2.0, 27}, idd3n[3] = {2.25, 30, 0.75};
    const double idd4r[3] = {2.25, 275, 150}, idd4w[3] = {2.25, 210, 55}, idd5[2] = {10, 90};
    const double v[3] = {vdd1, vdd2, vddq};
    double act = 0, rd = 0, wr = 0, ref = 0, bg = 0;
    for (int i = 0; i < 2; ++i) {
        act += (idd0[i] * tRC - idd3n[i] * tRAS - idd2n[i] * (tRC - tRAS)) * v[i];
        ref += (idd5[i] - idd3n[i]) * v[i] * tRFC;
    }
    for (int i = 0; i < 3; ++i) {
        rd += (idd4r[i] - idd3n[i]) * v[i] * burst_ns;
        wr += (idd4w[i] - idd3n[i]) * v[i] * burst_ns;
        bg += idd3n[i] * v[i];
    }
    expect_energy("lpddr4x", act, rd / bits, wr / bits, ref, bg);
}

// No public IDD table or per-bit energy was found for these (docs/hardware-model.md 1.1).
TEST(EnergyPresets, PresetsWithoutASourceStayUnpublished) {
    for (const char* name : {"lpddr5", "lpddr5x"}) {
        const dram::DramSpec s = load_memory_preset(name);
        EXPECT_FALSE(s.energy.published) << name;
        EXPECT_EQ(s.energy.rd_pj_per_bit, 0) << name;
    }
    EXPECT_TRUE(load_memory_preset("hbm2").energy.published);
}

// A bank-level PIM read does not cross the I/O path: pim_hbm3_bank prices its unit column reads at
// AttAcc's bank-level figure (FGDRAM cell read 0.44 pJ/b; the 0.11 ACT share is paid per ACT_AB),
// the other presets at the base memory's external read energy (an upper bound).
TEST(EnergyPresets, BankLevelPimReadsUseTheArrayReadEnergy) {
    const pim::PimSpec s = load_pim_preset("pim_hbm3_bank");
    EXPECT_DOUBLE_EQ(s.unit.array_read_pj_per_bit, 0.44);
    EXPECT_DOUBLE_EQ(load_pim_preset("pim_hbm2_fimdram").unit.array_read_pj_per_bit, 0.0);
    pim::GemvShape g;
    g.m = g.k = 4096;
    g.dtype = duet::DType::F16;
    const pim::GemvResult r = pim::estimate_gemv(s, g);
    const double units = 16, access_bits = 256, burst_bits = 32 * 8;  // 16 banks, one unit each; BL8 x 32 DQ
    const double expect = double(r.n_act) * 16 * s.mem.energy.act_pj + double(r.n_mac) * units * access_bits * 0.44 +
                          double(r.n_rd) * burst_bits * 3.48 + double(r.n_wr) * burst_bits * 3.48;
    EXPECT_NEAR(r.energy_pj, expect, 1e-9 * expect);
    EXPECT_GT(r.n_mac, 0u);
}
