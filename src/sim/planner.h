#pragma once
// Trace-only planner: the OpRecords the engine's dispatch point emits for a generation,
// lowered from the model's graph (graph/graph.h) alone, without weights: one record per node,
// by graph::lower (graph/lowering.h), the same lowering the engine's dispatch point uses;
// tests compare planner and engine on generated models.
//
// A generation of `batch` equal sequences: one PREFILL forward of seq_len tokens each, then
// gen_len - 1 DECODE forwards of one token each (the prefill's logits give the first
// generated token). Thread safety: pure functions.
#include <cstdint>
#include <memory>
#include <vector>

#include "graph/graph.h"
#include "graph/model_shape.h"
#include "sim/op_trace.h"

namespace duet::sim {

// One forward pass inside a trace: records [begin, end).
struct ForwardSpan {
    Phase phase = Phase::PREFILL;
    int64_t n_past = 0;  // context tokens already cached per sequence before this forward
    int64_t n_new = 0;   // tokens per sequence processed by this forward
    size_t begin = 0, end = 0;
};

struct Plan {
    OpTrace ops;
    std::vector<ForwardSpan> forwards;
    // The graph the records were lowered from (null for a plan split from an engine trace:
    // memory accounting then builds the shape's default graph).
    std::shared_ptr<const graph::Graph> graph;
    // Pipeline parallel (sim/scale_out.h): the plans of stages 1..pp-1, this plan being stage 0;
    // every stage has the same forwards (phases and lengths). Empty: one stage.
    std::vector<Plan> next_stages;
    // Expert parallel (sim/expert_load.h): the plans of EP ranks 1..ep-1 of this stage (their
    // expert matmuls see other rows); this plan is rank 0's. Empty: every rank runs this plan.
    std::vector<Plan> ep_ranks;
};

// Appends the records of one forward over `n_seq` sequences, each with n_past cached and
// n_new new tokens; logits (and the sampling marker) for the last token of each sequence only.
void plan_forward(const graph::Graph& g, int32_t n_seq, int64_t n_past, int64_t n_new, Phase phase, OpTrace& out);

// Whole generation of graph g (the default graph of `shape`, or one rewritten by passes);
// throws duet::Error for non-positive lengths or an invalid shape.
//
// Prefix reuse (vLLM automatic prefix caching, runtime/prefix_cache.h): n_cached of the
// seq_len prompt tokens already have their K/V in the cache (an agent resending its history),
// so the PREFILL forward computes only the seq_len - n_cached uncached tokens (n_past =
// n_cached): the matmuls, norms and KV writes scale with the uncached tokens only, while
// attention still reads the whole context. 0 <= n_cached < seq_len (at least one token is
// computed: its logits give the first generated token), else duet::Error.
Plan plan_generation(const graph::Graph& g, int64_t seq_len, int64_t gen_len, int32_t batch, int64_t n_cached = 0);
Plan plan_generation(const ModelShape& shape, int64_t seq_len, int64_t gen_len, int32_t batch,
                     const graph::GraphOptions& go = {}, int64_t n_cached = 0);

// Splits an engine trace into forwards at each EMBED record (each forward starts with one).
std::vector<ForwardSpan> split_forwards(const OpTrace& ops);

}  // namespace duet::sim
