#include "sim/placement.h"

#include <algorithm>

#include "core/error.h"
#include "sim/op_shape.h"

namespace duet::sim {

const char* policy_name(Policy p) {
    switch (p) {
        case Policy::NPU_ONLY: return "npu_only";
        case Policy::PIM_ONLY: return "pim_only";
        case Policy::NPU_PIM_COOP: return "npu_pim_coop";
        case Policy::AUTO: return "auto";
    }
    return "?";
}

Policy policy_from_name(const std::string& name, const std::string& where) {
    for (Policy p : {Policy::NPU_ONLY, Policy::PIM_ONLY, Policy::NPU_PIM_COOP, Policy::AUTO})
        if (name == policy_name(p)) return p;
    fail("{} = \"{}\" is not a placement policy (allowed: npu_only, pim_only, npu_pim_coop, auto)", where, name);
}

hw::OpShape split_rows(const hw::OpShape& s, int part, int parts) {
    if (parts <= 1) return s;
    hw::OpShape p = s;
    p.n = s.n / parts + (part < s.n % parts ? 1 : 0);
    const double frac = s.n > 0 ? double(p.n) / double(s.n) : 0;
    p.weight_bytes = s.n > 0 ? s.weight_bytes / uint64_t(s.n) * uint64_t(p.n) : 0;
    p.out_bytes = s.n > 0 ? s.out_bytes / uint64_t(s.n) * uint64_t(p.n) : 0;
    p.flops = s.flops * frac;
    return p;
}

Placer::Placer(PlacementOptions opts, const SimHardware& hw)
    : opts_(std::move(opts)), hw_(hw), npus_(hw.devices_of(DeviceKind::NPU)), pims_(hw.devices_of(DeviceKind::PIM)),
      cpus_(hw.devices_of(DeviceKind::CPU)) {
    if (npus_.empty() || npus_[0] != 0) fail("simulated machine: devices[0] must be an NPU (the host, npu0)");
}

bool Placer::forced_npu(int layer) const {
    return layer >= 0 && std::binary_search(opts_.npu_only_layers.begin(), opts_.npu_only_layers.end(), layer);
}

bool Placer::pim_layout(int layer) const { return opts_.policy != Policy::NPU_ONLY && !forced_npu(layer); }

DeviceKind Placer::choose_kind(const OpRecord& rec, const hw::OpShape& shape) const {
    if (opts_.policy == Policy::NPU_ONLY || forced_npu(rec.layer) || pims_.empty()) return DeviceKind::NPU;
    // pim_only: what the PIM does not run goes to the host CPU, never to an NPU (when there is one)
    const DeviceKind rest = opts_.policy == Policy::PIM_ONLY && !cpus_.empty() ? DeviceKind::CPU : DeviceKind::NPU;
    const bool matmul = is_matmul_kind(rec.kind),
               attention = rec.kind == OpKind::ATTENTION || rec.kind == OpKind::MLA_ATTENTION;
    if (!matmul && !attention) {
        // pim_only: an element-wise operator the PIM device runs itself (a preset with CENT's
        // mapping) stays on each rank's own device; anything else goes to the rest.
        if (opts_.policy == Policy::PIM_ONLY && hw_.devices[size_t(pims_[0])].model->supports(shape))
            return DeviceKind::PIM;
        return rest;
    }
    // the first (largest) part is what each PIM device would run
    const int pim_parts = matmul ? int(pims_.size()) : 1;
    const hw::OpShape pim_part = split_rows(shape, 0, pim_parts);
    const hw::Device& pim0 = *hw_.devices[size_t(pims_[0])].model;
    if (!pim0.supports(pim_part)) return rest;
    switch (opts_.policy) {
        case Policy::PIM_ONLY: return DeviceKind::PIM;
        case Policy::NPU_PIM_COOP:
            if (rec.phase == Phase::PREFILL) return matmul && !opts_.prefill_on_npu ? DeviceKind::PIM : DeviceKind::NPU;
            // A batched decode GEMM (m > 1 vectors) re-reads the weights once per vector on the
            // PIM: it stays there only while that is still faster than the NPU.
            if (matmul && opts_.decode_on_pim && shape.m > 1) return faster_kind(rec, shape, pim_part);
            if (matmul) return opts_.decode_on_pim ? DeviceKind::PIM : DeviceKind::NPU;
            return opts_.attention_on_pim ? DeviceKind::PIM : DeviceKind::NPU;
        case Policy::AUTO: return faster_kind(rec, shape, pim_part);
        default: return DeviceKind::NPU;
    }
}

// The kind whose first device finishes its part sooner (PIM part given, NPU part derived).
DeviceKind Placer::faster_kind(const OpRecord& rec, const hw::OpShape& shape, const hw::OpShape& pim_part) const {
    const hw::Device& npu0 = *hw_.devices[0].model;
    const hw::Device& pim0 = *hw_.devices[size_t(pims_[0])].model;
    const bool matmul = is_matmul_kind(rec.kind);
    const hw::OpShape npu_part = split_rows(shape, 0, matmul && !pim_layout(rec.layer) ? int(npus_.size()) : 1);
    if (!npu0.supports(npu_part)) return DeviceKind::PIM;
    return pim0.estimate(pim_part).t_ns < npu0.estimate(npu_part).t_ns ? DeviceKind::PIM : DeviceKind::NPU;
}

// Every device of `kind` that supports its row slice, when all do; else the first alone.
std::vector<int> Placer::split_devices(DeviceKind kind, const hw::OpShape& shape) const {
    const std::vector<int>& all = kind == DeviceKind::NPU ? npus_ : pims_;
    const int parts = int(all.size());
    if (parts <= 1 || shape.n < parts) return {all[0]};
    for (int i = 0; i < parts; ++i)
        if (!hw_.devices[size_t(all[size_t(i)])].model->supports(split_rows(shape, i, parts))) return {all[0]};
    return all;
}

bool Placer::expert_on_pim(const OpRecord& experts) const {
    return choose_kind(experts, to_op_shape(experts)) == DeviceKind::PIM;
}

OpPlacement Placer::place(const OpRecord& rec, const hw::OpShape& shape) const {
    OpPlacement p;
    const bool host_rest = opts_.policy == Policy::PIM_ONLY && !cpus_.empty();
    if (rec.expert_group == graph::ExpertGroup::PIM && !pims_.empty()) p.kind = DeviceKind::PIM;
    else if (rec.expert_group == graph::ExpertGroup::NPU) p.kind = host_rest ? DeviceKind::CPU : DeviceKind::NPU;
    else p.kind = choose_kind(rec, shape);
    // NPUs other than npu0 hold NZ slices only: a PIM-layout matrix is converted on npu0's load path
    const bool splittable = is_matmul_kind(rec.kind) && p.kind != DeviceKind::CPU &&
                            (p.kind == DeviceKind::PIM || !pim_layout(rec.layer));
    if (splittable) p.devices = split_devices(p.kind, shape);
    else p.devices = {p.kind == DeviceKind::NPU ? npus_[0] : p.kind == DeviceKind::PIM ? pims_[0] : cpus_[0]};
    return p;
}

hw::OpShape to_op_shape(const OpRecord& r, DType act_dtype) {
    hw::OpShape s;
    const double act_scale = double(dtype_info(act_dtype).block_bytes) / 4.0;  // host records are f32
    s.m = r.m;
    s.n = r.n;
    s.k = r.k;
    s.n_head = r.n_head;
    s.n_head_kv = r.n_head_kv;
    s.context_ranks = r.context_ranks;
    s.weight_dtype = r.weight_dtype;
    s.act_dtype = act_dtype;
    s.weight_bytes = r.weight_bytes;
    s.in_bytes = uint64_t(double(r.in_bytes) * act_scale);
    s.out_bytes = r.kind == OpKind::KV_WRITE ? r.out_bytes : uint64_t(double(r.out_bytes) * act_scale);
    if (r.kind == OpKind::ROPE_KV_WRITE) {  // the cache rows are in the KV dtype, q_rope an activation
        const uint64_t cache = uint64_t(r.m) * 2 * row_bytes(r.weight_dtype, r.n_head_kv * r.k);
        s.out_bytes = uint64_t(double(r.out_bytes - cache) * act_scale) + cache;
    }
    s.flops = r.flops;
    switch (r.kind) {
        case OpKind::MATMUL: s.cls = r.m == 1 ? hw::OpClass::GEMV : hw::OpClass::GEMM; break;
        case OpKind::MOE_MATMUL:
        case OpKind::HEAD_MATMUL: {
            // The same bytes and FLOPs as one matrix of every expert's (head's) rows read once, each
            // expert seeing its share of the rows: m = routed rows per active expert (rounded up).
            const int64_t parts = r.kind == OpKind::MOE_MATMUL ? std::max<int64_t>(1, r.n_expert_active) : 1;
            s.m = (r.m + parts - 1) / parts;
            s.n = weight_rows(r);
            s.cls = s.m == 1 ? hw::OpClass::GEMV : hw::OpClass::GEMM;
            break;
        }
        case OpKind::ATTENTION:
        case OpKind::MLA_ATTENTION: s.cls = hw::OpClass::ATTENTION; break;
        case OpKind::KV_WRITE: s.cls = hw::OpClass::COPY; break;
        default: s.cls = hw::OpClass::ELEMENTWISE;
    }
    switch (r.kind) {
        case OpKind::RMSNORM: s.elem = hw::ElemOp::RMSNORM; break;
        case OpKind::ROPE: s.elem = hw::ElemOp::ROPE; break;
        case OpKind::ROPE_KV_WRITE: s.elem = hw::ElemOp::ROPE_KV_WRITE; break;
        case OpKind::KV_WRITE: s.elem = hw::ElemOp::KV_WRITE; break;
        case OpKind::SWIGLU: s.elem = hw::ElemOp::SWIGLU; break;
        case OpKind::ADD: s.elem = hw::ElemOp::ADD; break;
        case OpKind::OUTPUT: s.elem = hw::ElemOp::SAMPLE; break;
        default: break;
    }
    return s;
}

}  // namespace duet::sim
