#include "hw/pim/pim_device.h"

#include <algorithm>

#include "core/error.h"
#include "hw/pim/pim_cent_mapping.h"
#include "hw/pim/pim_controller.h"

namespace duet::hw::pim {

DType PimDevice::operand_dtype(DType t) const {
    if (!dtype_is_quantized(t)) return t;
    if (spec_.supports(DType::I8) || !widen_int8_) return DType::I8;
    return spec_.supports(DType::F16) ? DType::F16 : DType::BF16;
}

std::string PimDevice::quantised_operands() const {
    if (spec_.supports(DType::I8)) return "int8 MACs (" + std::to_string(spec_.unit.lanes_int8) + " lanes)";
    if (!widen_int8_) return "not supported (the preset has no int8 MACs)";
    return std::string("widened to ") + (spec_.supports(DType::F16) ? "f16" : "bf16") +
           " MACs (the preset has no int8 MACs: costed as a 16-bit GEMV of the same shape)";
}

PimDevice::PimDevice(PimSpec spec, int alignment_bits, int channels, bool widen_int8)
    : spec_(std::move(spec)), alignment_bits_(alignment_bits), channels_(channels), widen_int8_(widen_int8) {
    GemvShape probe;  // validate the knobs once, so estimate() cannot fail on them later
    probe.m = probe.k = 64;
    probe.dtype = spec_.supports(DType::F16) ? DType::F16 : (spec_.supports(DType::BF16) ? DType::BF16 : DType::I8);
    probe.alignment_bits = alignment_bits;
    probe.channels = channels;
    plan_gemv(spec_, probe);
}

GemvResult PimDevice::estimate_gemv(int64_t rows, int64_t k, DType dtype, int batch) const {
    GemvShape g;
    g.batch = batch;
    g.m = rows;
    g.k = k;
    g.dtype = operand_dtype(dtype);
    // ggml's quantised types run as int8 blocks of 32 with an f16 scale each (layout/pim_int8.h);
    // the unit loads the scales from the bank beside the quants.
    if (dtype_is_quantized(dtype)) g.scale_block = 32;
    g.alignment_bits = alignment_bits_;
    g.channels = channels_;
    return pim::estimate_gemv(spec_, g);
}

bool PimDevice::runs_elementwise(const OpShape& op) const {
    if (spec_.attention_mapping != AttentionMapping::CENT_HEAD_PER_BANK || op.m != 1 || op.n < 1) return false;
    switch (op.elem) {
        case ElemOp::RMSNORM:
        case ElemOp::SWIGLU:
        case ElemOp::ADD:
        case ElemOp::KV_WRITE: return true;
        case ElemOp::ROPE:
        case ElemOp::ROPE_KV_WRITE:
            return op.k >= 1 && op.n_head >= 1 && op.n_head_kv >= 1 && op.n_head % op.n_head_kv == 0;
        case ElemOp::SAMPLE:
        case ElemOp::NONE: return false;
    }
    return false;
}

Cost PimDevice::estimate_elementwise(const OpShape& op) const {
    Cost c;
    c.bound = "memory";
    CentCost a;
    double controller_ns = 0;  // the CXL controller's share ([controller], pim_controller.h)
    switch (op.elem) {
        case ElemOp::RMSNORM:
            a = cent_rmsnorm(spec_, op.n, channels_);
            controller_ns = controller_rmsnorm_ns(spec_.controller, op.n);
            break;
        case ElemOp::ROPE:
        case ElemOp::ROPE_KV_WRITE:
            a = cent_rotary(spec_, op.n_head * op.k, op.n_head / op.n_head_kv, channels_);
            controller_ns = controller_rotary_ns(spec_.controller, op.n_head * op.k, op.n_head_kv * op.k);
            break;
        case ElemOp::SWIGLU: a = cent_silu_gate(spec_, op.n, channels_); break;
        // KV_WRITE: CENT's cache stores ("Store xk", "Store xv") are part of the attention's
        // program (cent_attention), priced there. ADD: the residual add is an EWADD on the CXL
        // controller's registers, which issues no DRAM command (aim_simulator
        // aim_DRAM_system.cpp: ISR_EWADD does nothing), so CENT's PIM time holds none of it.
        default: c.bound = "none"; return c;
    }
    c.t_ns = a.t_ns + controller_ns;
    c.bytes_moved = double(a.host_wr + a.host_rd + a.wr_gb) * spec_.mem.org.burst_bytes();
    return c;
}

bool PimDevice::supports(const OpShape& op) const {
    if (op.cls == OpClass::ELEMENTWISE || op.cls == OpClass::COPY) return runs_elementwise(op);
    if (!spec_.supports(operand_dtype(op.weight_dtype)) || op.n < 1 || op.k < 1) return false;
    if (op.cls == OpClass::GEMV || (op.cls == OpClass::GEMM && op.m >= 1 && op.m <= kMaxBatch)) return true;
    // Decode attention: scores q.K^T (n context rows of k = head_dim) and p.V, per head.
    return op.cls == OpClass::ATTENTION && op.m == 1 && op.n_head > 0;
}

Cost PimDevice::estimate(const OpShape& op) const {
    Cost c;
    if (!supports(op)) {
        c.bound = "unsupported";
        return c;
    }
    if (op.cls == OpClass::ELEMENTWISE || op.cls == OpClass::COPY) return estimate_elementwise(op);
    if (op.cls != OpClass::ATTENTION) {
        const int batch = op.cls == OpClass::GEMM ? int(op.m) : 1;
        const GemvResult r = estimate_gemv(op.n, op.k, op.weight_dtype, batch);
        c.t_ns = r.t_ns;
        c.bytes_moved = r.external_bytes;
        c.energy_pj = r.energy_pj;
        c.bound = r.bound;
        return c;
    }
    if (spec_.attention_mapping == AttentionMapping::CENT_HEAD_PER_BANK) {
        // CENT's head-per-bank mapping of this device's heads (pim_cent_mapping.h); the
        // positions of q.K^T over the banks of op.context_ranks devices (this one alone but
        // under the CENT partition, graph/parallel.h).
        CentBlockShape b;
        b.heads = op.n_head;
        b.kv_heads = op.n_head_kv > 0 ? op.n_head_kv : op.n_head;
        b.head_dim = op.k;
        b.context = op.n;
        b.devices = op.context_ranks;  // CENT's FC_devices: q.K^T positions over every device's banks
        b.channels = channels_;
        const CentCost a = cent_attention(spec_, b);
        // the softmax's exponentials, sums and scaling factors on the CXL controller
        c.t_ns = a.t_ns + controller_softmax_ns(spec_.controller, b.heads, b.context);
        c.bytes_moved = double(a.host_wr + a.host_rd + a.wr_gb) * spec_.mem.org.burst_bytes();
        c.bound = "memory";
        return c;
    }
    // Each query head's score GEMV runs over its KV head's K rows: n_head GEMVs of n x k, then
    // n_head GEMVs over V^T (k rows of n). Modelled as two GEMVs of n_head * n and n_head * k rows,
    // which keeps every unit busy across heads (the heads' rows are spread like matrix rows).
    // Context positions spread over op.context_ranks devices: the scores of this one's share.
    const int64_t positions = (op.n + op.context_ranks - 1) / std::max(op.context_ranks, 1);
    const GemvResult s = estimate_gemv(op.n_head * positions, op.k, op.weight_dtype);
    const GemvResult v = estimate_gemv(op.n_head * op.k, op.n, op.weight_dtype);
    c.t_ns = s.t_ns + v.t_ns;
    c.bytes_moved = s.external_bytes + v.external_bytes;
    c.energy_pj = s.energy_pj + v.energy_pj;
    c.bound = s.bound;
    return c;
}

}  // namespace duet::hw::pim
