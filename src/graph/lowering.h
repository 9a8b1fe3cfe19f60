#pragma once
// Lowering: a graph node and the batch of one forward become the node's OpRecord
// (graph/op_record.h, which lists the field semantics per kind). The only place bytes and
// FLOPs of an operator are computed: the trace-only planner (sim/planner.h) lowers every node
// of a planned generation, the engine's dispatch point (runtime/dispatch.h) the node it runs.
// Thread safety: pure functions.
#include <cstdint>
#include <span>

#include "graph/graph.h"
#include "graph/op_record.h"

namespace duet::graph {

// One sequence of a forward: n_past tokens already cached, n_new computed now.
struct SeqSpan {
    int64_t n_past = 0;
    int64_t n_new = 0;
};

// The forward a node is lowered for.
struct Batch {
    std::span<const SeqSpan> seqs;  // the sequences (ragged: each its own n_past, n_new)
    int64_t n_tok = 0;              // rows of a TOKENS tensor: the sum of n_new
    int64_t n_out = 0;              // rows of an OUT_ROWS tensor: n_seq, or more when all logits are wanted
    Phase phase = Phase::PREFILL;
    int32_t n_seq() const { return int32_t(seqs.size()); }
};

// The record of node `nd` of `g` in forward `b`.
OpRecord lower(const Graph& g, const Node& nd, const Batch& b);

}  // namespace duet::graph
