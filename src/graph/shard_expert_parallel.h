#pragma once
// The expert-parallel pass: rewrites a Mixture-of-Experts graph into the graph one rank of `ep`
// runs (split from graph/parallel.h: rank e holds a contiguous block of E/ep routed experts of
// every MoE layer; attention, norms, the router and the shared experts are replicated).
//
// Per MoE layer, around the routed experts (graph/moe_builder.h):
//   MOE_ROUTE -> ALL_TO_ALL (dispatch: each token's rows go to the ranks holding its experts)
//             -> MOE_MATMUL gate, up -> SWIGLU -> MOE_MATMUL down
//             -> ALL_TO_ALL (combine: the expert outputs return to the tokens' ranks)
//             -> shared experts -> MOE_COMBINE
// The collectives read their input and write an in-place alias of it (no new storage); the
// dispatch also reads the routing weights (it needs the expert ids). n = n_embd, k = ep.
// On a tensor-parallel graph (Graph::tp with tp == ep, the same ranks: graph/parallel.h) every
// rank already holds every token after the attention's all-reduce, so no all-to-all is inserted:
// each rank runs its experts' rows of all tokens, and the tensor-parallel all-reduce after
// MOE_COMBINE sums the ranks' partial outputs (vLLM's FusedMoE under TP with expert parallelism
// reduces its output over the TP group the same way). On a graph tensor-parallel over fewer ranks
// (tp dividing ep: ep / tp data-parallel attention groups of tp ranks) the all-to-alls are
// inserted as without tensor parallelism; each rank of a group dispatches 1/tp of the group's
// tokens (sim/expert_load.h prices that share), and the group's all-reduce after MOE_COMBINE
// gathers the shares.
// Which rows each rank's experts receive depends on the routing: the records of the expert
// matmuls and of the all-to-alls are priced per rank by sim/expert_load.h.
// `Graph::ep` holds the shard; graph::matrices counts the rank's experts only.
// Precondition: an unfused graph without expert parallelism, tensor-parallel over tp ranks with tp
// dividing ep (the tensor-parallel rank == rank mod tp); ep == 1 is the identity. Throws
// duet::Error for a dense model or an ep that does not divide n_expert (graph/parallel.h).
#include "graph/parallel.h"
#include "graph/pass.h"

namespace duet::graph {

class ShardExpertParallel : public Pass {
public:
    ShardExpertParallel(int ep, int rank) : ep_(ep), rank_(rank) {}
    const char* name() const override { return "shard_expert_parallel"; }
    Graph run(const Graph& g) const override;

private:
    int ep_, rank_;
};

}  // namespace duet::graph
