#pragma once
// The host CPU running duet's own engine, as a modelled device: every operator priced from a
// measured profile of this machine (hw/cpu/host_profile.h). It stands in for npu0 when `duet
// bench --workload serving --host-profile FILE` predicts the real `duet serve` on this CPU.
//   GEMM/GEMV:   weight_bytes * matmul_ns_per_weight_byte(dtype, m)
//   ATTENTION:   ns + ns_per_kv_byte * weight_bytes (the KV read) + ns_per_flop * flops
//   COPY:        copy.ns + copy.ns_per_byte * bytes;  other classes: elementwise.ns + ns_per_byte * bytes
// where bytes counts activations in f32 (the op shape's activation bytes rescaled from its
// act_dtype, as the engine holds f32 rows). The step's host work (step.ns + ns_per_seq * n_seq)
// is charged by the timeline (sim::SimHardware::step_host_ns, step_host_ns_per_seq).
// Thread safety: immutable after construction.
#include <string>

#include "hw/cpu/host_profile.h"
#include "hw/device.h"

namespace duet::hw::cpu {

class HostEngineDevice final : public Device {
public:
    explicit HostEngineDevice(HostProfile p) : p_(std::move(p)) {}
    std::string name() const override { return "host CPU (" + p_.cpu + ", " + std::to_string(p_.threads) + " threads)"; }
    bool supports(const OpShape& op) const override;  // every operator with a size
    Cost estimate(const OpShape& op) const override;  // throws duet::Error for a matmul dtype not profiled
    const HostProfile& profile() const { return p_; }

private:
    HostProfile p_;
};

}  // namespace duet::hw::cpu
