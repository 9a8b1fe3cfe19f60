#include "sim/scale_out.h"

#include <algorithm>

#include "core/error.h"
#include "graph/parallel.h"

namespace duet::sim {

std::vector<RankMachine> split_machine(const SimHardware& hw, int tp, int pp) {
    if (tp < 1 || pp < 1) fail("--tp = {} and --pp = {} are not allowed (allowed: 1 or more each)", tp, pp);
    std::vector<RankMachine> out;
    const std::vector<int> npus = hw.devices_of(DeviceKind::NPU), pims = hw.devices_of(DeviceKind::PIM),
                           cpus = hw.devices_of(DeviceKind::CPU);
    const int ranks = tp * pp;
    for (int q = 0; q < ranks; ++q) {
        RankMachine m;
        m.stage = q / tp;
        m.rank = q % tp;
        if (ranks == 1) {  // the whole machine, unchanged
            m.hw = hw;
            for (size_t d = 0; d < hw.devices.size(); ++d) m.device_map.push_back(int(d));
            for (size_t l = 0; l < hw.links.size(); ++l) m.link_map.push_back(int(l));
            m.pim = pims.empty() ? -1 : pims[0];
            out.push_back(std::move(m));
            continue;
        }
        m.npu = npus[size_t(q) % npus.size()];
        m.hw = hw;
        m.hw.devices.clear();
        m.hw.links.clear();
        m.hw.add_device(DeviceKind::NPU, hw.devices[size_t(m.npu)].model);
        m.device_map.push_back(m.npu);
        if (!pims.empty()) {
            m.pim = pims[size_t(q) % pims.size()];
            const SimDevice& p = hw.devices[size_t(m.pim)];
            m.hw.add_device(DeviceKind::PIM, p.model, hw.links[size_t(p.link)]);
            m.device_map.push_back(m.pim);
            m.link_map.push_back(p.link);
        }
        if (!cpus.empty()) {  // the host CPU (placement pim_only): ranks share it in turn
            const int c = cpus[size_t(q) % cpus.size()];
            const SimDevice& d = hw.devices[size_t(c)];
            m.hw.add_device(DeviceKind::CPU, d.model, hw.links[size_t(d.link)]);  // its link to npu0 (shared memory)
            m.device_map.push_back(c);
            m.link_map.push_back(d.link);
        }
        // one rank's share of the whole machine's memory figures
        m.hw.mem_bw_gbps = hw.mem_bw_gbps / double(npus.size());
        m.hw.pim_internal_bw_gbps = pims.empty() ? 0 : hw.pim_internal_bw_gbps / double(pims.size());
        out.push_back(std::move(m));
    }
    return out;
}

int comm_device(const SimHardware& hw, const RankMachine& m, int device) {
    const SimDevice& d = hw.devices[size_t(device)];
    if (d.kind == DeviceKind::PIM && d.link >= 0 && hw.links[size_t(d.link)].shared_memory) return m.npu;
    return device;
}

namespace {

void scale_rows(OpRecord& r, int tp) {
    const int64_t m = (r.m + tp - 1) / tp;
    const double f = r.m > 0 ? double(m) / double(r.m) : 0;
    r.in_bytes = uint64_t(double(r.in_bytes) * f);
    r.out_bytes = uint64_t(double(r.out_bytes) * f);
    r.flops *= f;
    r.m = m;
}

}  // namespace

void apply_flashcomm(OpTrace& ops, int tp) {
    for (size_t i = 0; i + 3 < ops.size(); ++i) {
        OpRecord &rs = ops[i], &ag = ops[i + 1], &add = ops[i + 2], &norm = ops[i + 3];
        if (rs.kind != OpKind::REDUCE_SCATTER || ag.kind != OpKind::ALL_GATHER || add.kind != OpKind::ADD ||
            norm.kind != OpKind::RMSNORM || norm.m != add.m)
            continue;
        scale_rows(add, tp);
        scale_rows(norm, tp);
        norm.sibling_of_prev = false;
        const OpRecord gather = ag;
        ops[i + 1] = add;
        ops[i + 2] = norm;
        ops[i + 3] = gather;
        i += 3;
    }
}

Plan plan_parallel_generation(const ModelShape& shape, int64_t seq_len, int64_t gen_len, int32_t batch,
                              const graph::GraphOptions& go, int micro_batches) {
    if (micro_batches < 1 || batch % micro_batches != 0)
        fail("{} micro-batches do not divide the batch of {} sequences (allowed: a divisor of {})", micro_batches,
             batch, batch);
    // expert parallel with data-parallel attention: each attention group (ep / tp ranks) serves its
    // share of a micro-batch's sequences (the largest share); with tp == ep every rank all of them
    const int dp = graph::attention_dp(go.tp, go.ep);
    const int32_t n_seq = (batch / micro_batches + dp - 1) / dp;
    auto stage_plan = [&](int stage) {
        graph::GraphOptions o = go;
        o.tp_rank = 0;
        o.ep_rank = 0;
        o.pp_stage = stage;
        Plan p = plan_generation(shape, seq_len, gen_len, n_seq, o);
        if (go.flashcomm && go.tp > 1) apply_flashcomm(p.ops, go.tp);
        return p;
    };
    Plan first = stage_plan(0);
    for (int s = 1; s < go.pp; ++s) first.next_stages.push_back(stage_plan(s));
    return first;
}

namespace {

// The links a message from x to y occupies (none through shared memory).
void links_between(const SimHardware& hw, int x, int y, std::vector<int>& out) {
    if (x == y) return;
    const int direct = hw.link_between(x, y);
    if (direct >= 0) {
        if (!hw.links[size_t(direct)].shared_memory) out.push_back(direct);
        return;
    }
    for (int d : {x, y}) {
        const int l = hw.devices[size_t(d)].link;
        if (l >= 0 && !hw.links[size_t(l)].shared_memory) out.push_back(l);
    }
}

// The slowest pair of the algorithm's pairs (ring: neighbours; mesh: every pair).
CollectiveTime slowest(const SimHardware& hw, CollectiveKind kind, CollectiveAlgo algo, const std::vector<int>& devs,
                       double n_bytes, const ExpansionCost& launch, std::vector<int>& used) {
    const int p = int(devs.size());
    CollectiveTime worst = collective_time(kind, algo, p, n_bytes, shared_memory_link(), launch);
    const auto pair = [&](int a, int b) {
        const CollectiveTime t = collective_time(kind, algo, p, n_bytes, hw.path(devs[size_t(a)], devs[size_t(b)]), launch);
        if (t.total_ns() > worst.total_ns()) worst = t;
        links_between(hw, devs[size_t(a)], devs[size_t(b)], used);
    };
    for (int a = 0; a < p; ++a) {
        if (algo == CollectiveAlgo::RING) pair(a, (a + 1) % p);  // pairwise, mesh, multicast: every pair
        else
            for (int b = a + 1; b < p; ++b) pair(a, b);
    }
    std::sort(used.begin(), used.end());
    used.erase(std::unique(used.begin(), used.end()), used.end());
    return worst;
}

// Every pair of `devices` is joined through a multicasting switch (and `kind` can use it).
bool multicast_fabric(const SimHardware& hw, CollectiveKind kind, const std::vector<int>& devices) {
    if (devices.size() < 2) return false;
    for (size_t a = 0; a < devices.size(); ++a)
        for (size_t b = a + 1; b < devices.size(); ++b)
            if (devices[a] == devices[b] ||
                !collective_algo_applies(kind, CollectiveAlgo::MULTICAST, hw.path(devices[a], devices[b])))
                return false;
    return true;
}

}  // namespace

PricedCollective price_collective(const SimHardware& hw, CollectiveKind kind, const std::vector<int>& devices,
                                  double n_bytes, const ExpansionCost& launch) {
    bool full_mesh = true;
    for (size_t a = 0; a < devices.size(); ++a)
        for (size_t b = a + 1; b < devices.size(); ++b) {
            const int x = devices[a], y = devices[b];
            full_mesh = full_mesh && (x == y || hw.link_between(x, y) >= 0 || hw.path(x, y).shared_memory);
        }
    PricedCollective ring, mesh, multicast;
    const CollectiveAlgo stepwise = kind == CollectiveKind::ALL_TO_ALL ? CollectiveAlgo::PAIRWISE : CollectiveAlgo::RING;
    ring.time = slowest(hw, kind, stepwise, devices, n_bytes, launch, ring.links);
    if (!full_mesh || kind == CollectiveKind::POINT_TO_POINT) return ring;
    mesh.time = slowest(hw, kind, CollectiveAlgo::MESH, devices, n_bytes, launch, mesh.links);
    PricedCollective& best = mesh.time.total_ns() <= ring.time.total_ns() ? mesh : ring;
    if (!multicast_fabric(hw, kind, devices)) return best;
    multicast.time = slowest(hw, kind, CollectiveAlgo::MULTICAST, devices, n_bytes, launch, multicast.links);
    return multicast.time.total_ns() < best.time.total_ns() ? multicast : best;
}

double Intervals::uncovered_by(Intervals cover) const {
    std::vector<std::pair<double, double>> a = spans;
    // a device's compute spans arrive in order (its queue is FIFO): sort only when needed
    if (!std::is_sorted(a.begin(), a.end())) std::sort(a.begin(), a.end());
    if (!std::is_sorted(cover.spans.begin(), cover.spans.end())) std::sort(cover.spans.begin(), cover.spans.end());
    double total = 0;
    size_t c = 0;
    double at = -1e300;  // union sweep of a: [cur_b, cur_e)
    for (size_t i = 0; i < a.size();) {
        double b = std::max(a[i].first, at), e = a[i].second;
        for (++i; i < a.size() && a[i].first <= e; ++i) e = std::max(e, a[i].second);
        if (e <= b) continue;
        at = e;
        // subtract the covering intervals that meet [b, e)
        double len = e - b;
        while (c < cover.spans.size() && cover.spans[c].second <= b) ++c;
        double cur = b;
        for (size_t k = c; k < cover.spans.size() && cover.spans[k].first < e; ++k) {
            const double cb = std::max(cover.spans[k].first, cur), ce = std::min(cover.spans[k].second, e);
            if (ce > cb) {
                len -= ce - cb;
                cur = ce;
            }
        }
        total += len;
    }
    return total;
}

}  // namespace duet::sim
