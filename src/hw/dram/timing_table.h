#pragma once
// DRAM commands and timing constraints as DATA (Ramulator 2's way): a standard is a list of
// rules "after command A at some node of level L, command B anywhere under that node waits
// >= N cycles", optionally over a window of the last W A's (tFAW: W = 4). PIM commands are
// more rows in the same table, not new control flow.
#include <array>
#include <string>
#include <vector>

#include "hw/dram/dram_spec.h"

namespace duet::hw::dram {

enum class DramCmd : int {
    ACT,     // open a row in one bank (ACT-1 where the standard activates in two parts)
    ACT2,    // second part of a two-part activation (LPDDR5 ACT-2): the row is usable after it
    PRE,     // close one bank
    PREA,    // close every bank of the rank (also closes all-bank PIM rows)
    RD,      // one burst read from the open row
    WR,      // one burst write to the open row
    REFab,   // all-bank refresh of the rank; needs every bank closed
    ACT_AB,  // PIM: open the same row in every bank of the channel at once
    MAC_AB,  // PIM: one column access in every bank, consumed by the units
    WR_GB,   // PIM: one burst written into the channel's input buffer / GRFs (broadcast)
    RD_OUT,  // PIM: one burst of unit results read out over the external bus
    MODE,    // PIM: a mode transition (SB <-> AB <-> AB-PIM)
    COUNT
};
constexpr int kNumCmds = int(DramCmd::COUNT);
const char* cmd_name(DramCmd c);

enum class Level : int { CHANNEL, RANK, BANKGROUP, BANK, COUNT };
constexpr int kNumLevels = int(Level::COUNT);

struct TimingRule {
    Level level;
    DramCmd prev;
    DramCmd next;
    int cycles;
    int window = 1;  // > 1: `next` waits `cycles` after the window-th most recent `prev`
};

// The rules of a plain DRAM standard, built from a spec's timing values. One table serves every
// preset: the standards duet models differ in their numbers and in whether an activation is one
// command or two (t.act_commands == 2 adds the ACT -> ACT2 row; DramChannel then keeps the bank
// "activating" until ACT2).
std::vector<TimingRule> dram_rules(const DramTiming& t);

// PIM timing parameters that extend a standard's table.
struct PimTimingParams {
    int nCCD_AB = 0;          // MAC_AB to MAC_AB (unit pace and/or power limit)
    int nACT_AB = 0;          // ACT_AB to ACT_AB beyond nRC (all-bank activation power limit)
    int nMAC_RD_OUT = 0;      // last MAC_AB to the first RD_OUT (unit pipeline drain)
    int mode_switch_cycles = 0;  // MODE to any following command
    int nRCD_MAC = 0;         // ACT_AB to the first MAC_AB (0: the base memory's nRCD)
};
std::vector<TimingRule> pim_rules(const DramTiming& t, const PimTimingParams& p);

}  // namespace duet::hw::dram
