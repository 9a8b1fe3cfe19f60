#include "sim/timeline.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include <fmt/format.h>

#include "core/log.h"
#include "sim/op_shape.h"

namespace duet::sim {
namespace {

// Device estimates repeat across layers and steps: memoise them per (unit, shape).
struct ShapeKey {
    int unit, cls;
    int64_t m, n, k, h, hkv;
    uint64_t wb, ib, ob;
    bool operator==(const ShapeKey&) const = default;
};
struct ShapeKeyHash {
    size_t operator()(const ShapeKey& s) const {
        uint64_t h = 1469598103934665603ull;
        for (uint64_t v : {uint64_t(s.unit), uint64_t(s.cls), uint64_t(s.m), uint64_t(s.n), uint64_t(s.k),
                           uint64_t(s.h), uint64_t(s.hkv), s.wb, s.ib, s.ob})
            h = (h ^ v) * 1099511628211ull;
        return size_t(h);
    }
};

class CostCache {
public:
    explicit CostCache(const SimHardware& hw) : hw_(hw) {}
    hw::Cost get(Unit u, const hw::OpShape& s) {
        ShapeKey key{int(u), int(s.cls), s.m, s.n, s.k, s.n_head, s.n_head_kv, s.weight_bytes, s.in_bytes, s.out_bytes};
        auto it = cache_.find(key);
        if (it != cache_.end()) return it->second;
        const hw::Device* d = u == Unit::NPU ? hw_.npu : hw_.pim;
        hw::Cost c = d->estimate(s);
        cache_.emplace(key, c);
        return c;
    }

private:
    const SimHardware& hw_;
    std::unordered_map<ShapeKey, hw::Cost, ShapeKeyHash> cache_;
};

std::string op_label(const OpRecord& r) {
    const char* role = r.kind == OpKind::MATMUL ? weight_role_name(r.role) : "";
    if (r.layer < 0) return fmt::format("{} {}", op_kind_name(r.kind), role);
    return fmt::format("L{} {} {}", r.layer, op_kind_name(r.kind), role);
}

}  // namespace

const char* track_name(Track t) {
    switch (t) {
        case Track::NPU: return "NPU";
        case Track::PIM: return "PIM";
        case Track::CONVERT: return "NPU conversion (PIM->NZ)";
        case Track::HOST: return "host launch";
    }
    return "?";
}

Timeline simulate_timeline(const ModelShape& shape, const Plan& plan, const Placer& placer, const RunOptions& opts,
                           const SimHardware& hw) {
    Timeline tl;
    CostCache costs(hw);
    const int64_t D = opts.prefetch_depth;
    const bool coop_layout = opts.placement.policy != Policy::NPU_ONLY;
    double t = 0;          // completion of everything issued so far (the dependency chain)
    double unit_free[kUnits] = {0, 0};
    double group_ready = 0;  // inputs of the current sibling group (Q/K/V, gate/up) ready
    double conv_free = 0;  // converter available (finished its last block)
    double gate = 0;       // first prefetch buffer of the next matmul frees up
    double prev_forward_end = 0;
    auto emit = [&](Track tr, std::string name, double start, double dur, Phase ph) {
        if (opts.record_events && dur > 0) tl.events.push_back({tr, std::move(name), start, dur, ph});
    };

    for (const ForwardSpan& fw : plan.forwards) {
        PhaseStats& ps = fw.phase == Phase::PREFILL ? tl.prefill : tl.decode;
        const double fw_start = t;
        for (size_t i = fw.begin; i < fw.end; ++i) {
            const OpRecord& r = plan.ops[i];
            hw::OpShape s = to_op_shape(r);
            int repeat = 1;
            if (r.phase == Phase::DECODE && r.kind == OpKind::MATMUL && r.n_seq > 1 && !opts.weight_base_shared) {
                // every sequence streams its own copy of the weights
                repeat = r.n_seq;
                s.m = r.m / r.n_seq;
                s.cls = s.m == 1 ? hw::OpClass::GEMV : hw::OpClass::GEMM;
                s.in_bytes /= uint64_t(repeat);
                s.out_bytes /= uint64_t(repeat);
                s.flops /= repeat;
            }
            const Unit u = placer.place(r, s);
            const hw::Cost c = costs.get(u, s);
            const double op_ns = c.t_ns * repeat;
            UnitStats& us = ps.unit[int(u)];
            us.busy_ns += op_ns;
            us.bytes_moved += c.bytes_moved * repeat;
            us.weight_bytes += double(s.weight_bytes) * repeat;
            us.energy_pj += c.energy_pj * repeat;
            us.launch_ns += c.t_launch_ns * repeat;
            us.ops += repeat;

            const bool converts = u == Unit::NPU && r.kind == OpKind::MATMUL && coop_layout &&
                                  placer.pim_layout(r.layer) && !(opts.preconvert_first_token && r.layer == 0) &&
                                  !(r.phase == Phase::PREFILL && !opts.zero_copy_switch);
            // Siblings in the graph (Q, K, V; gate, up: same input, no dependency) overlap on
            // different units; everything else waits for all before it.
            const bool sibling = i > fw.begin && r.sibling_of_prev;
            if (!sibling) group_ready = t;
            const double T0 = std::max(group_ready, unit_free[int(u)]);
            double end = T0 + op_ns;
            if (converts) {
                const PimMatrixInfo pm = hw.layout->pim(r.n, r.k, r.weight_dtype);
                const double N = double(std::max<int64_t>(1, pm.n_blocks));
                const double cb = pm.to_nz_ns / N, pb = op_ns / N;
                const double S = std::max(conv_free, gate);
                double conv_end;
                if (D == 0) {
                    end = std::max(T0, S + cb) + pb + (N - 1) * (cb + pb);
                    conv_end = end - pb;
                } else {
                    double k0 = T0 > S ? std::min({std::floor((T0 - S) / cb), double(D + 1), N}) : 0;
                    if (k0 <= 0) {
                        end = std::max({T0 + N * pb, S + cb + N * pb, S + N * cb + pb});
                        conv_end = S + N * cb;
                    } else {
                        double resume = S + k0 * cb;
                        if (k0 == double(D + 1) && k0 < N) resume = std::max(resume, T0 + pb);
                        end = std::max(T0 + N * pb, resume + (N - k0) * cb + pb);
                        conv_end = k0 < N ? resume + (N - k0) * cb : S + k0 * cb;
                    }
                }
                const double exposed = end - (T0 + op_ns);
                tl.conversion_ns += pm.to_nz_ns;
                tl.conversion_exposed_ns += exposed;
                tl.conversion_bytes_read += double(pm.to_nz_bytes_read) * repeat;
                // the load path replaces the plain weight read: only the extra bytes cost energy
                const double extra = std::max(0.0, double(pm.to_nz_bytes_read) - double(r.weight_bytes));
                tl.conversion_energy_pj += extra * hw.conversion_pj_per_byte * repeat;
                ++tl.conversions;
                emit(Track::CONVERT, "convert " + op_label(r), S, conv_end - S, r.phase);
                if (fw.phase == Phase::PREFILL)
                    DUET_LOG_DEBUG("convert {} PIM->NZ: {} blocks, {:.2f} us converting, {:.2f} us exposed",
                                   op_label(r), int64_t(N), pm.to_nz_ns / 1e3, exposed / 1e3);
                conv_free = conv_end;
                gate = std::max(T0, end - double(std::min<int64_t>(D, int64_t(N) - 1)) * pb);
            }
            emit(u == Unit::NPU ? Track::NPU : Track::PIM, op_label(r), end - op_ns, op_ns, r.phase);
            if (c.t_launch_ns > 0) emit(Track::HOST, "launch " + op_label(r), end - op_ns, c.t_launch_ns * repeat, r.phase);
            unit_free[int(u)] = end;
            t = std::max(t, end);
        }
        ps.wall_ns += t - fw_start;
        if (fw.phase == Phase::PREFILL) {
            tl.prefill_ns = t;
            double sw = 0;
            if (coop_layout) {
                if (opts.zero_copy_switch) {
                    sw = hw.pointer_switch_ns;
                    DUET_LOG_DEBUG("pointer switch prefill -> decode: {:.3f} us (zero_copy_switch)", sw / 1e3);
                } else {
                    // prefill ran from NZ copies; convert every PIM-layout matrix back to the base
                    const int64_t q = shape.n_head * shape.head_dim, kv = shape.n_head_kv * shape.head_dim;
                    for (int l = -1; l < int(shape.n_layer); ++l) {
                        if (!placer.pim_layout(l)) continue;
                        std::vector<std::pair<int64_t, int64_t>> mats;
                        if (l < 0) mats = {{shape.n_vocab, shape.n_embd}};
                        else mats = {{q, shape.n_embd}, {kv, shape.n_embd}, {kv, shape.n_embd}, {shape.n_embd, q},
                                     {shape.n_ff, shape.n_embd}, {shape.n_ff, shape.n_embd}, {shape.n_embd, shape.n_ff}};
                        double layer_ns = 0;
                        for (auto [n, k] : mats) layer_ns += hw.layout->nz_to_pim_ns(n, k, shape.weight_dtype);
                        DUET_LOG_DEBUG("convert layer {} NZ->PIM at the switch: {:.2f} us", l, layer_ns / 1e3);
                        sw += layer_ns;
                        ++tl.conversions;
                    }
                    tl.conversion_ns += sw;
                }
            }
            emit(Track::CONVERT, opts.zero_copy_switch ? "pointer switch" : "full NZ->PIM conversion", t, sw, fw.phase);
            tl.switch_ns = sw;
            t += sw;
            tl.ttft_ns = t;
            DUET_LOG_INFO("[{}] prefill: {:.3f} ms (NPU busy {:.3f} ms, PIM busy {:.3f} ms), conversion exposed "
                          "{:.3f} ms, switch {:.3f} ms, TTFT {:.3f} ms",
                          policy_name(opts.placement.policy), tl.prefill_ns / 1e6, tl.prefill.unit[0].busy_ns / 1e6,
                          tl.prefill.unit[1].busy_ns / 1e6, tl.conversion_exposed_ns / 1e6, sw / 1e6, tl.ttft_ns / 1e6);
        } else {
            tl.tbt_ns.push_back(t - prev_forward_end);
        }
        prev_forward_end = t;
    }
    if (!tl.tbt_ns.empty())
        DUET_LOG_INFO("[{}] decode: {} steps, {:.3f} ms (NPU busy {:.3f} ms, PIM busy {:.3f} ms)",
                      policy_name(opts.placement.policy), tl.tbt_ns.size(), tl.decode.wall_ns / 1e6,
                      tl.decode.unit[0].busy_ns / 1e6, tl.decode.unit[1].busy_ns / 1e6);
    return tl;
}

}  // namespace duet::sim
