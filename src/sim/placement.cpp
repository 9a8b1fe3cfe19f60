#include "sim/placement.h"

#include <algorithm>

#include "core/error.h"

namespace duet::sim {

const char* unit_name(Unit u) { return u == Unit::NPU ? "npu" : "pim"; }

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

bool Placer::forced_npu(int layer) const {
    return layer >= 0 && std::binary_search(opts_.npu_only_layers.begin(), opts_.npu_only_layers.end(), layer);
}

bool Placer::pim_layout(int layer) const { return opts_.policy != Policy::NPU_ONLY && !forced_npu(layer); }

Unit Placer::place(const OpRecord& rec, const hw::OpShape& shape) const {
    if (opts_.policy == Policy::NPU_ONLY || forced_npu(rec.layer) || !hw_.pim) return Unit::NPU;
    const bool matmul = rec.kind == OpKind::MATMUL, attention = rec.kind == OpKind::ATTENTION;
    if (!matmul && !attention) return Unit::NPU;
    if (!hw_.pim->supports(shape)) return Unit::NPU;
    switch (opts_.policy) {
        case Policy::PIM_ONLY: return Unit::PIM;
        case Policy::NPU_PIM_COOP:
            if (rec.phase == Phase::PREFILL) return matmul && !opts_.prefill_on_npu ? Unit::PIM : Unit::NPU;
            if (matmul) return opts_.decode_on_pim ? Unit::PIM : Unit::NPU;
            return opts_.attention_on_pim ? Unit::PIM : Unit::NPU;
        case Policy::AUTO: {
            if (!hw_.npu->supports(shape)) return Unit::PIM;
            return hw_.pim->estimate(shape).t_ns < hw_.npu->estimate(shape).t_ns ? Unit::PIM : Unit::NPU;
        }
        default: return Unit::NPU;
    }
}

hw::OpShape to_op_shape(const OpRecord& r, DType act_dtype) {
    hw::OpShape s;
    const double act_scale = double(dtype_info(act_dtype).block_bytes) / 4.0;  // host records are f32
    s.m = r.m;
    s.n = r.n;
    s.k = r.k;
    s.n_head = r.n_head;
    s.n_head_kv = r.n_head_kv;
    s.weight_dtype = r.weight_dtype;
    s.act_dtype = act_dtype;
    s.weight_bytes = r.weight_bytes;
    s.in_bytes = uint64_t(double(r.in_bytes) * act_scale);
    s.out_bytes = r.kind == OpKind::KV_WRITE ? r.out_bytes : uint64_t(double(r.out_bytes) * act_scale);
    s.flops = r.flops;
    switch (r.kind) {
        case OpKind::MATMUL: s.cls = r.m == 1 ? hw::OpClass::GEMV : hw::OpClass::GEMM; break;
        case OpKind::ATTENTION: s.cls = hw::OpClass::ATTENTION; break;
        case OpKind::KV_WRITE: s.cls = hw::OpClass::COPY; break;
        default: s.cls = hw::OpClass::ELEMENTWISE;
    }
    return s;
}

}  // namespace duet::sim
