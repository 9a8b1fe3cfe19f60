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
    // ACT, and on a two-part standard (lpddr5) ACT-2 in the next cycle; rows are usable after it.
    void activate(const BankAddr& a, int64_t clk) {
        ch->issue(DramCmd::ACT, a, clk);
        if (t().act_commands == 2) ch->issue(DramCmd::ACT2, a, clk + 1);
    }
};

const BankAddr kB0{0, 0, 0, 7};       // bank group 0, bank 0, row 7
const BankAddr kB0other{0, 0, 0, 9};  // same bank, another row
const BankAddr kB1{0, 0, 1, 3};       // same bank group, bank 1
const BankAddr kG1{0, 1, 0, 5};       // bank group 1

}  // namespace

TEST_F(DramCmdTiming, ReadWaitsRcdAfterActivate) {
    activate(kB0, 100);
    EXPECT_EQ(ch->earliest(DramCmd::RD, kB0), 100 + t().nRCD);
    EXPECT_EQ(ch->earliest(DramCmd::WR, kB0), 100 + t().nRCDWR);
    EXPECT_THROW(ch->issue(DramCmd::RD, kB0, 100 + t().nRCD - 1), Error);
    ch->issue(DramCmd::RD, kB0, 100 + t().nRCD);
}

TEST_F(DramCmdTiming, SameBankActivatesAreNrcApartAndPrechargeWaitsNras) {
    activate(kB0, 0);
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
        activate(banks[i], clk);
        at.push_back(clk);
        clk += t().act_commands;
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
    activate(kB0, 0);
    activate(kB1, t().nRRD_L);
    activate(kG1, t().nRRD_L + t().nRRD_S);
    const int64_t rd = 100;
    ch->issue(DramCmd::RD, kB0, rd);
    EXPECT_EQ(ch->earliest(DramCmd::RD, kB1), rd + t().nCCD_L);  // same bank group
    EXPECT_EQ(ch->earliest(DramCmd::RD, kG1), rd + std::max(t().nCCD_S, t().nBL));
}

TEST_F(DramCmdTiming, ReadWriteTurnarounds) {
    activate(kB0, 0);
    activate(kG1, t().nRRD_S);
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
    activate(kB0, 0);
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
    activate(kB0, 0);
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

// LPDDR5 activates in two parts (JESD209-5; Ramulator 2.1 @c5b1c3a lpddr5.py ACT1/ACT2): the
// bank holds its row between ACT-1 and ACT-2 but serves no column command, precharge or refresh
// until ACT-2; the row timings still count from ACT-1, so ACT-2 costs a command slot only.
TEST_F(DramCmdTiming, TwoPartActivationOpensTheRowAtAct2) {
    ASSERT_EQ(t().act_commands, 2);
    ch->issue(DramCmd::ACT, kB0, 100);
    EXPECT_TRUE(ch->activating(kB0));
    EXPECT_FALSE(ch->legal(DramCmd::RD, kB0));
    EXPECT_FALSE(ch->legal(DramCmd::PRE, kB0));
    EXPECT_FALSE(ch->legal(DramCmd::PREA, kB0));
    EXPECT_FALSE(ch->legal(DramCmd::ACT2, kB0other));  // ACT-2 names ACT-1's row
    EXPECT_FALSE(ch->legal(DramCmd::ACT2, kG1));       // and ACT-1's bank
    EXPECT_EQ(ch->earliest(DramCmd::ACT2, kB0), 101);
    EXPECT_THROW(ch->issue(DramCmd::ACT2, kB0, 100), Error);  // one command per cycle
    ch->issue(DramCmd::ACT2, kB0, 101);
    EXPECT_FALSE(ch->activating(kB0));
    EXPECT_FALSE(ch->legal(DramCmd::ACT2, kB0));
    EXPECT_EQ(ch->earliest(DramCmd::RD, kB0), 100 + t().nRCD);  // from ACT-1
    EXPECT_EQ(ch->earliest(DramCmd::PRE, kB0), 100 + t().nRAS);
    EXPECT_EQ(ch->earliest(DramCmd::ACT, kG1), 100 + t().nRRD_S);
    ch->issue(DramCmd::RD, kB0, 100 + t().nRCD);
    EXPECT_EQ(ch->count(DramCmd::ACT), 1u);
    EXPECT_EQ(ch->count(DramCmd::ACT2), 1u);
}

// A standard with one ACT command (HBM2) has no ACT2 row: the row is usable after ACT alone.
TEST(DramCmdTimingOnePart, SingleCommandActivationHasNoAct2) {
    const DramSpec s = hw::load_memory_preset("hbm2");
    ASSERT_EQ(s.timing.act_commands, 1);
    DramChannel c(s.org, dram_rules(s.timing));
    c.issue(DramCmd::ACT, kB0, 0);
    EXPECT_FALSE(c.activating(kB0));
    EXPECT_FALSE(c.legal(DramCmd::ACT2, kB0));
    c.issue(DramCmd::RD, kB0, s.timing.nRCD);
    for (const TimingRule& r : dram_rules(s.timing)) EXPECT_NE(r.next, DramCmd::ACT2);
}
