#include "sim/timeline.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "core/log.h"
#include "sim/op_shape.h"
#include "sim/timeline_conversion.h"

namespace duet::sim {
namespace {

// Device estimates repeat across layers and steps: memoise them per (device, shape).
struct ShapeKey {
    int device, cls;
    int64_t m, n, k, h, hkv;
    uint64_t wb, ib, ob;
    bool operator==(const ShapeKey&) const = default;
};
struct ShapeKeyHash {
    size_t operator()(const ShapeKey& s) const {
        uint64_t h = 1469598103934665603ull;
        for (uint64_t v : {uint64_t(s.device), uint64_t(s.cls), uint64_t(s.m), uint64_t(s.n), uint64_t(s.k),
                           uint64_t(s.h), uint64_t(s.hkv), s.wb, s.ib, s.ob})
            h = (h ^ v) * 1099511628211ull;
        return size_t(h);
    }
};

class CostCache {
public:
    explicit CostCache(const SimHardware& hw) : hw_(hw) {}
    hw::Cost get(int device, const hw::OpShape& s) {
        ShapeKey key{device, int(s.cls), s.m, s.n, s.k, s.n_head, s.n_head_kv, s.weight_bytes, s.in_bytes, s.out_bytes};
        auto it = cache_.find(key);
        if (it != cache_.end()) return it->second;
        hw::Cost c = hw_.devices[size_t(device)].model->estimate(s);
        cache_.emplace(key, c);
        return c;
    }

private:
    const SimHardware& hw_;
    std::unordered_map<ShapeKey, hw::Cost, ShapeKeyHash> cache_;
};

std::string op_label(const OpRecord& r) {
    std::string s = r.layer < 0 ? std::string(op_kind_name(r.kind)) : fmt::format("L{} {}", r.layer, op_kind_name(r.kind));
    if (r.kind == OpKind::MATMUL) s += fmt::format(" {}", weight_role_name(r.role));
    return s;
}

// Q, K, V (and gate, up) read the same normed input and are independent of each other: on
// different devices they overlap; everything else waits for all before it.
bool overlaps_previous(const Plan& plan, size_t i, const ForwardSpan& fw) {
    // The graph marks siblings (same input, no dependency: Q, K, V; gate, up).
    return i > fw.begin && plan.ops[i].sibling_of_prev;
}

// Every sequence of a batch without weight sharing streams its own copy of the weights: the
// device sees `repeat` matmuls of m / repeat rows.
hw::OpShape per_sequence(const OpRecord& r, hw::OpShape s, const RunOptions& opts, int& repeat) {
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
double full_switch_conversion_ns(const ModelShape& shape, const Plan& plan, const Placer& placer,
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
            if (r.kind == OpKind::MATMUL && r.layer == l) layer_ns += layout.nz_to_pim_ns(r.n, r.k, shape.weight_dtype);
        }
        DUET_LOG_DEBUG("convert layer {} NZ->PIM at the switch: {:.2f} us", l, layer_ns / 1e3);
        sw += layer_ns;
        ++conversions;
    }
    return sw;
}

// One operator ready to schedule: its parts, each with its device, shape and cost.
struct PreparedPart {
    int device = 0;
    hw::OpShape shape;
    hw::Cost cost;
};
struct PreparedOp {
    bool valid = false;
    OpRecord record;  // the record the parts were computed for
    int repeat = 1;   // per_sequence's repeat
    std::vector<PreparedPart> parts;
};

// The scheduler of one run: the state of every queue, and one step per operator.
class Scheduler {
public:
    Scheduler(const ModelShape& shape, const Plan& plan, const Placer& placer, const RunOptions& opts,
              const SimHardware& hw)
        : shape_(shape), plan_(plan), placer_(placer), opts_(opts), hw_(hw), costs_(hw),
          device_free_(hw.devices.size(), 0.0), link_free_(hw.links.size(), 0.0), conv_(hw.devices.size()) {
        for (const SimDevice& d : hw.devices) {
            DeviceStats s;
            s.name = d.name;
            s.kind = d.kind;
            tl_.prefill.device.push_back(s);
        }
        tl_.decode.device = tl_.prefill.device;
        for (const SimLink& l : hw.links) {
            LinkStats ls;
            ls.name = l.name;
            tl_.links.push_back(ls);
        }
        add_tracks();
    }

