#pragma once
// Command-level state of one DRAM channel: bank state machines (closed / open row) and, per
// node of each level (channel, rank, bank group, bank), the earliest cycle at which every
// command may next be issued there, maintained from the rule table (timing_table.h).
// The channel only checks and records commands; the scheduler decides what to issue.
// Not thread safe; one object per simulated channel. Cycles are tCK of the spec.
#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include "hw/dram/dram_spec.h"
#include "hw/dram/timing_table.h"

namespace duet::hw::dram {

struct BankAddr {
    int rank = 0, bank_group = 0, bank = 0;  // bank within its group
    int64_t row = 0;
};

class DramChannel {
public:
    DramChannel(const DramOrg& org, std::vector<TimingRule> rules);

    // Earliest cycle >= 0 at which `cmd` to `a` satisfies every timing rule. Commands whose
    // scope is wider than a bank (PREA, REFab: the rank; all-bank PIM commands: the channel)
    // take the maximum over the banks they touch. Bank-state legality is separate (legal()).
    int64_t earliest(DramCmd cmd, const BankAddr& a) const;
    // Whether the bank states allow `cmd` (e.g. RD needs `a.row` open, ACT a closed bank).
    bool legal(DramCmd cmd, const BankAddr& a) const;
    // Issues `cmd` at `clk`; throws duet::Error naming the rule when it is illegal or early.
    void issue(DramCmd cmd, const BankAddr& a, int64_t clk);

    int64_t open_row(const BankAddr& a) const { return open_row_[bank_index(a)]; }
    // Between ACT and ACT2 of a two-part activation: the row is chosen but not yet usable.
    bool activating(const BankAddr& a) const { return activating_[bank_index(a)] != 0; }
    bool any_open(int rank) const;
    uint64_t count(DramCmd c) const { return counts_[int(c)]; }
    int64_t last_issue_cycle() const { return last_clk_; }
    const DramOrg& org() const { return org_; }

private:
    int bank_index(const BankAddr& a) const {
        return (a.rank * org_.bank_groups + a.bank_group) * org_.banks_per_group + a.bank;
    }
    int node_index(Level l, const BankAddr& a) const;
    int nodes_at(Level l) const;
    int64_t max_over(Level scope, int node, DramCmd cmd) const;

    DramOrg org_;
    std::vector<TimingRule> rules_;
    std::array<std::vector<int>, kNumCmds> rules_by_prev_;
    // next_[level][node * kNumCmds + cmd]: earliest legal cycle.
    std::array<std::vector<int64_t>, kNumLevels> next_;
    // For window rules: history_[rule][node] = issue cycles of `prev`, most recent last.
    std::vector<std::vector<std::deque<int64_t>>> history_;
    std::vector<int64_t> open_row_;  // -1 = closed
    std::vector<char> activating_;   // ACT issued, ACT2 not yet (two-part tables only)
    bool two_part_act_ = false;      // the table has an ACT -> ACT2 rule
    std::array<uint64_t, kNumCmds> counts_{};
    int64_t last_clk_ = -1;
};

}  // namespace duet::hw::dram
