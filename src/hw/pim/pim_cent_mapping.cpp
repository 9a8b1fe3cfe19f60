#include "hw/pim/pim_cent_mapping.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace duet::hw::pim {

CentCost& CentCost::operator+=(const CentCost& o) {
    t_ns += o.t_ns;
    host_wr += o.host_wr, host_rd += o.host_rd, wr_gb += o.wr_gb, mac += o.mac, rd_mac += o.rd_mac;
    wr_bias += o.wr_bias, ewmul += o.ewmul, act += o.act, mode += o.mode;
    return *this;
}

namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The commands of CENT's trace in issue order, timed one after another with the preset's
// timings (CENT's CXL controller has one DMA that issues them in order: aim_simulator
// src/memory_system/impl/aim_DRAM_system.cpp AiMDRAMSystem::tick takes one host request per cycle).
class CentProgram {
public:
    CentProgram(const PimSpec& s, int channels) : s_(s), t_(s.mem.timing) {
        const auto& o = s.mem.org;
        channels_ = channels > 0 ? channels : o.modelled_channels();
        banks_ = o.banks();
        burst_elems_ = o.burst_bytes() / 2;  // bf16 operands
        row_elems_ = o.page_bytes / 2;       // CENT's DRAM_column: 1024 bf16 per 2 KiB row
        sp_ = std::max(t_.nBL, t_.nCCD_S);
        const int acc_bytes = s.unit.acc == AccPrecision::FP32 ? 4 : 2;
        rd_mac_bursts_ = cdiv(int64_t(s.units_per_channel()) * acc_bytes, o.burst_bytes());
        mode_ = s.timing.mode_switch_per_tile ? s.timing.mode_switch_cycles : 0;
    }
    int channels() const { return channels_; }
    int banks() const { return banks_; }
    int64_t burst_elems() const { return burst_elems_; }
    int64_t row_elems() const { return row_elems_; }
    int64_t bursts(int64_t elems) const { return cdiv(elems, burst_elems_); }

    // n single-bank bursts through the DMA, spread over `spread` channels (bank-bound when all
    // go to one bank: nCCD_L apart). One row opening first (PREA + ACT + nRCD / nRCDWR).
    void host(int64_t n, bool write, int spread, bool one_bank = false) {
        if (n <= 0) return;
        const double per_ch = one_bank ? t_.nCCD_L : double(sp_) / std::max(1, spread);
        cyc_ += t_.nRP + (write ? t_.nRCDWR : t_.nRCD) +
                double(n) * std::max<double>(s_.host_request_cycles, per_ch);
        (write ? c_.host_wr : c_.host_rd) += uint64_t(n);
    }
    // AiM all-bank writes (WR_ABK) issued one per channel through the DMA.
    void wr_abk(int64_t n) { cyc_ += double(n) * std::max(s_.host_request_cycles, sp_); }
    void wr_gb(int64_t bursts, int ch) {
        cyc_ += double(bursts) * sp_;
        c_.wr_gb += uint64_t(bursts * ch);
    }
    // WR_BIAS, MAC_ABK of `cols` columns, RD_MAC: a mode switch into and out of the register
    // writes/reads around it (aim_simulator's TMOD), a row opening when the row changes.
    void mac_group(int64_t cols, bool new_row, int ch) {
        cyc_ += 2.0 * mode_ + sp_ + (new_row ? t_.nRP + s_.timing.nRCD_MAC : 0) + double(cols) * s_.timing.nCCD_AB +
                s_.timing.nMAC_RD_OUT + double(rd_mac_bursts_) * sp_;
        c_.wr_bias += uint64_t(ch), c_.rd_mac += uint64_t(ch), c_.mac += uint64_t(cols * ch);
        c_.mode += uint64_t(2 * ch);
        if (new_row) c_.act += uint64_t(ch);
    }
    void ewmul(int64_t cols) {
        cyc_ += t_.nRP + s_.timing.nRCD_EWMUL + double(cols) * s_.timing.nCCD_AB;
        c_.ewmul += uint64_t(cols * channels_);
        c_.act += uint64_t(channels_);
    }
    // COPY_BKGB / COPY_GBBK of `cols` bursts between a bank and the global buffer: a bank
    // read or write of that many columns (ASSUMPTION: timed as plain column accesses).
    void copy(int64_t cols, bool write) { cyc_ += t_.nRP + (write ? t_.nRCDWR : t_.nRCD) + double(cols) * sp_; }
    CentCost finish() {
        c_.t_ns = cyc_ * t_.tCK_ns;
        return c_;
    }

private:
    const PimSpec& s_;
    const dram::DramTiming& t_;
    int channels_ = 0, banks_ = 0, sp_ = 0, mode_ = 0;
    int64_t burst_elems_ = 0, row_elems_ = 0, rd_mac_bursts_ = 0;
    double cyc_ = 0;
    CentCost c_;
};

