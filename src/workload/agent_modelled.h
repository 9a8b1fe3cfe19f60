#pragma once
// Modelled replay of an agent session (workload/agent_trace.h) on the NPU model: every model
// call is one trace-only generation (sim/planner.h) simulated on the machine (sim/hardware.h), NPU only
// (the agent-serving figures of issue 15 are about the NPU; the PIM is orthogonal to them).
//
// Thread safety: pure function of its inputs (the hardware is read only).
#include <cstdint>
#include <string>
#include <vector>

#include "sim/hardware.h"
#include "sim/memory_accounting.h"
#include "graph/model_shape.h"
#include "sim/run_options.h"
#include "workload/agent_trace.h"

namespace duet::workload {

// The model's switches of the ablation (docs/agent.md has each mechanism and its source).
struct ModelledSwitches {
    bool prefix_reuse = true;  // the prefill charges only the uncached tokens (plan_generation n_cached)
    bool fuse = false;         // the fused graph: fewer launches, one weight stream per group (RMSNorm: W8A8)
    bool paged_kv = true;      // KV blocks for the call's context, else the max-length reservation
    bool static_plan = true;   // activations from the static memory plan, else one buffer per tensor
    // Weight quantisation on the NPU: int8 matrices (per-channel scales) with f16 activations
    // (W8A16: fp16 cube rate, half the weight bytes) or int8 activations (W8A8: the SoC's int8
    // cube fractal, configs/hw/ascend910b*.toml [fractal] int8_*). Norms, embedding and KV stay f16.
    enum class WeightQuant { NONE, W8A16, W8A8 } weight_quant = WeightQuant::NONE;
    bool kv_int8 = false;  // the KV cache in int8 blocks (34 bytes per 32 values), else the shape's kv dtype
};

struct ModelledCall {
    int64_t n_prompt = 0, n_cached = 0, n_generate = 0;
    double ttft_ms = 0, tbt_ms = 0;
    double prefill_busy_ns = 0, prefill_launch_ns = 0;  // NPU busy in the prefill, of which launch/dispatch
    sim::MemoryBreakdown memory;
};

struct ModelledRun {
    std::vector<ModelledCall> calls;
    double ttft_mean_ms = 0, ttft_first_ms = 0;
    uint64_t peak_memory_bytes = 0;  // the largest call's total
    sim::MemoryBreakdown peak;       // its breakdown
};

// `shape`: the architecture and the weight dtype on the device; `max_ctx`: the per-sequence
// reservation without paged KV (the model's trained context, at least the session).
// `base`: run options besides the placement (NPU only is forced), e.g. the runtime knobs.
ModelledRun replay_modelled(const graph::ModelShape& shape, const AgentTrace& trace, const ModelledSwitches& sw,
                            const sim::SimHardware& hw, int64_t max_ctx, const sim::RunOptions& base = {});

}  // namespace duet::workload