    Timeline run() {
        int64_t decode_steps = 0;
        for (const ForwardSpan& fw : plan_.forwards) {
            recording_ = opts_.record_events &&
                         (fw.phase == Phase::PREFILL || opts_.record_decode_steps < 0 || decode_steps < opts_.record_decode_steps);
            run_forward(fw);
            if (fw.phase == Phase::DECODE) ++decode_steps;
        }
        if (!tl_.tbt_ns.empty())
            DUET_LOG_INFO("[{}] decode: {} steps, {:.3f} ms (NPU busy {:.3f} ms, PIM busy {:.3f} ms)",
                          policy_name(opts_.placement.policy), tl_.tbt_ns.size(), tl_.decode.wall_ns / 1e6,
                          tl_.decode.npu().busy_ns / 1e6, tl_.decode.pim().busy_ns / 1e6);
        return std::move(tl_);
    }

private:
    void add_tracks() {
        for (const SimDevice& d : hw_.devices) {
            compute_track_.push_back(track(d.name, "compute"));
            convert_track_.push_back(d.kind == DeviceKind::NPU ? track(d.name, "conversion (PIM->NZ)") : -1);
            launch_track_.push_back(track(d.name, "host launch"));
        }
        for (const SimLink& l : hw_.links) link_track_.push_back(track(l.name, "transfers"));
    }
    int track(const std::string& group, const std::string& name) {
        tl_.tracks.push_back({group, name});
        return int(tl_.tracks.size()) - 1;
    }
    template <class Label>
    void emit(int tr, Label&& label, double start, double dur, Phase ph) {
        if (recording_ && dur > 0) tl_.events.push_back({tr, label(), start, dur, ph});
    }

    void run_forward(const ForwardSpan& fw) {
        PhaseStats& ps = fw.phase == Phase::PREFILL ? tl_.prefill : tl_.decode;
        const double fw_start = t_;
        for (size_t i = fw.begin; i < fw.end; ++i) {
            if (!overlaps_previous(plan_, i, fw)) group_ready_ = t_;
            t_ = std::max(t_, run_op(plan_.ops[i], i - fw.begin, ps));
        }
        ps.wall_ns += t_ - fw_start;
        if (fw.phase == Phase::PREFILL) finish_prefill();
        else tl_.tbt_ns.push_back(t_ - prev_forward_end_);
        prev_forward_end_ = t_;
    }

    // Runs every part of one operator (op `j` of its forward); returns when its (gathered)
    // output is ready.
    double run_op(const OpRecord& r, size_t j, PhaseStats& ps) {
        const PreparedOp& op = prepare(r, j);
        const int parts = int(op.parts.size());
        double end = 0;
        for (int p = 0; p < parts; ++p) {
            auto label = [&]() { return parts > 1 ? fmt::format("{} [{}/{}]", op_label(r), p + 1, parts) : op_label(r); };
            const PreparedPart& part = op.parts[size_t(p)];
            end = std::max(end, run_part(r, part.shape, part.cost, part.device, op.repeat, ps, label));
        }
        return end;
    }

