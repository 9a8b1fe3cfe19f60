#include "hw/dram/timing_table.h"

#include <algorithm>

namespace duet::hw::dram {

const char* cmd_name(DramCmd c) {
    static const char* names[] = {"ACT",   "ACT2",   "PRE",    "PREA",  "RD",     "WR",
                                  "REFab", "ACT_AB", "MAC_AB", "WR_GB", "RD_OUT", "MODE"};
    return names[int(c)];
}

namespace {
using C = DramCmd;
using L = Level;
void add(std::vector<TimingRule>& r, L lvl, std::initializer_list<C> prev, std::initializer_list<C> next, int n,
         int window = 1) {
    for (C p : prev)
        for (C q : next) r.push_back({lvl, p, q, n, window});
}
}  // namespace

std::vector<TimingRule> dram_rules(const DramTiming& t) {
    std::vector<TimingRule> r;
    const int rd_to_wr = t.nCL + t.nBL + 2 - t.nCWL + t.nRTW;  // bus turnaround, 2 cycles of preamble
    const int wr_to_pre = t.nCWL + t.nBL + t.nWR;
    // Channel: one data bus.
    add(r, L::CHANNEL, {C::RD}, {C::RD}, t.nBL);
    add(r, L::CHANNEL, {C::WR}, {C::WR}, t.nBL);
    // Rank (i.e. any bank group): column spacing, turnarounds, activation rate, refresh.
    add(r, L::RANK, {C::RD}, {C::RD}, t.nCCD_S);
    add(r, L::RANK, {C::WR}, {C::WR}, t.nCCD_S);
    add(r, L::RANK, {C::RD}, {C::WR}, std::max(1, rd_to_wr));
    add(r, L::RANK, {C::WR}, {C::RD}, t.nCWL + t.nBL + t.nWTR_S);
    add(r, L::RANK, {C::ACT}, {C::ACT}, t.nRRD_S);
    if (t.nFAW > 0) add(r, L::RANK, {C::ACT}, {C::ACT}, t.nFAW, 4);
    add(r, L::RANK, {C::ACT}, {C::PREA}, t.nRAS);
    add(r, L::RANK, {C::RD}, {C::PREA}, t.nRTP);
    add(r, L::RANK, {C::WR}, {C::PREA}, wr_to_pre);
    add(r, L::RANK, {C::PREA}, {C::ACT, C::REFab}, t.nRP);
    add(r, L::RANK, {C::PRE}, {C::REFab}, t.nRP);
    add(r, L::RANK, {C::ACT}, {C::REFab}, t.nRC);
    add(r, L::RANK, {C::REFab}, {C::ACT, C::REFab}, t.nRFC);
    // Bank group.
    add(r, L::BANKGROUP, {C::RD}, {C::RD}, t.nCCD_L);
    add(r, L::BANKGROUP, {C::WR}, {C::WR}, t.nCCD_L);
    add(r, L::BANKGROUP, {C::WR}, {C::RD}, t.nCWL + t.nBL + t.nWTR_L);
    add(r, L::BANKGROUP, {C::ACT}, {C::ACT}, t.nRRD_L);
    // Bank.
    add(r, L::BANK, {C::ACT}, {C::RD}, t.nRCD);
    add(r, L::BANK, {C::ACT}, {C::WR}, t.nRCDWR);
    add(r, L::BANK, {C::ACT}, {C::PRE}, t.nRAS);
    add(r, L::BANK, {C::ACT}, {C::ACT}, t.nRC);
    add(r, L::BANK, {C::PRE}, {C::ACT}, t.nRP);
    add(r, L::BANK, {C::RD}, {C::PRE}, t.nRTP);
    add(r, L::BANK, {C::WR}, {C::PRE}, wr_to_pre);
    // Two-part activation (LPDDR5): ACT-2 follows ACT-1 in a later command-bus cycle, at most nAAD
    // later (a deadline, kept by the controller). Every row timing above counts from ACT-1, as in
    // Ramulator 2.1 @c5b1c3a python/ramulator/dram/lpddr5.py ("measured from ACT-1"), so ACT-2's
    // cost is its command-bus slot.
    if (t.act_commands == 2) add(r, L::BANK, {C::ACT}, {C::ACT2}, 1);
    return r;
}

std::vector<TimingRule> pim_rules(const DramTiming& t, const PimTimingParams& p) {
    std::vector<TimingRule> r;
    // All-bank commands act on every bank of the channel, so their constraints live at the
    // channel level; they also honour what the plain commands left behind.
    add(r, L::CHANNEL, {C::ACT_AB}, {C::MAC_AB}, p.nRCD_MAC > 0 ? p.nRCD_MAC : t.nRCD);
    add(r, L::CHANNEL, {C::ACT_AB}, {C::PREA}, t.nRAS);
    add(r, L::CHANNEL, {C::ACT_AB}, {C::ACT_AB}, std::max(t.nRC, p.nACT_AB));
    add(r, L::CHANNEL, {C::ACT_AB}, {C::REFab}, t.nRC);
    add(r, L::CHANNEL, {C::PREA}, {C::ACT_AB}, t.nRP);
    add(r, L::CHANNEL, {C::REFab}, {C::ACT_AB}, t.nRFC);
    add(r, L::CHANNEL, {C::MAC_AB}, {C::MAC_AB}, p.nCCD_AB);
    add(r, L::CHANNEL, {C::MAC_AB}, {C::PREA}, t.nRTP);
    add(r, L::CHANNEL, {C::MAC_AB}, {C::RD_OUT}, p.nMAC_RD_OUT);
    add(r, L::CHANNEL, {C::MAC_AB}, {C::WR_GB}, std::max(1, t.nCL + t.nBL + 2 - t.nCWL + t.nRTW));
    // Input broadcast and readout use the data bus like WR and RD.
    add(r, L::CHANNEL, {C::WR_GB}, {C::WR_GB}, std::max(t.nBL, t.nCCD_S));
    add(r, L::CHANNEL, {C::WR_GB}, {C::MAC_AB}, t.nCWL + t.nBL + t.nWTR_S);
    add(r, L::CHANNEL, {C::RD_OUT}, {C::RD_OUT}, std::max(t.nBL, t.nCCD_S));
    add(r, L::CHANNEL, {C::RD_OUT}, {C::WR_GB}, std::max(1, t.nCL + t.nBL + 2 - t.nCWL + t.nRTW));
    add(r, L::CHANNEL, {C::WR_GB}, {C::RD_OUT}, t.nCWL + t.nBL + t.nWTR_S);
    // Mode transitions are ACT/PRE/WR sequences to reserved rows: banks precharged first.
    add(r, L::CHANNEL, {C::PREA}, {C::MODE}, t.nRP);
    // All-bank refresh occupies the device: no PIM command of any kind during tRFC.
    add(r, L::CHANNEL, {C::REFab}, {C::MODE, C::WR_GB, C::RD_OUT, C::MAC_AB}, t.nRFC);
    // A mode transition finishes before anything else is issued.
    for (int c = 0; c < kNumCmds; ++c)
        r.push_back({L::CHANNEL, C::MODE, DramCmd(c), p.mode_switch_cycles, 1});
    return r;
}

}  // namespace duet::hw::dram
