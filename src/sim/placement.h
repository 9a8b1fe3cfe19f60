#pragma once
// Placement: which device runs each operator (docs/design.md "Placement", docs/topology.md).
// First a device kind per policy:
//   npu_only      baseline: weights in NZ, every op on the NPU
//   pim_only      every MATMUL and ATTENTION the PIM supports runs on PIM; the rest on the host
//                 CPU (cpu0) when the machine has one (as CENT runs: no NPU work), else on the NPU
//   npu_pim_coop  prefill MATMULs per [scheduling] prefill_engine (npu_gemm: NPU), decode
//                 MATMULs per decode_engine (pim_gemv: PIM; a batched decode matmul, m > 1,
//                 only while the PIM's batched estimate beats the NPU's); decode ATTENTION on PIM when
//                 [pim] compute_unit = "gemv_attention"; norms, RoPE, softmax, sampling and
//                 anything the PIM does not support stay on the NPU
//   auto          MATMUL/ATTENTION on whichever kind estimates the shorter time
// Then devices of that kind: a MATMUL is split by rows of W across every device of the kind
// that supports its slice (each holds its slice of the weights; the partial outputs are
// gathered to npu0 over the links); any other operator runs on the first device of the kind
// (npu0, or pim0, which holds the KV cache). Devices are asked (supports, estimate), never
// hard-coded. Per-layer override: layers in npu_only_layers run on npu0 with weights in NZ.
// A MOE_MATMUL record of one expert group (OpRecord::expert_group, sim/expert_load.h) runs on the
// kind its group names (the NPU group under pim_only: the host CPU when there is one).
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
    bool prefill_on_npu = true;      // [scheduling] prefill_engine == npu_gemm
    bool decode_on_pim = true;       // [scheduling] decode_engine == pim_gemv
    bool attention_on_pim = false;   // [pim] compute_unit == gemv_attention
    std::vector<int> npu_only_layers;
};

// Where one operator runs: one device, or a MATMUL split by rows across several.
struct OpPlacement {
    std::vector<int> devices;  // indices into SimHardware::devices; part i runs on devices[i]
    DeviceKind kind = DeviceKind::NPU;
    bool split() const { return devices.size() > 1; }
};

// Part `part` of `parts` of a row-split MATMUL: rows n / parts (the first n % parts parts take
// one more), weight, output bytes and flops in proportion; every part reads the whole input.
hw::OpShape split_rows(const hw::OpShape& s, int part, int parts);

class Placer {
public:
    Placer(PlacementOptions opts, const SimHardware& hw);
    // `shape` is the device view of `rec` (sim/op_shape.h).
    OpPlacement place(const OpRecord& rec, const hw::OpShape& shape) const;
    // True when an expert with `experts.m / experts.n_expert_active` rows runs on PIM under the
    // policy (sim/expert_load.h): `experts` is a MOE_MATMUL record of the layer's active experts
    // all given that many rows, and the expert follows the rule that group's matmul would
    // (auto, npu_pim_coop's batched decode: the device that runs the group sooner), so the
    // group's launch and set-up and the device's saturation are priced at the group's size.
    bool expert_on_pim(const OpRecord& experts) const;
    // True when layer's weight matrices (layer -1: lm-head) live in the PIM layout.
    bool pim_layout(int layer) const;
    const PlacementOptions& options() const { return opts_; }

private:
    bool forced_npu(int layer) const;
    DeviceKind choose_kind(const OpRecord& rec, const hw::OpShape& shape) const;
    DeviceKind faster_kind(const OpRecord& rec, const hw::OpShape& shape, const hw::OpShape& pim_part) const;
    std::vector<int> split_devices(DeviceKind kind, const hw::OpShape& shape) const;
    PlacementOptions opts_;
    const SimHardware& hw_;
    std::vector<int> npus_, pims_, cpus_;  // device indices by kind
};

}  // namespace duet::sim
