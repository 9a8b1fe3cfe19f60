#pragma once
// hw::Device for a PIM preset: answers GEMV (OpClass::GEMV, or GEMM with m == 1), batched GEMV
// (GEMM with 2 <= m <= kMaxBatch: m input vectors, the weights re-read per vector) and decode
// attention (m == 1: q.K^T and p.V as GEMVs over the KV cache, per KV head) with the
// closed-form all-bank GEMV model. With CENT's mapping ([mapping] attention =
// "cent_head_per_bank") it also answers the decode block's element-wise operators CENT runs on
// the device (OpShape::elem, m == 1): RMSNorm, rotary and the SiLU gate product priced with
// pim_cent_mapping's commands, the KV write (its stores are in the attention's program) and the
// residual add (an EWADD on the controller's registers, no DRAM command) at no extra time. A
// preset's [controller] (CENT's CXL controller, pim_controller.h) adds its share to the RMSNorm,
// the rotary and, inside the attention, the softmax. Other presets answer no element-wise
// operator. Immutable after construction; thread safe.
#include <string>

#include "hw/device.h"
#include "hw/pim/pim_gemv.h"
#include "hw/pim/pim_spec.h"

namespace duet::hw::pim {

class PimDevice final : public Device {
public:
    // alignment_bits: the layout granule (config.toml [pim] alignment); channels 0 = preset's.
    // widen_int8 (config.toml [pim] precision = int8): on a preset without int8 MACs, quantised
    // weights run widened to its 16-bit float MACs instead of being unsupported.
    explicit PimDevice(PimSpec spec, int alignment_bits = 128, int channels = 0, bool widen_int8 = false);

    std::string name() const override { return "pim:" + spec_.name; }
    bool supports(const OpShape& op) const override;
    Cost estimate(const OpShape& op) const override;

    const PimSpec& spec() const { return spec_; }
    // Largest m of a GEMM answered as a batched GEMV (placement `auto` compares it per op with
    // the NPU's cost; beyond it a GEMM is not a PIM operator).
    static constexpr int64_t kMaxBatch = 8;
    GemvResult estimate_gemv(int64_t rows, int64_t k, DType dtype, int batch = 1) const;
    // The operand type the units compute a weight dtype in (docs/hardware-model.md 3.5): ggml's
    // quantised blocks as int8 (q8_0 as stored; 4-, 5- and 6-bit quants widened to int8, as no
    // preset has int4 lanes), or — with widen_int8 on a preset without int8 lanes — as its fp16
    // (else bf16) lanes: an int8 value is exact in either, and a 256-bit column of 32 int8 needs
    // two 16-lane MAC passes, i.e. the MAC commands of a 16-bit GEMV of the same shape.
    DType operand_dtype(DType weight) const;
    // For the report: how this device runs quantised weights, e.g. "int8 MACs (32 lanes)",
    // "widened to fp16 MACs (the preset has no int8 MACs)", "not supported (no int8 MACs)".
    std::string quantised_operands() const;

private:
    bool runs_elementwise(const OpShape& op) const;
    Cost estimate_elementwise(const OpShape& op) const;

    PimSpec spec_;
    int alignment_bits_;
    int channels_;
    bool widen_int8_;
};

}  // namespace duet::hw::pim
