#pragma once
// The static memory plan of a graph: from each storage root's first write to its last read
// (its lifetime, in node indices), an offset in one arena so that roots alive at the same node
// never overlap. Offsets and widths are in floats per row: the arena holds `arena_width`
// floats per token, so a forward of up to C tokens needs arena_width * C floats and root r
// occupies [offset[r] * C, (offset[r] + width) * C) with row stride = its width.
//
// The engine allocates its scratch from this plan; memory accounting reports its peak (the
// activations a device must hold) — one computation, so the two cannot disagree.
// Thread safety: pure functions; a MemoryPlan is immutable after plan_memory.
#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace duet::graph {

struct MemoryPlan {
    std::vector<int32_t> first, last;  // per tensor id (roots meaningful): node indices; -1 when unused
    std::vector<int64_t> offset;       // per tensor id: column offset in the arena (base offset + col0)
    int64_t arena_width = 0;           // floats per token the arena needs (roots without LOGITS / TOKEN_IDS)
};

MemoryPlan plan_memory(const Graph& g);
// The same lifetimes with no reuse: every activation root its own columns, in order of first
// use (arena_width = the sum of their widths). The per-op allocation the static plan is
// compared to: each op's output gets fresh memory that no later op reuses within the step (CANN
// graph mode with memory reuse disabled, ge.exec.disableReuseMemory = 1).
MemoryPlan plan_memory_without_reuse(const Graph& g);

// Largest sum of live activation bytes over the nodes of one forward of `n_tokens` rows
// (OUT_ROWS tensors have n_out_rows rows), each element `elem_bytes` wide. LOGITS count (the
// device produces them); TOKEN_IDS do not.
//
// collectives_held_to_next_collective (MULTI_STREAM_MEMORY_REUSE=0, torch_npu): a tensor a collective
// (ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER) reads or writes runs on the communication stream, and
// without multi-stream memory reuse its block (recordStream) returns to the pool only once the
// compute stream has waited on the communication stream again: it stays live until the next
// collective node after its last use (the forward's last node when none follows). Off (the
// default, reuse 1..3: the recordStream mark erased at work.wait()): freed at its last use.
uint64_t peak_live_bytes(const Graph& g, const MemoryPlan& p, int64_t n_tokens, int64_t n_out_rows,
                         uint64_t elem_bytes, bool collectives_held_to_next_collective = false);

}  // namespace duet::graph
