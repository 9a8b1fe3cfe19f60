#pragma once
// Knobs of one simulated run: placement plus the config.toml scheduling/reorder/memory knobs
// that shape the timeline and the memory accounting (CLI fills them from CoopConfig; sim
// does not depend on config/ so that tests can set them directly).
#include <cstdint>

#include "core/dtype.h"
#include "sim/collective.h"
#include "sim/expert_routing.h"
#include "sim/placement.h"

namespace duet::sim {

// Tensor and pipeline parallelism of a run (sim/scale_out.h, docs/scale-out.md); expert parallelism
// is RunOptions::experts.ep (its ranks are a stage's ranks as tensor-parallel ones are: tp or ep
// is 1, or tp divides ep, tensor-parallel groups tiling the expert-parallel ranks;
// graph::stage_ranks).
struct ParallelOptions {
    int tp = 1;             // ranks sharing every layer (the plan holds rank 0's shard)
    int pp = 1;             // pipeline stages (Plan::next_stages)
    int micro_batches = 1;  // groups of sequences in flight through the stages (the plan's n_seq each)
    ExpansionCost launch;   // HCCL_OP_EXPANSION_MODE's launch cost of every collective
};

struct RunOptions {
    PlacementOptions placement;
    int64_t prefetch_depth = 4;         // [reorder] blocks converted ahead of the one computed
    bool zero_copy_switch = true;       // [scheduling]
    bool preconvert_first_token = true; // [scheduling] layer 0 pre-converted to NZ at load time
    bool weight_base_shared = true;     // [memory] one weight stream per decode step for the batch
    int64_t cache_limit_mb = 512;       // [memory] conversion cache cap
    int64_t block_size_kb = 16;         // [reorder] conversion block (for buffer accounting)
    // Runtime knobs (config/runtime_knobs.h):
    bool prefetch_mlp = false;          // VLLM_ASCEND_ENABLE_PREFETCH_MLP: decode gate/up weights prefetched into L2 (timeline.h)
    int multi_stream_memory_reuse = 1;  // MULTI_STREAM_MEMORY_REUSE: 0 = collective tensors freed at the next collective
    // Activations of the int8-weight matmuls: F16 (W8A16, weights dequantised on the load path,
    // fp16 cube rate) or I8 (W8A8: inputs quantised per token, the int8 cube fractal; outputs f16).
    DType int8_matmul_act_dtype = DType::F16;
    // Charge SimHardware::step_host_ns once per forward (the serving stack's per-step host work).
    // false: the model step alone, as a harness timing the forward between device syncs measures it.
    // Never charged under placement pim_only (no NPU host runtime).
    bool serving_step_cost = true;
    bool record_events = false;         // keep per-op events for --trace
    // Tensor-parallel ranks on congruent sub-machines (same device models, same links, none
    // shared) run the same chain: simulate rank 0 and copy its figures to the others (exact; not
    // with record_events, whose trace shows every rank). false: every rank simulated.
    bool mirror_tp_ranks = true;
    int64_t record_decode_steps = -1;   // with record_events: decode steps recorded (-1: all; prefill always)
    ParallelOptions parallel;
    ExpertLoadOptions experts;          // MoE routing and expert parallelism (sim/expert_load.h)
};

}  // namespace duet::sim