    // Shape, placement and device costs of op j, recomputed only when its record differs from
    // the one op j of the previous forward had: decode steps repeat every record but attention's,
    // and all three are pure functions of the record, so the reuse is exact.
    const PreparedOp& prepare(const OpRecord& r, size_t j) {
        if (j >= prepared_.size()) prepared_.resize(j + 1);
        PreparedOp& op = prepared_[j];
        if (op.valid && op.record == r) return op;
        op.valid = true;
        op.record = r;
        const bool w8a8 = r.kind == OpKind::MATMUL && r.weight_dtype == DType::I8 && opts_.int8_matmul_act_dtype == DType::I8;
        hw::OpShape shape = to_op_shape(r, w8a8 ? DType::I8 : DType::F16);
        if (w8a8) shape.out_bytes = r.out_bytes / 2;  // int32 accumulators dequantised to f16 on the way out
        const hw::OpShape s = per_sequence(r, shape, opts_, op.repeat);
        const OpPlacement where = placer_.place(r, s);
        const int parts = int(where.devices.size());
        op.parts.resize(size_t(parts));
        for (int p = 0; p < parts; ++p) {
            PreparedPart& part = op.parts[size_t(p)];
            part.device = where.devices[size_t(p)];
            part.shape = split_rows(s, p, parts);
            part.cost = costs_.get(part.device, part.shape);
        }
        return op;
    }

    bool converts(const OpRecord& r, int device) const {
        return hw_.devices[size_t(device)].kind == DeviceKind::NPU && r.kind == OpKind::MATMUL &&
               opts_.placement.policy != Policy::NPU_ONLY && placer_.pim_layout(r.layer) &&
               !(opts_.preconvert_first_token && r.layer == 0) && !(r.phase == Phase::PREFILL && !opts_.zero_copy_switch);
    }

    // VLLM_ASCEND_ENABLE_PREFETCH_MLP (opts_.prefetch_mlp): in decode, while an NPU runs a
    // layer's attention, a side stream loads that layer's gate/up weights into L2 using the
    // device-memory time the attention leaves idle (its duration minus its own traffic at the
    // NPU's bandwidth), at most kMlpPrefetchBytes and the L2. The gate/up matmuls then read the
    // prefetched part from L2 instead of device memory. Returns the cost to charge.
    hw::Cost with_mlp_prefetch(const OpRecord& r, const hw::OpShape& s, const hw::Cost& c, int dev, int repeat) {
        if (!opts_.prefetch_mlp || r.phase != Phase::DECODE || hw_.devices[size_t(dev)].kind != DeviceKind::NPU) return c;
        const double bw = hw_.mem_bw_gbps / double(std::max<size_t>(1, hw_.devices_of(DeviceKind::NPU).size()));  // one NPU's
        if (prefetch_left_.empty()) prefetch_left_.assign(hw_.devices.size(), 0.0), prefetch_layer_.assign(hw_.devices.size(), -1);
        if (r.kind == OpKind::ATTENTION) {
            const double idle_ns = std::max(0.0, c.t_ns * repeat - c.bytes_moved * repeat / bw);
            const double cap = std::min(kMlpPrefetchBytes, double(hw_.npu_l2_bytes > 0 ? hw_.npu_l2_bytes : kMlpPrefetchBytes));
            prefetch_left_[size_t(dev)] = std::min(cap, idle_ns * bw);
            prefetch_layer_[size_t(dev)] = r.layer;
            return c;
        }
        const bool gate_up = r.role == WeightRole::FFN_GATE || r.role == WeightRole::FFN_UP || r.role == WeightRole::FFN_GATE_UP;
        if (r.kind != OpKind::MATMUL || !gate_up || repeat != 1 || r.layer != prefetch_layer_[size_t(dev)]) return c;
        const uint64_t pre = std::min<uint64_t>(uint64_t(prefetch_left_[size_t(dev)]), s.weight_bytes);
        if (pre == 0) return c;
        prefetch_left_[size_t(dev)] -= double(pre);
        tl_.mlp_prefetched_bytes += double(pre);
        hw::OpShape from_l2 = s;
        from_l2.weight_bytes = std::max<uint64_t>(1, s.weight_bytes - pre);  // 0 would mean "derive from the shape"
        hw::Cost out = costs_.get(dev, from_l2);
        out.bytes_moved += double(pre);  // still moved, by the prefetch stream
        return out;
    }

