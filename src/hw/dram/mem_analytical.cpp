// Closed-form estimate of a memory run (docs/hardware-model.md, "DRAM analytical model").
// Per channel the busy time is the largest of the resource bounds
//   data bus     n * nBL
//   column pace  n * nCCD                (nCCD_S, or nCCD_L for same-bank-group runs)
//   activation   a * max(nRRD_S, nFAW/4) / ranks
//   bank cycle   a * nRC / banks_touched
//   command bus  n + (p + 1) a           (RD/WR, and p ACT commands + PRE per row miss; p = 2 where
//                                         the standard activates in two parts, ACT-1 + ACT-2)
// plus the refreshes that fall due, k = floor((T_busy + k t_lost) / tREFI) each costing t_lost, and
// fill of the first access. n = requests of the busiest channel, a = its row activations.
#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <vector>

#include "hw/dram/mem_workload.h"

namespace duet::hw::dram {

namespace {

struct ChannelLoad {
    double n = 0;        // requests
    double acts = 0;     // row activations
    double same_bg = 0;  // share of consecutive column accesses within one bank group
    double banks = 1;    // banks touched
    double writes = 0;
};

// Stream and strided patterns are periodic: an in-order open-row walk over a bounded sample of
// the address sequence gives the row-miss share and the bank spread; scale to the whole run.
ChannelLoad sampled_load(const DramSpec& spec, const MemWorkload& w, const AddressMapping& map, int channels,
                         uint64_t n_total, int* used_channels) {
    const uint64_t sample = std::min<uint64_t>(n_total, 65536);
    std::vector<int64_t> open(size_t(channels) * size_t(spec.org.banks()), -1);
    std::vector<double> n(size_t(channels), 0), acts(size_t(channels), 0), same(size_t(channels), 0);
    std::vector<int> last_bg(size_t(channels), -1);
    std::vector<std::vector<char>> touched(size_t(channels), std::vector<char>(size_t(spec.org.banks()), 0));
    for (uint64_t i = 0; i < sample; ++i) {
        const DecodedAddr d = map.decode(request_address(spec, w, map.capacity_bytes(), i));
        const size_t c = size_t(d.channel);
        const int b = (d.bank.rank * spec.org.bank_groups + d.bank.bank_group) * spec.org.banks_per_group + d.bank.bank;
        int64_t& o = open[c * size_t(spec.org.banks()) + size_t(b)];
        if (o != d.bank.row) {
            acts[c] += 1;
            o = d.bank.row;
        }
        const int bg = d.bank.rank * spec.org.bank_groups + d.bank.bank_group;
        if (last_bg[c] == bg) same[c] += 1;
        last_bg[c] = bg;
        n[c] += 1;
        touched[c][size_t(b)] = 1;
    }
    size_t busiest = 0;
    for (size_t c = 1; c < n.size(); ++c)
        if (n[c] > n[busiest]) busiest = c;
    ChannelLoad L;
    *used_channels = 0;
    for (double x : n) *used_channels += x > 0;
    const double scale = double(n_total) / double(sample);
    L.n = n[busiest] * scale;
    L.acts = acts[busiest] * scale;
    L.same_bg = n[busiest] > 1 ? same[busiest] / (n[busiest] - 1) : 0;
    L.banks = 0;
    for (char t : touched[busiest]) L.banks += t;
    return L;
}

// "Ch" lowest and "Co" below "Ro", "Ba", "Ra": the layout a stream fills row by row.
bool row_filling(const std::string& m) {
    const auto co = m.find("Co");
    return m.rfind("Ch") == m.size() - 2 && co > m.find("Ro") && co > m.find("Ba") && co > m.find("Ra");
}

}  // namespace

double refreshes_due(double busy_cycles, double lost_per_refresh, double refi_cycles) {
    if (refi_cycles <= 0) return 0;
    // Smallest fixed point of k = floor((busy + k * lost) / tREFI): refreshes come due at
    // tREFI, 2 tREFI, ... of the run that they themselves lengthen.
    double k = 0;
    for (int it = 0; it < 64; ++it) {
        const double next = std::floor((busy_cycles + k * lost_per_refresh) / refi_cycles);
        if (next == k) break;
        k = next;
    }
    return k;
}

MemResult estimate_memory(const DramSpec& spec, const MemWorkload& w) {
    validate_workload(spec, w);
    const auto& t = spec.timing;
    const auto& o = spec.org;
    const int channels = workload_channels(spec, w);
    const uint64_t n_total = request_count(spec, w);
    ChannelLoad L;
    int used_channels = channels;
    if (w.pattern == Pattern::RANDOM) {
        // Uniform over the device: each channel gets n/C requests, a row hit only when two
        // queued requests share a bank and row (probability ~ depth / (banks * rows) ~ 0), and
        // FR-FCFS reorders across bank groups, so column spacing is nCCD_S.
        // A request's bursts share one activation.
        L.n = std::ceil(double(n_total) / channels);
        L.acts = std::ceil(L.n / bursts_per_request(spec, w));
        L.same_bg = 0;
        L.banks = o.banks();
    } else if (w.pattern == Pattern::STREAM && row_filling(w.mapping)) {
        // Channel bits lowest and columns below row/bank/rank bits: every channel gets n/C
        // consecutive bursts, each row is read whole, bank groups rotate if Bg sits below Co.
        const bool bg_low = w.mapping.find("Bg") > w.mapping.find("Co");
        const double groups = bg_low ? o.bank_groups * o.ranks : 1;
        L.n = std::ceil(double(n_total) / channels);
        L.acts = std::max(std::min(L.n, groups), std::ceil(L.n / o.columns_per_row()));
        L.same_bg = (bg_low || o.bank_groups == 1) ? 0 : 1;
        L.banks = std::min<double>(o.banks(), L.acts);
        used_channels = int(std::min<uint64_t>(uint64_t(channels), n_total));
    } else {
        AddressMapping map(o, channels, w.mapping);
        L = sampled_load(spec, w, map, channels, n_total, &used_channels);
    }
    L.writes = L.n * w.write_fraction;

    const double ccd = (1 - L.same_bg) * std::max(t.nCCD_S, t.nBL) + L.same_bg * t.nCCD_L;
    const double t_data = L.n * t.nBL;
    const double t_col = L.n * ccd;
    const double t_act = L.acts * std::max(double(t.nRRD_S), t.nFAW / 4.0) / o.ranks;
    const double t_bank = L.acts * t.nRC / std::max(1.0, L.banks);
    const double t_cmd = L.n + (t.act_commands + 1) * L.acts;
    // Read/write turnarounds: the write queue drains between its watermarks (3/4 and 1/4 of
    // the depth), so one RD->WR->RD round trip per depth/2 writes.
    const double turn = (t.nCL + t.nBL + 2 - t.nCWL + t.nRTW) + (t.nCWL + t.nBL + t.nWTR_S);
    const double t_turn = L.writes > 0 ? L.writes / std::max(1.0, w.queue_depth / 2.0) * turn : 0;
    const double t_busy = std::max({t_data, t_col, t_act, t_bank, t_cmd}) + t_turn;

    // Each refresh closes the rank (waiting tRTP after the last read), blocks for nRP + nRFC
    // and, for row-hit traffic, costs the re-activation nRCD before data flows again.
    const double hit = L.n > 0 ? std::max(0.0, 1.0 - L.acts / L.n) : 0;
    double n_refresh = 0, n_refresh_lost = 0;
    if (t.nREFI > 0) {
        // Row-miss traffic waits nRAS after its latest ACT before PREA and loses the rows it
        // opened meanwhile; row-hit traffic waits nRTP and re-opens its row (nRCD).
        const double lost = double(o.ranks) * t.nRFC + t.nRP + hit * (t.nRTP + t.nRCD) + (1 - hit) * t.nRAS;
        n_refresh = refreshes_due(t_busy, lost, t.nREFI);
        n_refresh_lost = n_refresh * lost;
    }
    const double fill = t.nRCD + t.nCL + t.nBL;
    const double cycles = t_busy + n_refresh_lost + fill;

    MemResult r;
    r.fidelity = "analytical";
    r.channels = channels;
    r.requests = n_total;
    r.bytes_requested = n_total * uint64_t(o.burst_bytes());
    r.bytes_served = r.bytes_requested;
    r.t_ns = cycles * t.tCK_ns;
    r.bw_gbps = double(r.bytes_served) / r.t_ns;
    r.peak_gbps = spec.channel_peak_gbps() * channels;
    // Little's law: a saturating front-end keeps the queue full, so a request waits
    // depth x (time per request) plus its own access.
    const double per_req = cycles / std::max(1.0, L.n);
    const double in_flight = std::min<double>(w.queue_depth, L.n);
    r.unloaded_latency_ns = double(t.nRCD + t.nCL + t.nBL) * t.tCK_ns;
    r.avg_latency_ns = (in_flight * per_req + (1 - hit) * t.nRCD + t.nCL + t.nBL) * t.tCK_ns;
    r.row_hit_rate = hit;
    const double scale = double(n_total) / std::max(1.0, L.n);  // all channels
    r.n_act = uint64_t(std::llround(L.acts * scale));
    r.n_act2 = t.act_commands == 2 ? r.n_act : 0;
    r.n_pre = r.n_act;
    r.n_wr = uint64_t(std::llround(L.writes * scale));
    r.n_rd = n_total - r.n_wr;
    r.n_ref = uint64_t(n_refresh) * uint64_t(used_channels) * uint64_t(o.ranks);
    r.energy_pj = memory_energy_pj(spec, r);
    return r;
}

}  // namespace duet::hw::dram

namespace duet::hw::dram {

double stream_bandwidth_gbps(const DramSpec& spec, int channels) {
    MemWorkload w;
    w.pattern = Pattern::STREAM;
    w.channels = channels;
    w.bytes = uint64_t(256) << 20;  // long enough for refresh to be in steady state
    return estimate_memory(spec, w).bw_gbps;
}

}  // namespace duet::hw::dram
