// Cycle-exact legality of the DRAM command engine (Ramulator's device timing tests): commands
// are issued one by one and the earliest legal cycle of the next one is asserted from the
// preset's own timing values.
#include <gtest/gtest.h>

#include "core/error.h"
#include "hw/dram/dram_channel.h"
#include "hw/memory_presets.h"

using namespace duet;
using namespace duet::hw::dram;

namespace {

class DramCmdTiming : public ::testing::Test {
protected:
    void SetUp() override {
        spec = hw::load_memory_preset("lpddr5");
        ch = std::make_unique<DramChannel>(spec.org, dram_rules(spec.timing));
    }
    DramSpec spec;
    std::unique_ptr<DramChannel> ch;
    const DramTiming& t() const { return spec.timing; }
};

const BankAddr kB0{0, 0, 0, 7};       // bank group 0, bank 0, row 7
const BankAddr kB0other{0, 0, 0, 9};  // same bank, another row
const BankAddr kB1{0, 0, 1, 3};       // same bank group, bank 1
const BankAddr kG1{0, 1, 0, 5};       // bank group 1

}  // namespace

TEST_F(DramCmdTiming, ReadWaitsRcdAfterActivate) {
    ch->issue(DramCmd::ACT, kB0, 100);
    EXPECT_EQ(ch->earliest(DramCmd::RD, kB0), 100 + t().nRCD);
    EXPECT_EQ(ch->earliest(DramCmd::WR, kB0), 100 + t().nRCDWR);
    EXPECT_THROW(ch->issue(DramCmd::RD, kB0, 100 + t().nRCD - 1), Error);
    ch->issue(DramCmd::RD, kB0, 100 + t().nRCD);
}

TEST_F(DramCmdTiming, SameBankActivatesAreNrcApartAndPrechargeWaitsNras) {
    ch->issue(DramCmd::ACT, kB0, 0);
    EXPECT_EQ(ch->earliest(DramCmd::PRE, kB0), t().nRAS);
    ch->issue(DramCmd::PRE, kB0, t().nRAS);
    // ACT -> ACT same bank is nRC, which here is nRAS + nRP: both rules agree.
    EXPECT_EQ(ch->earliest(DramCmd::ACT, kB0other), std::max<int64_t>(t().nRC, t().nRAS + t().nRP));
}

TEST_F(DramCmdTiming, ActivatesToOtherBanksFollowRrdAndFaw) {
    // Four ACTs as early as allowed (nRRD_S apart across groups, nRRD_L inside one), then a 5th.
    const BankAddr banks[5] = {{0, 0, 0, 1}, {0, 1, 0, 1}, {0, 2, 0, 1}, {0, 3, 0, 1}, {0, 0, 1, 1}};
    int64_t clk = 0;
    std::vector<int64_t> at;
    for (int i = 0; i < 5; ++i) {
        const int64_t e = ch->earliest(DramCmd::ACT, banks[i]);
        if (i > 0) {
            EXPECT_GE(e, at.back() + t().nRRD_S);
        }
        clk = std::max(clk, e);
        ch->issue(DramCmd::ACT, banks[i], clk);
        at.push_back(clk);
        ++clk;
    }
    // The 5th activation waits for the window opened by the 1st.
    EXPECT_EQ(at[4], std::max<int64_t>(at[0] + t().nFAW, at[3] + t().nRRD_S));
    EXPECT_EQ(at[1], at[0] + t().nRRD_S);
}

TEST_F(DramCmdTiming, FifthActivateInsideFawIsDelayed) {
    // With a larger FAW than 4 x nRRD the window binds.
    auto timing = t();
    timing.nFAW = 40;
    DramChannel c(spec.org, dram_rules(timing));
    const BankAddr banks[5] = {{0, 0, 0, 1}, {0, 1, 0, 1}, {0, 2, 0, 1}, {0, 3, 0, 1}, {0, 0, 1, 1}};
    for (int i = 0; i < 4; ++i) c.issue(DramCmd::ACT, banks[i], int64_t(i) * timing.nRRD_S);
    EXPECT_EQ(c.earliest(DramCmd::ACT, banks[4]), 40);
    EXPECT_THROW(c.issue(DramCmd::ACT, banks[4], 39), Error);
}

TEST_F(DramCmdTiming, ColumnSpacingDependsOnBankGroup) {
    ch->issue(DramCmd::ACT, kB0, 0);
    ch->issue(DramCmd::ACT, kB1, t().nRRD_L);
    ch->issue(DramCmd::ACT, kG1, t().nRRD_L + t().nRRD_S);
    const int64_t rd = 100;
    ch->issue(DramCmd::RD, kB0, rd);
    EXPECT_EQ(ch->earliest(DramCmd::RD, kB1), rd + t().nCCD_L);  // same bank group
    EXPECT_EQ(ch->earliest(DramCmd::RD, kG1), rd + std::max(t().nCCD_S, t().nBL));
}