    template <class Label>
    double run_part(const OpRecord& r, const hw::OpShape& s, const hw::Cost& c0, int dev, int repeat, PhaseStats& ps,
                    Label& label) {
        const hw::Cost c = with_mlp_prefetch(r, s, c0, dev, repeat);
        const double op_ns = c.t_ns * repeat;
        charge(ps.device[size_t(dev)], c, s, repeat);
        const int link = hw_.devices[size_t(dev)].link;
        double ready = group_ready_;
        if (link >= 0) ready = transfer(link, s.in_bytes * uint64_t(repeat), ready, r.phase, [&] { return "send input " + label(); });
        const double T0 = std::max(ready, device_free_[size_t(dev)]);
        double end = T0 + op_ns;
        if (converts(r, dev)) end = convert(r, T0, op_ns, repeat, dev, label);
        emit(compute_track_[size_t(dev)], label, end - op_ns, op_ns, r.phase);
        if (c.t_launch_ns > 0)
            emit(launch_track_[size_t(dev)], [&] { return "launch " + label(); }, end - op_ns, c.t_launch_ns * repeat, r.phase);
        device_free_[size_t(dev)] = end;
        if (link >= 0) end = transfer(link, s.out_bytes * uint64_t(repeat), end, r.phase, [&] { return "gather " + label(); });
        return end;
    }

    static void charge(DeviceStats& us, const hw::Cost& c, const hw::OpShape& s, int repeat) {
        us.busy_ns += c.t_ns * repeat;
        us.bytes_moved += c.bytes_moved * repeat;
        us.weight_bytes += double(s.weight_bytes) * repeat;
        us.energy_pj += c.energy_pj * repeat;
        us.launch_ns += c.t_launch_ns * repeat;
        us.ops += repeat;
    }

    // One transfer over `link` once `ready`; returns when it has arrived.
    template <class Label>
    double transfer(int link, uint64_t bytes, double ready, Phase ph, Label&& label) {
        const SimLink& l = hw_.links[size_t(link)];
        const double dur = l.transfer_ns(bytes);
        if (dur <= 0) return ready;
        const double start = std::max(ready, link_free_[size_t(link)]);
        link_free_[size_t(link)] = start + dur;
        LinkStats& ls = tl_.links[size_t(link)];
        ls.busy_ns += dur;
        ls.bytes += double(bytes);
        ++ls.transfers;
        emit(link_track_[size_t(link)], label, start, dur, ph);
        return start + dur;
    }

    // The matmul's compute end when its weights are converted PIM->NZ on the load path.
    template <class Label>
    double convert(const OpRecord& r, double T0, double op_ns, int repeat, int dev, Label& label) {
        const PimMatrixInfo pm = hw_.layout->pim(r.n, r.k, r.weight_dtype);
        const ConvertedMatmul cm = convert_on_load_path(T0, op_ns, pm.to_nz_ns, pm.n_blocks, opts_.prefetch_depth,
                                                        conv_[size_t(dev)]);
        const double exposed = cm.end_ns - (T0 + op_ns);
        tl_.conversion_ns += pm.to_nz_ns;
        tl_.conversion_exposed_ns += exposed;
        tl_.conversion_bytes_read += double(pm.to_nz_bytes_read) * repeat;
        // the load path replaces the plain weight read: only the extra bytes cost energy
        const double extra = std::max(0.0, double(pm.to_nz_bytes_read) - double(r.weight_bytes));
        tl_.conversion_energy_pj += extra * hw_.conversion_pj_per_byte * repeat;
        ++tl_.conversions;
        emit(convert_track_[size_t(dev)], [&] { return "convert " + label(); }, cm.conv_start_ns,
             cm.conv_end_ns - cm.conv_start_ns, r.phase);
        if (r.phase == Phase::PREFILL)
            DUET_LOG_DEBUG("convert {} PIM->NZ: {} blocks, {:.2f} us converting, {:.2f} us exposed", op_label(r),
                           std::max<int64_t>(1, pm.n_blocks), pm.to_nz_ns / 1e3, exposed / 1e3);
        return cm.end_ns;
    }

