#include "hw/dram/dram_channel.h"

#include <algorithm>

#include "core/error.h"

namespace duet::hw::dram {

namespace {
Level scope_of(DramCmd c) {
    switch (c) {
        case DramCmd::ACT:
        case DramCmd::ACT2:
        case DramCmd::PRE:
        case DramCmd::RD:
        case DramCmd::WR: return Level::BANK;
        case DramCmd::PREA:
        case DramCmd::REFab: return Level::RANK;
        default: return Level::CHANNEL;
    }
}
}  // namespace

DramChannel::DramChannel(const DramOrg& org, std::vector<TimingRule> rules) : org_(org), rules_(std::move(rules)) {
    for (int l = 0; l < kNumLevels; ++l) next_[l].assign(size_t(nodes_at(Level(l))) * kNumCmds, 0);
    history_.resize(rules_.size());
    for (size_t i = 0; i < rules_.size(); ++i) {
        rules_by_prev_[int(rules_[i].prev)].push_back(int(i));
        if (rules_[i].window > 1) history_[i].resize(size_t(nodes_at(rules_[i].level)));
        if (rules_[i].prev == DramCmd::ACT && rules_[i].next == DramCmd::ACT2) two_part_act_ = true;
    }
    open_row_.assign(size_t(org_.banks()), -1);
    activating_.assign(size_t(org_.banks()), 0);
}

int DramChannel::nodes_at(Level l) const {
    switch (l) {
        case Level::CHANNEL: return 1;
        case Level::RANK: return org_.ranks;
        case Level::BANKGROUP: return org_.ranks * org_.bank_groups;
        default: return org_.banks();
    }
}

int DramChannel::node_index(Level l, const BankAddr& a) const {
    switch (l) {
        case Level::CHANNEL: return 0;
        case Level::RANK: return a.rank;
        case Level::BANKGROUP: return a.rank * org_.bank_groups + a.bank_group;
        default: return bank_index(a);
    }
}

// Max of next[cmd] over every node under (scope, node) at every level, plus the ancestors.
int64_t DramChannel::max_over(Level scope, int node, DramCmd cmd) const {
    const int c = int(cmd);
    int64_t t = next_[int(Level::CHANNEL)][c];
    if (scope == Level::CHANNEL) {
        for (int l = 1; l < kNumLevels; ++l)
            for (int n = 0; n < nodes_at(Level(l)); ++n) t = std::max(t, next_[l][size_t(n) * kNumCmds + c]);
        return t;
    }
    // scope == RANK: the rank node and everything below it.
    const int r = node;
    t = std::max(t, next_[int(Level::RANK)][size_t(r) * kNumCmds + c]);
    for (int g = 0; g < org_.bank_groups; ++g) {
        const int gi = r * org_.bank_groups + g;
        t = std::max(t, next_[int(Level::BANKGROUP)][size_t(gi) * kNumCmds + c]);
        for (int b = 0; b < org_.banks_per_group; ++b)
            t = std::max(t, next_[int(Level::BANK)][size_t(gi * org_.banks_per_group + b) * kNumCmds + c]);
    }
    return t;
}

int64_t DramChannel::earliest(DramCmd cmd, const BankAddr& a) const {
    const Level scope = scope_of(cmd);
    if (scope != Level::BANK) return max_over(scope, scope == Level::RANK ? a.rank : 0, cmd);
    int64_t t = 0;
    for (int l = 0; l < kNumLevels; ++l)
        t = std::max(t, next_[l][size_t(node_index(Level(l), a)) * kNumCmds + int(cmd)]);
    return t;
}

bool DramChannel::any_open(int rank) const {
    const int per_rank = org_.bank_groups * org_.banks_per_group;
    for (int i = rank * per_rank; i < (rank + 1) * per_rank; ++i)
        if (open_row_[i] >= 0) return true;
    return false;
}

bool DramChannel::legal(DramCmd cmd, const BankAddr& a) const {
    const int64_t row = open_row_[bank_index(a)];
    const bool act2_due = activating_[bank_index(a)] != 0;
    switch (cmd) {
        case DramCmd::ACT: return row < 0;
        case DramCmd::ACT2: return act2_due && row == a.row;
        case DramCmd::PRE: return row >= 0 && !act2_due;
        case DramCmd::RD:
        case DramCmd::WR: return row == a.row && !act2_due;
        case DramCmd::PREA: {
            const int per_rank = org_.bank_groups * org_.banks_per_group;
            for (int i = a.rank * per_rank; i < (a.rank + 1) * per_rank; ++i)
                if (activating_[size_t(i)]) return false;
            return true;
        }
        case DramCmd::REFab: return !any_open(a.rank);
        case DramCmd::ACT_AB:
        case DramCmd::MODE:
            for (int r = 0; r < org_.ranks; ++r)
                if (any_open(r)) return false;
            return true;
        case DramCmd::MAC_AB:
            for (int64_t x : open_row_)
                if (x != a.row) return false;
            return true;
        default: return true;  // WR_GB, RD_OUT
    }
}

void DramChannel::issue(DramCmd cmd, const BankAddr& a, int64_t clk) {
    if (!legal(cmd, a))
        fail("DRAM command {} to rank {} bank group {} bank {} row {} is illegal in the current bank state "
             "(open row {})",
             cmd_name(cmd), a.rank, a.bank_group, a.bank, a.row, open_row_[bank_index(a)]);
    const int64_t e = earliest(cmd, a);
    if (clk < e) fail("DRAM command {} issued at cycle {} before its earliest legal cycle {}", cmd_name(cmd), clk, e);
    if (clk <= last_clk_) fail("DRAM command {} at cycle {}: the command bus already carried a command at cycle {}",
                               cmd_name(cmd), clk, last_clk_);
    last_clk_ = clk;
    ++counts_[int(cmd)];

    // Which nodes the command was issued "at": a bank command at its bank and ancestors; a rank
    // command at its rank; a channel command at the channel. Rules at level L apply to the node
    // of level L that contains the addressed bank (or the whole channel for channel commands).
    for (int ri : rules_by_prev_[int(cmd)]) {
        const TimingRule& r = rules_[ri];
        const int node = (scope_of(cmd) == Level::CHANNEL && r.level != Level::CHANNEL) ? -1 : node_index(r.level, a);
        auto apply = [&](int n) {
            int64_t t = clk + r.cycles;
            if (r.window > 1) {
                auto& h = history_[ri][n];
                h.push_back(clk);
                if (int(h.size()) > r.window) h.pop_front();
                if (int(h.size()) < r.window) return;
                t = h.front() + r.cycles;
            }
            int64_t& slot = next_[int(r.level)][size_t(n) * kNumCmds + int(r.next)];
            slot = std::max(slot, t);
        };
        if (node >= 0) {
            apply(node);
        } else {
            for (int n = 0; n < nodes_at(r.level); ++n) apply(n);
        }
    }

    switch (cmd) {
        case DramCmd::ACT:
            open_row_[bank_index(a)] = a.row;
            activating_[bank_index(a)] = two_part_act_;
            break;
        case DramCmd::ACT2: activating_[bank_index(a)] = 0; break;
        case DramCmd::PRE: open_row_[bank_index(a)] = -1; break;
        case DramCmd::PREA: {
            const int per_rank = org_.bank_groups * org_.banks_per_group;
            // PREA closes the rank; in a one-rank PIM channel that is every bank.
            for (int i = a.rank * per_rank; i < (a.rank + 1) * per_rank; ++i) open_row_[i] = -1;
            break;
        }
        case DramCmd::ACT_AB: std::fill(open_row_.begin(), open_row_.end(), a.row); break;
        default: break;
    }
}

}  // namespace duet::hw::dram
