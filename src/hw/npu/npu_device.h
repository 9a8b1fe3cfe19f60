#pragma once
// Analytical model of an Ascend NPU (issue 3 item 5): cube and vector rooflines with tile
// quantisation, on-chip buffer capacity (a tiling is chosen that fits L0A/L0B/L0C/L1; operands
// stream through L2, or from device memory when they do not fit L2), device-memory time, and
// per-operator launch overhead by dispatch mode. docs/npu-and-layout-model.md has every equation.
//
// Ownership: the device owns a copy of its preset. Thread safety: estimate()/explain() are const
// and reentrant. Units: ns, bytes, FLOP (2 per multiply-add), GB/s = 1e9 B/s.
#include <optional>
#include <string>

#include "hw/device.h"
#include "hw/npu/npu_preset.h"

namespace duet::hw::npu {

enum class DispatchMode { EAGER, QUEUE0, QUEUE1, QUEUE2, GRAPH };
const char* dispatch_name(DispatchMode d);  // "eager", "queue0", ..., "graph"
std::optional<DispatchMode> dispatch_from_name(const std::string& name);

struct NpuOptions {
    DispatchMode dispatch = DispatchMode::QUEUE1;  // torch_npu's default TASK_QUEUE_ENABLE=1
    // Sustained fraction of the preset's peak device-memory bandwidth (from the DRAM model's
    // analytical efficiency once hw/dram provides it; 1.0 = the published peak).
    double memory_efficiency = 1.0;
    // true: attention is one fused operator (FlashAttention: scores and probabilities stay in
    // L0C/UB); false (VLLM_ATTENTION_BACKEND=TORCH_SDPA): the unfused math path, whose score
    // matrix is written to device memory by Q.K^T, read and written by softmax, read by P.V.
    bool fused_attention = true;
};

// The tiling chosen for a cube operator: output tiles of bm x bn, L0 k-depth bk, distributed
// over the cores in waves.
struct CubeTiling {
    int64_t bm = 0, bn = 0, bk = 0;
    int64_t tiles = 0, waves = 0;
    int active_cores = 0;
};

// Everything behind one estimate, for reports and tests.
struct NpuBreakdown {
    Cost cost;
    double t_device_ns = 0;   // roofline time of the operator on the device (launch excluded)
    double t_cube_ns = 0, t_vector_ns = 0, t_l1_to_l0_ns = 0, t_l2_ns = 0, t_memory_ns = 0;
    double useful_flops = 0, padded_flops = 0;
    double fractal_utilisation = 0;  // useful / padded FLOPs (m, n, k padded to the fractal)
    double core_utilisation = 0;     // tiles / (waves * cores)
    double cube_utilisation = 0;     // useful FLOPs / (peak cube FLOP/s * t_device)
    double memory_bytes = 0;         // device-memory traffic (reads + writes)
    double l2_bytes = 0;             // L2 -> L1 traffic
    double effective_bandwidth_gbps = 0;
    bool operands_fit_l2 = false;
    CubeTiling tiling;
};

class NpuDevice : public Device {
public:
    explicit NpuDevice(NpuPreset preset, NpuOptions options = {});

    std::string name() const override { return preset_.soc_version; }
    // False for bf16 on a SoC without bf16, and for shapes with a non-positive dimension.
    bool supports(const OpShape& op) const override;
    Cost estimate(const OpShape& op) const override { return explain(op).cost; }
    // Throws duet::Error for an unsupported op (naming the SoC and the reason).
    NpuBreakdown explain(const OpShape& op) const;

    const NpuPreset& preset() const { return preset_; }
    const NpuOptions& options() const { return options_; }
    // Host time of one engine step of the serving stack under this dispatch mode, ns: the preset's
    // graph_step_us for GRAPH, eager_step_us for EAGER and QUEUE0/1/2. Charged once per forward by
    // the timeline (sim/timeline.h), not by estimate().
    double step_overhead_ns() const;
    // min(peak * memory_efficiency, active_cores * ddr_read_bytes_per_cycle * clock)
    double effective_bandwidth_gbps(int active_cores, double clock_mhz) const;

private:
    NpuBreakdown cube_op(const OpShape& op) const;
    NpuBreakdown attention_op(const OpShape& op) const;
    NpuBreakdown vector_op(const OpShape& op) const;
    void finish(NpuBreakdown& b) const;  // launch, bound, energy

    NpuPreset preset_;
    NpuOptions options_;
};

}  // namespace duet::hw::npu
