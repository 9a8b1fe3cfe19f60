// Command-level memory run: per channel, read and write queues filled in program order by a
// saturating front-end, an FR-FCFS scheduler (ready row hits first, then the oldest ready
// command), write drain between watermarks, open-row policy and all-bank refresh every tREFI.
// Where the standard activates in two parts (LPDDR5), ACT-2 takes the first command slot after
// ACT-1: tAAD is a maximum, and the slot is what it costs either way.
#include <algorithm>
#include <limits>
#include <vector>

#include "core/error.h"
#include "hw/dram/dram_channel.h"
#include "hw/dram/mem_workload.h"

namespace duet::hw::dram {

namespace {

uint64_t mix64(uint64_t x) {  // splitmix64 finaliser
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

struct Req {
    BankAddr a;
    bool write = false;
    int64_t arrival = 0;
};

struct ChannelStats {
    int64_t end_cycle = 0;
    double latency_sum_cycles = 0;
    uint64_t served = 0;
};

bool is_column(DramCmd c) { return c == DramCmd::RD || c == DramCmd::WR; }

DramCmd needed(const DramChannel& ch, const Req& r) {
    const int64_t open = ch.open_row(r.a);
    if (open < 0) return DramCmd::ACT;
    if (open != r.a.row) return DramCmd::PRE;
    return r.write ? DramCmd::WR : DramCmd::RD;
}

// Whether a queued request still hits the row open in `a`'s bank (then it is not closed yet).
bool has_pending_hit(const DramChannel& ch, const std::vector<Req>& q, const BankAddr& a) {
    const int64_t open = ch.open_row(a);
    for (const Req& r : q)
        if (r.a.rank == a.rank && r.a.bank_group == a.bank_group && r.a.bank == a.bank && r.a.row == open) return true;
    return false;
}

ChannelStats run_channel(DramChannel& ch, const DramTiming& t, const std::vector<Req>& reqs, int depth) {
    ChannelStats st;
    const int64_t kInf = std::numeric_limits<int64_t>::max() / 4;
    const int hi = std::max(1, depth * 3 / 4), lo = depth / 4;
    std::vector<Req> rq, wq;
    rq.reserve(size_t(depth));
    wq.reserve(size_t(depth));
    size_t next = 0;
    int64_t now = 0;
    int64_t next_ref = t.nREFI > 0 ? t.nREFI : kInf;
    bool draining = false;
    int refresh_left = 0;
    const int ranks = ch.org().ranks;
    bool act2_due = false;  // an ACT-1 was issued at act1_clk to act2_bank
    BankAddr act2_bank;
    int64_t act1_clk = 0;
    while (next < reqs.size() || !rq.empty() || !wq.empty()) {
        while (next < reqs.size()) {
            auto& q = reqs[next].write ? wq : rq;
            if (int(q.size()) >= depth) break;
            q.push_back(reqs[next]);
            q.back().arrival = now;
            ++next;
        }
        if (act2_due) {  // before refresh: a bank between ACT-1 and ACT-2 cannot be precharged
            const int64_t e = std::max(now, ch.earliest(DramCmd::ACT2, act2_bank));
            DUET_CHECK(e <= act1_clk + t.nAAD, "ACT-2 at cycle {} misses tAAD after ACT-1 at {}", e, act1_clk);
            ch.issue(DramCmd::ACT2, act2_bank, e);
            act2_due = false;
            now = e + 1;
            continue;
        }
        if (refresh_left == 0 && now >= next_ref) {  // a refresh round comes due
            refresh_left = ranks;
            next_ref += t.nREFI;
        }
        if (refresh_left > 0) {  // refresh has priority: close the rank, then REFab
            BankAddr a{ranks - refresh_left, 0, 0, 0};
            const DramCmd c = ch.any_open(a.rank) ? DramCmd::PREA : DramCmd::REFab;
            const int64_t e = std::max(now, ch.earliest(c, a));
            if (e > now) {
                now = e;
                continue;
            }
            ch.issue(c, a, now);
            if (c == DramCmd::REFab) --refresh_left;
            now += 1;
            continue;
        }
        if (!draining && (int(wq.size()) >= hi || (rq.empty() && !wq.empty()))) draining = true;
        if (draining && (wq.empty() || (int(wq.size()) <= lo && !rq.empty()))) draining = false;
        auto& q = draining ? wq : rq;
        int pick = -1;
        DramCmd pick_cmd = DramCmd::ACT;
        int64_t min_t = kInf;
        for (int i = 0; i < int(q.size()); ++i) {
            const DramCmd c = needed(ch, q[size_t(i)]);
            const int64_t e = std::max(now, ch.earliest(c, q[size_t(i)].a));
            if (e == now) {
                if (is_column(c)) {
                    pick = i;
                    pick_cmd = c;
                    break;  // oldest ready row hit
                }
                if (pick < 0 && !(c == DramCmd::PRE && has_pending_hit(ch, q, q[size_t(i)].a))) {
                    pick = i;
                    pick_cmd = c;
                }
            }
            min_t = std::min(min_t, e);
        }
        if (pick < 0) {
            now = std::max(now + 1, std::min(min_t, refresh_left == 0 ? next_ref : now + 1));
            continue;
        }
        Req r = q[size_t(pick)];
        ch.issue(pick_cmd, r.a, now);
        if (pick_cmd == DramCmd::ACT && t.act_commands == 2) {
            act2_due = true;
            act2_bank = r.a;
            act1_clk = now;
        }
        if (is_column(pick_cmd)) {
            const int64_t done = now + (r.write ? t.nCWL : t.nCL) + t.nBL;
            st.latency_sum_cycles += double(done - r.arrival);
            st.end_cycle = std::max(st.end_cycle, done);
            ++st.served;
            q.erase(q.begin() + pick);
        }
        now += 1;
    }
    return st;
}

}  // namespace

Pattern pattern_from_name(const std::string& name) {
    if (name == "stream") return Pattern::STREAM;
    if (name == "random") return Pattern::RANDOM;
    if (name == "strided") return Pattern::STRIDED;
    fail("--pattern '{}' is not known (allowed: stream, random, strided)", name);
}

const char* pattern_name(Pattern p) {
    switch (p) {
        case Pattern::STREAM: return "stream";
        case Pattern::RANDOM: return "random";
        default: return "strided";
    }
}

int workload_channels(const DramSpec& spec, const MemWorkload& w) {
    return w.channels > 0 ? w.channels : spec.org.modelled_channels();
}

int bursts_per_request(const DramSpec& spec, const MemWorkload& w) {
    const uint64_t b = uint64_t(spec.org.burst_bytes());
    return int(std::max<uint64_t>(1, w.request_bytes / b));
}

uint64_t request_count(const DramSpec& spec, const MemWorkload& w) {
    const uint64_t b = uint64_t(spec.org.burst_bytes());
    return (w.bytes + b - 1) / b;
}

void validate_workload(const DramSpec& spec, const MemWorkload& w) {
    const uint64_t b = uint64_t(spec.org.burst_bytes());
    if (w.bytes == 0) fail("--bytes must be > 0");
    if (w.pattern == Pattern::STRIDED && (w.stride_bytes < b))
        fail("--stride {} is below one burst of {} ({} bytes); use stream for contiguous data", w.stride_bytes,
             spec.name, b);
    if (w.write_fraction < 0 || w.write_fraction > 1)
        fail("write fraction {} is out of range (allowed: 0 to 1)", w.write_fraction);
    if (w.channels < 0 || w.channels > 4096) fail("--channels {} is out of range (allowed: 1 to 4096)", w.channels);
    if (w.request_bytes > b && (w.request_bytes % b != 0 || w.request_bytes > uint64_t(spec.org.page_bytes)))
        fail("--request-bytes {} is not allowed for {} (allowed: up to one {} B burst, or whole bursts up to the {} B row)",
             w.request_bytes, spec.name, b, spec.org.page_bytes);
    if (w.request_bytes == 0) fail("--request-bytes must be > 0");
    if (w.queue_depth < 4 || w.queue_depth > 1024)
        fail("queue depth {} is out of range (allowed: 4 to 1024)", w.queue_depth);
}

uint64_t request_address(const DramSpec& spec, const MemWorkload& w, uint64_t capacity_bytes, uint64_t i) {
    const uint64_t b = uint64_t(spec.org.burst_bytes());
    switch (w.pattern) {
        case Pattern::STREAM: return (i * b) % capacity_bytes;
        case Pattern::STRIDED: return ((i * w.stride_bytes) / b * b) % capacity_bytes;
        default: {
            // Every burst of one request decodes to the same bank and row (the controller
            // serves them as row hits after one activation).
            const uint64_t req = i / uint64_t(bursts_per_request(spec, w));
            return (mix64(w.seed * 0x100000001b3ull + req) % (capacity_bytes / b)) * b;
        }
    }
}

bool request_is_write(const MemWorkload& w, uint64_t i) {
    if (w.write_fraction <= 0) return false;
    return double(mix64(i ^ 0x5bd1e995ull) >> 11) * 0x1.0p-53 < w.write_fraction;
}

MemResult simulate_memory(const DramSpec& spec, const MemWorkload& w) {
    validate_workload(spec, w);
    const int channels = workload_channels(spec, w);
    AddressMapping map(spec.org, channels, w.mapping);
    const uint64_t n = request_count(spec, w);
    std::vector<std::vector<Req>> per_ch;
    per_ch.resize(size_t(channels));
    for (uint64_t i = 0; i < n; ++i) {
        const DecodedAddr d = map.decode(request_address(spec, w, map.capacity_bytes(), i));
        per_ch[size_t(d.channel)].push_back({d.bank, request_is_write(w, i / uint64_t(bursts_per_request(spec, w))), 0});
    }
    MemResult r;
    r.fidelity = "command";
    r.channels = channels;
    r.requests = n;
    r.bytes_requested = n * uint64_t(spec.org.burst_bytes());
    const auto rules = dram_rules(spec.timing);
    int64_t end = 0;
    double lat = 0;
    for (auto& reqs : per_ch) {
        if (reqs.empty()) continue;
        DramChannel ch(spec.org, rules);
        const ChannelStats st = run_channel(ch, spec.timing, reqs, w.queue_depth);
        end = std::max(end, st.end_cycle);
        lat += st.latency_sum_cycles;
        r.bytes_served += st.served * uint64_t(spec.org.burst_bytes());
        r.n_act += ch.count(DramCmd::ACT);  // activations (ACT-1 where there are two parts)
        r.n_act2 += ch.count(DramCmd::ACT2);
        r.n_pre += ch.count(DramCmd::PRE) + ch.count(DramCmd::PREA);
        r.n_rd += ch.count(DramCmd::RD);
        r.n_wr += ch.count(DramCmd::WR);
        r.n_ref += ch.count(DramCmd::REFab);
    }
    const double tck = spec.timing.tCK_ns;
    r.t_ns = double(end) * tck;
    r.bw_gbps = r.t_ns > 0 ? double(r.bytes_served) / r.t_ns : 0;
    r.peak_gbps = spec.channel_peak_gbps() * channels;
    r.avg_latency_ns = n ? lat / double(n) * tck : 0;
    r.unloaded_latency_ns = double(spec.timing.nRCD + spec.timing.nCL + spec.timing.nBL) * tck;
    r.row_hit_rate = (r.n_rd + r.n_wr) ? std::max(0.0, 1.0 - double(r.n_act) / double(r.n_rd + r.n_wr)) : 0;
    r.energy_pj = memory_energy_pj(spec, r);
    return r;
}

double memory_energy_pj(const DramSpec& spec, const MemResult& r) {
    const auto& e = spec.energy;
    if (!e.published) return 0;
    const double bits = double(spec.org.burst_bytes()) * 8;
    return double(r.n_act) * e.act_pj + double(r.n_rd) * bits * e.rd_pj_per_bit +
           double(r.n_wr) * bits * e.wr_pj_per_bit + double(r.n_ref) * e.ref_pj +
           e.background_mw * r.t_ns * r.channels;  // mW x ns = pJ
}

}  // namespace duet::hw::dram
