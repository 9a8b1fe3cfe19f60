#pragma once
#include <bit>
// Helpers of the timeline's scheduler (sim/timeline.cpp): the memoised device estimates, an
// operator's label in traces, the per-sequence view of an unshared batched matmul and the full
// conversion at the prefill -> decode switch. Internal to sim.
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "core/log.h"
#include "sim/hardware.h"
#include "sim/placement.h"
#include "sim/planner.h"
#include "sim/run_options.h"

namespace duet::sim::detail {

// Device estimates repeat across layers and steps: memoise them per (device, shape).
struct ShapeKey {
    int device, cls;
    int64_t m, n, k, h, hkv;
    uint64_t wb, ib, ob;
    int wdt, adt;  // weight and activation dtypes
    double flops;
    bool operator==(const ShapeKey&) const = default;
};
struct ShapeKeyHash {
    size_t operator()(const ShapeKey& s) const {
        uint64_t h = 1469598103934665603ull;
        for (uint64_t v : {uint64_t(s.device), uint64_t(s.cls), uint64_t(s.m), uint64_t(s.n), uint64_t(s.k),
                           uint64_t(s.h), uint64_t(s.hkv), s.wb, s.ib, s.ob, uint64_t(s.wdt), uint64_t(s.adt),
                           std::bit_cast<uint64_t>(s.flops)})
            h = (h ^ v) * 1099511628211ull;
        return size_t(h);
    }
};

// Device estimates by (device, op shape): pure functions of the hardware, so one cache may
// serve many runs on the same SimHardware (simulate_timeline's costs argument); emptied past
// kMaxEntries so a long-running user stays bounded.
class CostCache {
public:
    static constexpr size_t kMaxEntries = size_t(1) << 20;
    explicit CostCache(const SimHardware& hw) : hw_(hw) {}
    const SimHardware& hardware() const { return hw_; }
    hw::Cost get(int device, const hw::OpShape& s) {
        ShapeKey key{device,         int(s.cls),  s.m,         s.n,          s.k,
                     s.n_head,       s.n_head_kv, s.weight_bytes, s.in_bytes, s.out_bytes,
                     int(s.weight_dtype), int(s.act_dtype), s.flops};
        auto it = cache_.find(key);
        if (it != cache_.end()) return it->second;
        hw::Cost c = hw_.devices[size_t(device)].model->estimate(s);
        if (cache_.size() >= kMaxEntries) cache_.clear();
        cache_.emplace(key, c);
        return c;
    }

private:
    const SimHardware& hw_;
    std::unordered_map<ShapeKey, hw::Cost, ShapeKeyHash> cache_;
};

inline std::string op_label(const OpRecord& r) {
    std::string s = r.layer < 0 ? std::string(op_kind_name(r.kind)) : fmt::format("L{} {}", r.layer, op_kind_name(r.kind));
    if (r.kind == OpKind::MATMUL)
        s += fmt::format(" {}{}", weight_role_name(r.role), r.rmsnorm_fused ? " +rmsnorm" : "");
    return s;
}

// Every sequence of a batch without weight sharing streams its own copy of the weights: the
// device sees `repeat` matmuls of m / repeat rows.
inline hw::OpShape per_sequence(const OpRecord& r, hw::OpShape s, const RunOptions& opts, int& repeat) {
    repeat = 1;
    if (r.phase == Phase::DECODE && r.kind == OpKind::MATMUL && r.n_seq > 1 && !opts.weight_base_shared) {
        repeat = r.n_seq;
        s.m = r.m / r.n_seq;
        s.cls = s.m == 1 ? hw::OpClass::GEMV : hw::OpClass::GEMM;
        s.in_bytes /= uint64_t(repeat);
        s.out_bytes /= uint64_t(repeat);
        s.flops /= repeat;
    }
    return s;
}

// NZ -> PIM of every PIM-layout matrix at the switch (zero_copy_switch = false).
inline double full_switch_conversion_ns(const ModelShape& shape, const Plan& plan, const Placer& placer,
                                 const LayoutModel& layout, int64_t& conversions) {
    // The matrices are the MATMUL records of the first forward (the graph's list, fused or not).
    double sw = 0;
    if (plan.forwards.empty()) return sw;
    const ForwardSpan& fw = plan.forwards.front();
    for (int l = -1; l < int(shape.n_layer); ++l) {
        if (!placer.pim_layout(l)) continue;
        double layer_ns = 0;
        for (size_t i = fw.begin; i < fw.end; ++i) {
            const OpRecord& r = plan.ops[i];
            if (is_matmul_kind(r.kind) && r.layer == l) layer_ns += layout.nz_to_pim_ns(weight_rows(r), r.k, shape.weight_dtype);
        }
        DUET_LOG_DEBUG("convert layer {} NZ->PIM at the switch: {:.2f} us", l, layer_ns / 1e3);
        sw += layer_ns;
        ++conversions;
    }
    return sw;
}

}  // namespace duet::sim::detail
