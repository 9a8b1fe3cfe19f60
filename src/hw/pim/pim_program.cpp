#include "hw/pim/pim_program.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "hw/dram/dram_channel.h"
#include "hw/dram/mem_workload.h"
#include "hw/dram/timing_table.h"

namespace duet::hw::pim {

namespace {

using dram::BankAddr;
using dram::refreshes_due;
using dram::DramCmd;

dram::PimTimingParams pim_params(const PimSpec& s) {
    return {s.timing.nCCD_AB, s.timing.nACT_AB, s.timing.nMAC_RD_OUT, s.timing.mode_switch_cycles, s.timing.nRCD_MAC};
}

// Interface both fidelities implement; the program below drives it.
class Backend {
public:
    virtual ~Backend() = default;
    virtual void mode() = 0;
    // Plain accesses to a reserved row (park reads, FIMDRAM's GRF/CRF fills and mode-change
    // writes): every bank of `cols` activated in order, then one RD or WR per entry, then PREA.
    // A mode change made of such writes counts as one mode switch.
    virtual void reserved(const std::vector<BankAddr>& cols, bool write, bool mode_change = false) = 0;
    virtual void wr_gb(int64_t bursts) = 0;
    virtual void macs(int64_t n) = 0;
    virtual void rd_out(int64_t bursts) = 0;
    virtual void close() = 0;
    virtual ProgramStats finish() = 0;
};

// Every command through the DRAM command engine.
class CommandBackend final : public Backend {
public:
    CommandBackend(const PimSpec& s, const GemvPlan& p)
        : t_(s.mem.timing), cpa_(p.cols_per_act), rows_(s.mem.org.rows), mode_cycles_(s.timing.mode_switch_cycles) {
        auto rules = dram::dram_rules(t_);
        auto extra = dram::pim_rules(t_, pim_params(s));
        rules.insert(rules.end(), extra.begin(), extra.end());
        ch_ = std::make_unique<dram::DramChannel>(s.mem.org, std::move(rules));
        next_ref_ = t_.nREFI > 0 ? t_.nREFI : INT64_MAX;
        col_ = cpa_;
    }
    void mode() override {
        refresh_if_due();
        close();
        last_mode_ = issue(DramCmd::MODE);
        ++st_.n_mode;
    }
    void reserved(const std::vector<BankAddr>& cols, bool write, bool mode_change) override {
        if (cols.empty()) return;
        if (mode_change) ++st_.n_mode;
        refresh_if_due();
        close();
        // The controller opens every bank before the first column is due (PIMSimulator's queue
        // issues ACTs to other banks ahead of the queued column commands).
        std::vector<BankAddr> opened;
        for (const BankAddr& a : cols) {
            if (std::find_if(opened.begin(), opened.end(), [&](const BankAddr& o) { return same_bank(o, a); }) !=
                opened.end())
                continue;
            issue(DramCmd::ACT, a);
            if (t_.act_commands == 2) issue(DramCmd::ACT2, a);  // LPDDR5: one command slot, no row timing
            opened.push_back(a);
        }
        for (const BankAddr& a : cols) issue(write ? DramCmd::WR : DramCmd::RD, a);
        st_.n_act += opened.size();
        (write ? st_.n_wr : st_.n_rd) += cols.size();
        reserved_open_ = true;
        close();
    }
    void wr_gb(int64_t b) override {
        for (int64_t i = 0; i < b; ++i) {
            refresh_if_due();
            issue(DramCmd::WR_GB);
        }
        st_.n_wr += uint64_t(b);
    }
    void macs(int64_t n) override {
        for (int64_t i = 0; i < n; ++i) {
            refresh_if_due();
            if (!open_ || col_ == cpa_) {
                if (col_ == cpa_) {
                    row_ = (row_ + 1) % rows_;
                    col_ = 0;
                }
                close();
                issue(DramCmd::ACT_AB, row_);
                ++st_.n_act;
                open_ = true;
            }
            issue(DramCmd::MAC_AB, row_);
            ++col_;
        }
        st_.n_mac += uint64_t(n);
    }
    void rd_out(int64_t b) override {
        for (int64_t i = 0; i < b; ++i) {
            refresh_if_due();
            last_rd_ = issue(DramCmd::RD_OUT);
        }
        st_.n_rd += uint64_t(b);
    }
    void close() override {
        if (!open_ && !reserved_open_) return;
        issue(DramCmd::PREA);
        ++st_.n_pre;
        open_ = reserved_open_ = false;
    }
    ProgramStats finish() override {
        int64_t end = now_;
        if (last_rd_ >= 0) end = std::max(end, last_rd_ + t_.nCL + t_.nBL);
        if (last_mode_ >= 0) end = std::max(end, last_mode_ + mode_cycles_);
        st_.end_cycle = double(end);
        return st_;
    }

private:
    static bool same_bank(const BankAddr& x, const BankAddr& y) {
        return x.rank == y.rank && x.bank_group == y.bank_group && x.bank == y.bank;
    }
    int64_t issue(DramCmd c, int64_t row = 0) { return issue(c, BankAddr{0, 0, 0, row}); }
    int64_t issue(DramCmd c, const BankAddr& a) {
        const int64_t t = std::max(now_, ch_->earliest(c, a));
        ch_->issue(c, a, t);
        now_ = t + 1;
        return t;
    }
    void refresh_if_due() {
        if (now_ < next_ref_) return;
        close();
        issue(DramCmd::REFab);
        ++st_.n_ref;
        next_ref_ += t_.nREFI;
    }