TEST_F(DramCmdTiming, ReadWriteTurnarounds) {
    ch->issue(DramCmd::ACT, kB0, 0);
    ch->issue(DramCmd::ACT, kG1, t().nRRD_S);
    const int64_t rd = 50;
    ch->issue(DramCmd::RD, kB0, rd);
    EXPECT_EQ(ch->earliest(DramCmd::WR, kG1), rd + t().nCL + t().nBL + 2 - t().nCWL + t().nRTW);
    const int64_t wr = 200;
    ch->issue(DramCmd::WR, kG1, wr);
    EXPECT_EQ(ch->earliest(DramCmd::RD, kB0), wr + t().nCWL + t().nBL + t().nWTR_S);   // other group
    EXPECT_EQ(ch->earliest(DramCmd::RD, kG1), wr + t().nCWL + t().nBL + t().nWTR_L);   // same group
    EXPECT_EQ(ch->earliest(DramCmd::PRE, kG1), wr + t().nCWL + t().nBL + t().nWR);
}

TEST_F(DramCmdTiming, RefreshNeedsClosedBanksAndBlocksForNrfc) {
    ch->issue(DramCmd::ACT, kB0, 0);
    EXPECT_FALSE(ch->legal(DramCmd::REFab, kB0));
    EXPECT_THROW(ch->issue(DramCmd::REFab, kB0, 500), Error);
    ch->issue(DramCmd::PREA, kB0, t().nRAS);
    EXPECT_EQ(ch->earliest(DramCmd::REFab, kB0), std::max<int64_t>(t().nRAS + t().nRP, t().nRC));
    const int64_t ref = ch->earliest(DramCmd::REFab, kB0);
    ch->issue(DramCmd::REFab, kB0, ref);
    EXPECT_EQ(ch->earliest(DramCmd::ACT, kG1), ref + t().nRFC);
}

TEST_F(DramCmdTiming, BankStateIsChecked) {
    EXPECT_THROW(ch->issue(DramCmd::RD, kB0, 0), Error);  // closed bank
    ch->issue(DramCmd::ACT, kB0, 0);
    EXPECT_THROW(ch->issue(DramCmd::ACT, kB0other, 200), Error);  // already open
    try {
        ch->issue(DramCmd::RD, kB0other, 200);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(),
                     "DRAM command RD to rank 0 bank group 0 bank 0 row 9 is illegal in the current bank state "
                     "(open row 7)");
    }
    try {
        ch->issue(DramCmd::RD, kB0, 3);
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), "DRAM command RD issued at cycle 3 before its earliest legal cycle " +
                                             std::to_string(t().nRCD));
    }
}

TEST_F(DramCmdTiming, AllBankPimRows) {
    PimTimingParams p{6, 0, 3, 10};
    auto rules = dram_rules(t());
    auto extra = pim_rules(t(), p);
    rules.insert(rules.end(), extra.begin(), extra.end());
    DramChannel c(spec.org, rules);
    c.issue(DramCmd::ACT_AB, {0, 0, 0, 4}, 0);
    EXPECT_EQ(c.open_row({0, 3, 3, 0}), 4);  // every bank opened
    EXPECT_EQ(c.earliest(DramCmd::MAC_AB, {0, 0, 0, 4}), t().nRCD);
    c.issue(DramCmd::MAC_AB, {0, 0, 0, 4}, t().nRCD);
    EXPECT_EQ(c.earliest(DramCmd::MAC_AB, {0, 0, 0, 4}), t().nRCD + 6);
    EXPECT_EQ(c.earliest(DramCmd::RD_OUT, {}), t().nRCD + 3);
    EXPECT_EQ(c.earliest(DramCmd::PREA, {}), std::max<int64_t>(t().nRAS, t().nRCD + t().nRTP));
    c.issue(DramCmd::PREA, {}, t().nRAS);
    EXPECT_EQ(c.earliest(DramCmd::ACT_AB, {}), std::max<int64_t>(t().nRAS + t().nRP, t().nRC));
    c.issue(DramCmd::MODE, {}, t().nRAS + t().nRP);
    EXPECT_EQ(c.earliest(DramCmd::WR_GB, {}), t().nRAS + t().nRP + 10);
}

// A PIM device whose all-bank MAC waits longer after its ACT than a read does (GDDR6-AiM:
// aim_simulator's nRCDRDMAC 56 tCK against nRCDRD 36): the rule takes nRCD_MAC when it is given.
TEST_F(DramCmdTiming, AllBankMacWaitsItsOwnActToMacDelay) {
    PimTimingParams p{6, 0, 3, 10, t().nRCD + 7};
    auto rules = dram_rules(t());
    auto extra = pim_rules(t(), p);
    rules.insert(rules.end(), extra.begin(), extra.end());
    DramChannel c(spec.org, rules);
    c.issue(DramCmd::ACT_AB, {0, 0, 0, 4}, 0);
    EXPECT_EQ(c.earliest(DramCmd::MAC_AB, {0, 0, 0, 4}), t().nRCD + 7);
    p.nRCD_MAC = 0;  // 0: the base memory's nRCD
    DramChannel d(spec.org, pim_rules(t(), p));
    d.issue(DramCmd::ACT_AB, {0, 0, 0, 4}, 0);
    EXPECT_EQ(d.earliest(DramCmd::MAC_AB, {0, 0, 0, 4}), t().nRCD);
}
