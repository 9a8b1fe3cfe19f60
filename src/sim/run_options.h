#pragma once
// Knobs of one simulated run: placement plus the config.toml scheduling/reorder/memory knobs
// that shape the timeline and the memory accounting (CLI fills them from CoopConfig; sim
// does not depend on config/ so that tests can set them directly).
#include <cstdint>

#include "sim/collective.h"
#include "sim/placement.h"

namespace duet::sim {

// Tensor and pipeline parallelism of a run (sim/scale_out.h, docs/scale-out.md).
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
    bool record_events = false;         // keep per-op events for --trace
    int64_t record_decode_steps = -1;   // with record_events: decode steps recorded (-1: all; prefill always)
    ParallelOptions parallel;
};

}  // namespace duet::sim
