#pragma once
// hw::Device for a PIM preset: answers GEMV (OpClass::GEMV, or GEMM with m == 1), batched GEMV
// (GEMM with 2 <= m <= kMaxBatch: m input vectors, the weights re-read per vector) and decode
// attention (m == 1: q.K^T and p.V as GEMVs over the KV cache, per KV head) with the
// closed-form all-bank GEMV model. Immutable after construction; thread safe.
#include <string>

#include "hw/device.h"
#include "hw/pim/pim_gemv.h"
#include "hw/pim/pim_spec.h"

namespace duet::hw::pim {

class PimDevice final : public Device {
public:
    // alignment_bits: the layout granule (config.toml [pim] alignment); channels 0 = preset's.
    explicit PimDevice(PimSpec spec, int alignment_bits = 128, int channels = 0);

    std::string name() const override { return "pim:" + spec_.name; }
    bool supports(const OpShape& op) const override;
    Cost estimate(const OpShape& op) const override;

    const PimSpec& spec() const { return spec_; }
    // Largest m of a GEMM answered as a batched GEMV (placement `auto` compares it per op with
    // the NPU's cost; beyond it a GEMM is not a PIM operator).
    static constexpr int64_t kMaxBatch = 8;
    GemvResult estimate_gemv(int64_t rows, int64_t k, DType dtype, int batch = 1) const;

private:
    PimSpec spec_;
    int alignment_bits_;
    int channels_;
};

}  // namespace duet::hw::pim