void check(const PimSpec& s, const CentBlockShape& b) {
    if (b.heads < 1 || b.kv_heads < 1 || b.heads % b.kv_heads != 0 || b.head_dim < 1 || b.context < 1 || b.devices < 1)
        fail("CENT mapping on '{}': heads {} / kv heads {} / head_dim {} / context {} / devices {} are not a valid shape",
             s.name, b.heads, b.kv_heads, b.head_dim, b.context, b.devices);
}

}  // namespace

CentCost cent_attention(const PimSpec& s, const CentBlockShape& b) {
    check(s, b);
    CentProgram p(s, b.channels);
    const int C = p.channels(), B = p.banks();
    const int64_t col = p.row_elems(), hd = b.head_dim, L = b.context, rep = b.heads / b.kv_heads;
    // Llama.py trace_only, "Store xk": the new position's K row(s) into one bank (64 bursts each).
    const int64_t k_rows = cdiv(b.kv_heads * hd, col);
    p.host(k_rows * p.bursts(col), /*write=*/true, 1, /*one_bank=*/true);
    // "Store xv" (intra-device): one WR_ABK per KV head and pass of 16 dimensions.
    p.wr_abk(b.kv_heads * cdiv(hd, B));
    // TransformerBlock.py Vector_Matrix_Mul_score_pim_only_trace: a bank per position over the
    // banks of all devices; per K row and position pass, q broadcast (a row's 1024 elements),
    // then per head in the row WR_BIAS, MAC_ABK of head_dim / 16 columns, RD_MAC.
    const int64_t fc_banks = int64_t(b.devices) * C * B, seq_iters = cdiv(L, fc_banks);
    for (int64_t r = 0; r < k_rows; ++r)
        for (int64_t it = 0; it < seq_iters; ++it) {
            const int64_t left_ch = it == seq_iters - 1 ? cdiv(L - fc_banks * it, B) : int64_t(b.devices) * C;
            const int ch = int64_t(b.devices) * C > C ? C : int(C / left_ch * left_ch);
            bool first = true;
            for (int64_t k = 0; k < rep; ++k) {
                p.wr_gb(p.bursts(col), ch);
                for (int64_t h = 0; h < col / hd; ++h, first = false) p.mac_group(p.bursts(hd), first, ch);
            }
        }
    // Softmax (trace_only, trace_softmax): scores of every head written to one bank per head in
    // every fourth bank (store_for_EWMUL_score_only_trace), scaled by EWMUL, read back; twice
    // (scale, then exp normalisation): 4 stores, 2 loads, 2 EWMUL passes.
    const int64_t score_rows = cdiv(L, col), heads_per_bank = cdiv(b.heads, int64_t(C) * 4);
    int64_t score_bursts = 0;
    for (int64_t k = 0; k < score_rows; ++k) score_bursts += p.bursts(std::min(col, L - k * col));
    const int spread = int(std::min<int64_t>(C, cdiv(std::min<int64_t>(b.heads, int64_t(C) * 4), 4)));
    for (int pass = 0; pass < 2; ++pass) {
        p.host(2 * b.heads * score_bursts, /*write=*/true, spread);
        for (int64_t j = 0; j < heads_per_bank; ++j)
            for (int64_t k = 0; k < score_rows; ++k) p.ewmul(p.bursts(std::min(col, L - k * col)));
        p.host(b.heads * score_bursts, /*write=*/false, spread);
    }
    // Vector_Matrix_Mul_output_pim_only_trace (intra-device): a channel per KV head, a bank per
    // head dimension; per 1024 positions the scores broadcast, then per 16 dimensions WR_BIAS,
    // MAC_ABK over the positions' columns (a new row each), RD_MAC.
    const int64_t kv_per_channel = cdiv(b.kv_heads, C);
    for (int64_t h = 0; h < kv_per_channel; ++h)
        for (int64_t k = 0; k < rep; ++k)
            for (int64_t r = 0; r < score_rows; ++r) {
                const int64_t cols = p.bursts(std::min(col, L - r * col));
                p.wr_gb(cols, C);
                for (int64_t d = 0; d < cdiv(hd, B); ++d) p.mac_group(cols, true, C);
            }
    return p.finish();
}

