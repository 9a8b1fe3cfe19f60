#pragma once
// The host CPU as a modelled device (configs/hw/host_cpu.toml): under placement pim_only it runs
// every operator the PIM devices do not (norms, RoPE, softmax, KV writes, prefill GEMMs), as
// CENT's host does (docs/hardware-model.md "Host CPU"). A roofline: an operator takes
//     op_overhead_ns + max(bytes / memory_bandwidth_gbps, flops / peak_gflops)
// with bytes = weight + input + output bytes, plus sampling_ns for each token a SAMPLE operator
// (OpShape::elem) chooses: the top-k selection and sampling the roofline does not see. No cache
// reuse or vector-width effects are modelled (stated in the preset). Thread safety: immutable
// after construction.
#include <string>

#include "hw/device.h"

namespace duet::hw::cpu {

struct HostCpuSpec {
    std::string name;               // preset name
    double memory_bandwidth_gbps = 0;  // peak DRAM bandwidth, GB/s = bytes per ns
    double peak_gflops = 0;         // peak arithmetic rate, 1e9 flop/s
    double op_overhead_ns = 0;      // fixed cost of starting one operator (threads woken, joined)
    double sampling_ns = 0;         // choosing one token from its logits (top-k and sampling), per token
    double pj_per_byte = 0;         // DRAM access energy per byte moved
};

// Reads section `name` of <config_dir>/hw/host_cpu.toml. Throws duet::Error naming the file and key.
HostCpuSpec load_host_cpu_preset(const std::string& name, const std::string& dir = "");

class HostCpuDevice final : public Device {
public:
    explicit HostCpuDevice(HostCpuSpec spec) : spec_(std::move(spec)) {}
    std::string name() const override { return "host CPU (" + spec_.name + ")"; }
    bool supports(const OpShape& op) const override;  // every operator with a size
    Cost estimate(const OpShape& op) const override;
    const HostCpuSpec& spec() const { return spec_; }

private:
    HostCpuSpec spec_;
};

}  // namespace duet::hw::cpu