    dram::DramTiming t_;
    int64_t cpa_, rows_;
    int mode_cycles_;
    bool reserved_open_ = false;
    std::unique_ptr<dram::DramChannel> ch_;
    ProgramStats st_;
    int64_t now_ = 0, next_ref_ = 0, last_rd_ = -1, last_mode_ = -1;
    int64_t row_ = -1, col_ = 0;
    bool open_ = false;
};

// The same program in closed form per segment: a run of c MACs in one open row takes
// first + (c - 1) * nCCD_AB; a row change costs PREA at max(last MAC + nRTP, ACT + nRAS), ACT_AB
// at max(PREA + nRP, previous ACT + max(nRC, nACT_AB)), first MAC at ACT + nRCD_MAC. Refresh is
// added at the end: k = floor((T + k lost) / tREFI) refreshes, each losing
// lost = f (nRTP + nRP + nRFC + nRCD_MAC - nCCD_AB) + (1 - f)(nRP + nRFC), f = MAC share of the time.
class ClosedFormBackend final : public Backend {
public:
    ClosedFormBackend(const PimSpec& s, const GemvPlan& p)
        : t_(s.mem.timing), cpa_(p.cols_per_act), ccd_(s.timing.nCCD_AB),
          rc_(std::max(s.timing.nACT_AB, s.mem.timing.nRC)), mac_rd_(s.timing.nMAC_RD_OUT),
          mode_cycles_(s.timing.mode_switch_cycles), rcd_mac_(s.timing.nRCD_MAC) {
        sp_ = std::max(t_.nBL, t_.nCCD_S);
        t_mw_ = std::max(1, t_.nCL + t_.nBL + 2 - t_.nCWL + t_.nRTW);
        t_wm_ = t_.nCWL + t_.nBL + t_.nWTR_S;
        col_ = cpa_;
    }
    void mode() override {
        close();
        const double t = std::max({bus_ + 1, prea_ + t_.nRP, mode_ + mode_cycles_});
        mode_ = bus_ = t;
        ++st_.n_mode;
    }
    // Bank by bank, as the command level issues them: ACTs in order (nRRD_S/L by bank group,
    // four per nFAW), then the columns (nRCD or nRCDWR after their ACT, nCCD_S/L and nBL apart,
    // the bus turnaround after earlier reads or writes), then PREA (nRAS after the last ACT,
    // nRTP after a read or nCWL + nBL + nWR after a write).
    void reserved(const std::vector<BankAddr>& cols, bool write, bool mode_change) override {
        if (cols.empty()) return;
        if (mode_change) ++st_.n_mode;
        close();
        std::vector<std::pair<BankAddr, double>> acts;  // bank, ACT cycle
        double t = std::max({bus_ + 1, prea_ + t_.nRP, mode_ + mode_cycles_});
        for (const BankAddr& a : cols) {
            bool seen = false;
            for (const auto& [o, at] : acts) seen = seen || (o.bank_group == a.bank_group && o.bank == a.bank);
            if (seen) continue;
            if (!acts.empty()) {
                const auto& [prev, pt] = acts.back();
                t = std::max(t, pt + (prev.bank_group == a.bank_group ? t_.nRRD_L : t_.nRRD_S));
                if (acts.size() >= 4) t = std::max(t, acts[acts.size() - 4].second + t_.nFAW);
            }
            acts.emplace_back(a, t);
            t += 1;
        }
        double col = std::max(t, write ? rd_ + t_mw_ : wr_ + t_wm_);
        const BankAddr* prev = nullptr;
        for (const BankAddr& a : cols) {
            double at = 0;
            for (const auto& [o, ot] : acts)
                if (o.bank_group == a.bank_group && o.bank == a.bank) at = ot;
            if (prev) col += prev->bank_group == a.bank_group ? std::max(sp_, double(t_.nCCD_L)) : sp_;
            col = std::max(col, at + (write ? t_.nRCDWR : t_.nRCD));
            prev = &a;
        }
        (write ? wr_ : rd_) = col;
        prea_ = bus_ = std::max(col + (write ? t_.nCWL + t_.nBL + t_.nWR : t_.nRTP), acts.back().second + t_.nRAS);
        st_.n_act += acts.size();
        (write ? st_.n_wr : st_.n_rd) += cols.size();
        ++st_.n_pre;
    }
    void wr_gb(int64_t b) override {
        if (b <= 0) return;
        const double first = std::max({bus_ + 1, mac_ + t_mw_, rd_ + t_mw_, wr_ + sp_, mode_ + mode_cycles_});
        wr_ = bus_ = first + double(b - 1) * sp_;
        st_.n_wr += uint64_t(b);
    }
    void macs(int64_t n) override {
        st_.n_mac += uint64_t(n);
        while (n > 0) {
            if (!open_ || col_ == cpa_) {
                if (col_ == cpa_) col_ = 0;
                close();
                const double act = std::max({bus_ + 1, prea_ + t_.nRP, act_ + rc_, mode_ + mode_cycles_});
                act_ = bus_ = act;
                open_ = true;
                ++st_.n_act;
            }
            const int64_t c = std::min(n, cpa_ - col_);
            const double first =
                std::max({bus_ + 1, act_ + rcd_mac_, mac_ + ccd_, wr_ + t_wm_, rd_ + 1, mode_ + mode_cycles_});
            mac_ = bus_ = first + double(c - 1) * ccd_;
            col_ += c;
            n -= c;
        }
    }
    void rd_out(int64_t b) override {
        if (b <= 0) return;
        const double first = std::max({bus_ + 1, mac_ + mac_rd_, wr_ + t_wm_, rd_ + sp_, mode_ + mode_cycles_});
        rd_ = bus_ = first + double(b - 1) * sp_;
        st_.n_rd += uint64_t(b);
    }
    void close() override {
        if (!open_) return;
        prea_ = bus_ = std::max({bus_ + 1, mac_ + t_.nRTP, act_ + t_.nRAS});
        open_ = false;
        ++st_.n_pre;
    }
    ProgramStats finish() override {
        double end = bus_ + 1;
        end = std::max({end, rd_ + t_.nCL + t_.nBL, mode_ + mode_cycles_});
        if (t_.nREFI > 0) {
            // A refresh inside a MAC run closes the row and re-opens it; one during I/O or
            // between rows only waits for the precharge and tRFC.
            const double f_mac = std::min(1.0, double(st_.n_mac) * ccd_ / end);
            const double lost = f_mac * (t_.nRTP + t_.nRP + t_.nRFC + rcd_mac_ - ccd_) + (1 - f_mac) * (t_.nRP + t_.nRFC);
            const double k = refreshes_due(end, lost, t_.nREFI);
            end += k * lost;
            st_.n_ref = uint64_t(k);
            st_.n_act += uint64_t(std::llround(k * f_mac));
            st_.n_pre += uint64_t(std::llround(k * f_mac));
        }
        st_.end_cycle = end;
        return st_;
    }

private:
    static constexpr double kNever = -1e18;
    dram::DramTiming t_;
    int64_t cpa_;
    double ccd_, rc_, mac_rd_, mode_cycles_, rcd_mac_, sp_ = 0, t_mw_ = 0, t_wm_ = 0;
    double bus_ = -1, mac_ = kNever, act_ = kNever, prea_ = kNever, wr_ = kNever, rd_ = kNever, mode_ = kNever;
    int64_t col_ = 0;
    bool open_ = false;
    ProgramStats st_;
};

}  // namespace

ProgramStats run_channel_program(const PimSpec& s, const GemvPlan& p, int64_t tasks, bool command_level) {
    std::unique_ptr<Backend> b;
    if (command_level)
        b = std::make_unique<CommandBackend>(s, p);
    else
        b = std::make_unique<ClosedFormBackend>(s, p);
    const int64_t acc = s.unit.acc_registers;
    const int64_t e_bytes = p.operand_bits / 8;
    int64_t buf_elems = s.unit.input_buffer_bytes / e_bytes / p.elems_per_col * p.elems_per_col;
    buf_elems = std::max<int64_t>(buf_elems, p.elems_per_col);
    const int64_t burst = s.mem.org.burst_bytes();
    const int64_t bcast = std::min<int64_t>(p.k_split, p.units_per_channel);
    const bool per_tile = s.timing.mode_switch_per_tile;
    const int64_t tiles = (tasks + acc - 1) / acc;
    auto chunk_elems = [&](int64_t c) { return std::min(buf_elems, p.k_slice - c * buf_elems); };
    auto chunk_cols = [&](int64_t c) { return (chunk_elems(c) + p.elems_per_col - 1) / p.elems_per_col; };
    auto chunk_bursts = [&](int64_t c) { return (chunk_elems(c) * e_bytes * bcast + burst - 1) / burst; };
    auto tile_tasks = [&](int64_t t) { return std::min(acc, tasks - t * acc); };
    // A tile's column commands over chunk c: the operands, then (blocked formats) the scale
    // columns first needed in this chunk (a column holds the scales of several chunks and stays
    // in a register), loaded per task and vector like the weights.
    auto scale_cols = [&](int64_t c) {
        return p.scale_cols_for(c * buf_elems + chunk_elems(c)) - p.scale_cols_for(c * buf_elems);
    };
    auto tile_cols = [&](int64_t t, int64_t c) {
        return p.macs_for(tile_tasks(t), chunk_cols(c)) + tile_tasks(t) * scale_cols(c);
    };
    auto out_bursts = [&](int64_t t) { return (tile_tasks(t) * p.units_per_channel * p.out_bytes_per_task + burst - 1) / burst; };
    // Reserved-row accesses (PIMKernel.cpp: park rows 1 << 12, mode rows 0x17ff/0x1fff/0x3fff,
    // GRF/CRF at 0x3fff): the model's last row, outside the weights.
    const auto& org = s.mem.org;
    const int64_t rrow = org.rows - 1;
    auto park = [&] {  // one read per bank, bank groups fastest (parkIn/parkOut)
        std::vector<BankAddr> v;
        for (int i = 0; i < s.timing.park_reads; ++i)
            v.push_back({0, i % org.bank_groups, (i / org.bank_groups) % org.banks_per_group, rrow});
        b->reserved(v, /*write=*/false);
    };
    auto fill = [&](int64_t bursts) {  // input (or CRF) bursts into the units' registers
        if (!s.timing.input_in_row) return b->wr_gb(bursts);
        b->reserved(std::vector<BankAddr>(size_t(std::max<int64_t>(bursts, 0)), {0, 0, 1 % org.banks_per_group, rrow}),
                    /*write=*/true);  // computeGemv: bank 1 of bank group 0
    };
    auto mode = [&](int writes) {  // changePIMMode: writes to bank 0, 1 of bank groups 0, 2, ...
        if (writes <= 0) return b->mode();
        std::vector<BankAddr> v;
        for (int j = 0; j < writes; ++j) v.push_back({0, (2 * (j / 2)) % org.bank_groups, (j % 2) % org.banks_per_group, rrow});
        b->reserved(v, /*write=*/true, /*mode_change=*/true);
    };
    const auto& tm = s.timing;
    auto enter = [&] { if (per_tile) mode(tm.mode_writes_ab_pim); };  // AB -> AB-PIM (resets the CRF program counter)
    auto leave = [&] { if (per_tile) mode(tm.mode_writes_ab_pim); };  // AB-PIM -> AB
    park();  // park-in: every bank's row buffer to a known state
    mode(tm.mode_writes_sb_ab);  // SB -> AB
    fill(s.timing.crf_bursts);  // program the command registers (all-bank write)
    if (!per_tile) mode(tm.mode_writes_ab_pim);  // AB -> AB-PIM once for the run
    if (p.chunk_outer) {
        // Each input chunk of each vector once; every tile's partial sums for it read out.
        for (int64_t c = 0; c < p.chunks_per_tile; ++c) {
            for (int64_t v = 0; v < p.batch; ++v) {
                enter();
                fill(chunk_bursts(c));
                for (int64_t t = 0; t < tiles; ++t) {
                    b->macs(tile_cols(t, c));
                    b->rd_out(out_bursts(t));
                }
                leave();
            }
        }
    } else {
        bool loaded = false;
        for (int64_t t = 0; t < tiles; ++t) {
            for (int64_t v = 0; v < p.batch; ++v) {  // the weights are re-read for every vector
                enter();
                for (int64_t c = 0; c < p.chunks_per_tile; ++c) {
                    if (!p.input_once || !loaded) fill(chunk_bursts(c));
                    b->macs(tile_cols(t, c));
                }
                b->rd_out(out_bursts(t));
                leave();
            }
            loaded = true;
        }
    }
    b->close();
    if (!per_tile) mode(tm.mode_writes_ab_pim);  // AB-PIM -> AB
    mode(tm.mode_writes_ab_sb);  // AB -> SB
    park();  // park-out
    return b->finish();
}

}  // namespace duet::hw::pim