namespace {

// EWMUL operands sit in banks 0 and 1 of each group of 4 and the product in bank 2
// (aim_sim.py EWMUL); a vector of n elements is spread over `banks` banks, `len` elements each.
std::pair<int64_t, int64_t> spread(int64_t n, int64_t banks) {
    const int64_t len = cdiv(n, banks);
    return {len, cdiv(n, len)};
}

// Llama.py trace_only, one RMSNorm of `dim` elements.
void rmsnorm(CentProgram& p, int64_t dim) {
    const int C = p.channels();
    const int64_t tb = int64_t(C) * p.banks();
    const auto [nb_len, nb_banks] = spread(dim, tb / 2);
    const auto [ew_len, ew_banks] = spread(dim, tb / 4);
    p.host(2 * p.bursts(nb_len) * nb_banks, true, C);  // x into neighbour banks (x . x as MAC)
    p.mac_group(p.bursts(nb_len), true, C);
    p.host(2 * p.bursts(ew_len) * ew_banks, true, C);  // the broadcast 1/rms and x for EWMUL
    p.ewmul(p.bursts(ew_len));
    for (int g = 0; g < 4; ++g) p.copy(p.bursts(ew_len), false), p.copy(p.bursts(ew_len), true);
    p.ewmul(p.bursts(ew_len));  // times the norm weights
    p.host(p.bursts(ew_len) * ew_banks, false, C);
}

// Rotary of q (q_dim elements) and k (q_dim / rep): re-mapped xq and xk written, EWMUL, the
// results moved again (the trace issues those four transfers as writes:
// store_for_EWMUL_input_only_trace).
void rotary(CentProgram& p, int64_t q_dim, int64_t rep) {
    const int C = p.channels();
    const auto [ew_len, ew_banks] = spread(q_dim, int64_t(C) * p.banks() / 4);
    for (int i = 0; i < 2; ++i) {
        p.host(p.bursts(ew_len * 2) * ew_banks, true, C);
        p.host(p.bursts(ew_len / rep * 2) * ew_banks, true, C);
    }
    p.ewmul(p.bursts(q_dim));
    p.ewmul(p.bursts(q_dim / rep));
}

// SiLU(gate) x up over ffn_dim elements (trace_activation, the branch without iterations).
void silu_gate(CentProgram& p, int64_t ffn_dim) {
    const int C = p.channels();
    const auto [ff_len, ff_banks] = spread(ffn_dim, int64_t(C) * p.banks() / 4);
    p.host(2 * p.bursts(ff_len) * ff_banks, true, C);
    p.ewmul(p.bursts(ff_len));
    for (int g = 0; g < 4; ++g) p.copy(p.bursts(ff_len), false), p.copy(p.bursts(ff_len), true);
    p.host(p.bursts(ff_len) * ff_banks, true, C);
    p.ewmul(p.bursts(ff_len));
    p.host(p.bursts(ff_len) * ff_banks, false, C);
}

void check_positive(const PimSpec& s, const char* what, int64_t n) {
    if (n < 1) fail("CENT mapping on '{}': {} {} must be positive", s.name, what, n);
}

}  // namespace

CentCost cent_vector_ops(const PimSpec& s, const CentBlockShape& b) {
    check(s, b);
    if (b.dim < 1 || b.ffn_dim < 1) fail("CENT mapping on '{}': dim {} / ffn_dim {} must be positive", s.name, b.dim, b.ffn_dim);
    CentProgram p(s, b.channels);
    for (int norm = 0; norm < 2; ++norm) rmsnorm(p, b.dim);  // attention and FFN norms
    rotary(p, b.dim, b.heads / b.kv_heads);
    silu_gate(p, b.ffn_dim);
    return p.finish();
}

CentCost cent_rmsnorm(const PimSpec& s, int64_t dim, int channels) {
    check_positive(s, "RMSNorm width", dim);
    CentProgram p(s, channels);
    rmsnorm(p, dim);
    return p.finish();
}

CentCost cent_rotary(const PimSpec& s, int64_t q_dim, int64_t rep, int channels) {
    check_positive(s, "rotary q width", q_dim);
    check_positive(s, "rotary heads per KV head", rep);
    CentProgram p(s, channels);
    rotary(p, q_dim, rep);
    return p.finish();
}

CentCost cent_silu_gate(const PimSpec& s, int64_t ffn_dim, int channels) {
    check_positive(s, "gate width", ffn_dim);
    CentProgram p(s, channels);
    silu_gate(p, ffn_dim);
    return p.finish();
}

}  // namespace duet::hw::pim
