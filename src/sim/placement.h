#pragma once
// Placement: which unit runs each operator (DESIGN.md "Scheduler/placement").
//   npu_only      baseline: weights in NZ, every op on the NPU
//   pim_only      every MATMUL and ATTENTION the PIM supports runs on PIM; the rest on the NPU
//   npu_pim_coop  prefill MATMULs per [scheduling] prefill_engine (npu_gemm: NPU), decode
//                 MATMULs per decode_engine (pim_gemv: PIM); decode ATTENTION on PIM when
//                 [pim] compute_unit = "gemv_attention"; norms, RoPE, softmax, sampling and
//                 anything the PIM does not support stay on the NPU
//   auto          MATMUL/ATTENTION on whichever supporting unit estimates the shorter time
// Per-layer override: layers in npu_only_layers run on the NPU with their weights in NZ.
// Thread safety: const methods only; devices must be thread-safe for const calls.
#include <string>
#include <vector>

#include "hw/device.h"
#include "sim/hardware.h"
#include "sim/op_trace.h"

namespace duet::sim {

enum class Policy { NPU_ONLY, PIM_ONLY, NPU_PIM_COOP, AUTO };
const char* policy_name(Policy p);
// Throws duet::Error "<where> = \"x\" is not a placement policy (allowed: npu_only, ...)".
Policy policy_from_name(const std::string& name, const std::string& where);

struct PlacementOptions {
    Policy policy = Policy::NPU_PIM_COOP;
    bool prefill_on_npu = true;      // [scheduling] prefill_engine == "npu_gemm"
    bool decode_on_pim = true;       // [scheduling] decode_engine == "pim_gemv"
    bool attention_on_pim = false;   // [pim] compute_unit == "gemv_attention"
    std::vector<int> npu_only_layers;
};

class Placer {
public:
    Placer(PlacementOptions opts, const SimHardware& hw) : opts_(std::move(opts)), hw_(hw) {}
    // `shape` is the device view of `rec` (sim/op_shape.h).
    Unit place(const OpRecord& rec, const hw::OpShape& shape) const;
    // True when layer's weight matrices (layer -1: lm-head) live in the PIM layout.
    bool pim_layout(int layer) const;
    const PlacementOptions& options() const { return opts_; }

private:
    bool forced_npu(int layer) const;
    PlacementOptions opts_;
    const SimHardware& hw_;
};

}  // namespace duet::sim