    void finish_prefill() {
        tl_.prefill_ns = t_;
        double sw = 0;
        if (opts_.placement.policy != Policy::NPU_ONLY) {
            if (opts_.zero_copy_switch) {
                sw = hw_.pointer_switch_ns;
                DUET_LOG_DEBUG("pointer switch prefill -> decode: {:.3f} us (zero_copy_switch)", sw / 1e3);
            } else {  // prefill ran from NZ copies; convert every PIM-layout matrix back to the base
                sw = full_switch_conversion_ns(shape_, plan_, placer_, *hw_.layout, tl_.conversions);
                tl_.conversion_ns += sw;
            }
        }
        emit(convert_track_[0], [&] { return std::string(opts_.zero_copy_switch ? "pointer switch" : "full NZ->PIM conversion"); },
             t_, sw, Phase::PREFILL);
        tl_.switch_ns = sw;
        t_ += sw;
        tl_.ttft_ns = t_;
        DUET_LOG_INFO("[{}] prefill: {:.3f} ms (NPU busy {:.3f} ms, PIM busy {:.3f} ms), conversion exposed "
                      "{:.3f} ms, switch {:.3f} ms, TTFT {:.3f} ms",
                      policy_name(opts_.placement.policy), tl_.prefill_ns / 1e6, tl_.prefill.npu().busy_ns / 1e6,
                      tl_.prefill.pim().busy_ns / 1e6, tl_.conversion_exposed_ns / 1e6, sw / 1e6, tl_.ttft_ns / 1e6);
    }

    const ModelShape& shape_;
    const Plan& plan_;
    const Placer& placer_;
    const RunOptions& opts_;
    const SimHardware& hw_;
    CostCache costs_;
    Timeline tl_;
    double t_ = 0;                     // completion of everything issued so far (the dependency chain)
    double group_ready_ = 0;           // inputs of the current sibling group (Q/K/V, gate/up) ready
    double prev_forward_end_ = 0;
    std::vector<double> device_free_;  // each device's queue is free
    std::vector<double> link_free_;    // each link is free
    std::vector<ConverterState> conv_; // one converter per NPU (unused for PIM devices)
    std::vector<int> compute_track_, convert_track_, launch_track_, link_track_;
    std::vector<PreparedOp> prepared_;  // by op index within a forward
    bool recording_ = false;
    std::vector<double> prefetch_left_;   // per device: MLP bytes prefetched during the last attention, unused
    std::vector<int32_t> prefetch_layer_; // per device: the layer of that attention
    // vllm-ascend's default VLLM_ASCEND_MLP_GATE_UP_PREFETCH_SIZE (18 MiB; vllm_ascend/envs.py)
    static constexpr double kMlpPrefetchBytes = 18.0 * 1024 * 1024;
};

}  // namespace

void DeviceStats::add(const DeviceStats& o) {
    busy_ns += o.busy_ns;
    bytes_moved += o.bytes_moved;
    weight_bytes += o.weight_bytes;
    energy_pj += o.energy_pj;
    launch_ns += o.launch_ns;
    ops += o.ops;
}

DeviceStats PhaseStats::total(DeviceKind kind) const {
    DeviceStats t;
    t.kind = kind;
    for (const DeviceStats& d : device)
        if (d.kind == kind) t.add(d);
    return t;
}

int PhaseStats::devices_of(DeviceKind kind) const {
    int n = 0;
    for (const DeviceStats& d : device) n += d.kind == kind ? 1 : 0;
    return n;
}

Timeline simulate_timeline(const ModelShape& shape, const Plan& plan, const Placer& placer, const RunOptions& opts,
                           const SimHardware& hw) {
    return Scheduler(shape, plan, placer, opts, hw).run();
}

}  // namespace duet::sim
