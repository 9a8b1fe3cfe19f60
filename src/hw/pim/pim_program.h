#pragma once
// The command program one PIM channel runs for an all-bank GEMV (internal to hw/pim):
//   [park_reads: ACT + RD per bank to a reserved row, PREA]
//   MODE (SB->AB); crf_bursts WR_GB (command-register program); MODE (AB->AB-PIM), or one
//   such switch in and out around every (tile, vector) when mode_switch_per_tile (FIMDRAM as
//   PIMSimulator's PIMKernel::executeGemv issues it); per tile of acc_registers tasks and per
//   input vector (batch): per input chunk, WR_GB bursts (broadcast, skipped when every
//   vector's slice stays resident) then MAC_AB columns, opening rows with PREA/ACT_AB as they
//   run out; RD_OUT bursts of the tile's results; PREA; MODE back to SB; [park_reads again].
// FIMDRAM (PIMSimulator's PIMKernel) makes some of these plain DRAM accesses to reserved rows:
// with input_in_row, WR_GB bursts are WRs to one bank's reserved row (the weight row is closed
// and re-opened); with mode_writes_*, a MODE is that many WRs to reserved rows of distinct banks.
// Both are timed by the table's ACT/RD/WR/PREA rows, not by new control flow.
// Refresh is inserted when due (PREA, REFab, re-ACT_AB of the interrupted row).
// command_level = true issues every command through dram::DramChannel; false evaluates the same
// program segment by segment in closed form (one MAC run per row, not per command).
#include <cstdint>

#include "hw/pim/pim_gemv.h"
#include "hw/pim/pim_spec.h"

namespace duet::hw::pim {

struct ProgramStats {
    double end_cycle = 0;
    uint64_t n_act = 0, n_mac = 0, n_rd = 0, n_wr = 0, n_ref = 0, n_pre = 0, n_mode = 0;
};

ProgramStats run_channel_program(const PimSpec& s, const GemvPlan& p, int64_t tasks, bool command_level);

}  // namespace duet::hw::pim
