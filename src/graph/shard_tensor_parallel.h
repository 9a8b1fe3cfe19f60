#pragma once
// The tensor-parallel pass: rewrites a model's graph into the graph one rank of `tp` runs
// (split from graph/parallel.h).
//
// Per layer, on rank r (heads and FFN ranges from tp_shard), every MATMUL takes the split of
// its weight's row in the tensor catalogue (graph/tensor_catalogue.h, column `tp`):
//   ROWS (column-parallel: the attention projections, gate, up): n = the rank's range of the
//                row Dim (local heads · head_dim, or local FFN features);
//   COLS (row-parallel: attention output, down): k = the rank's range of the column Dim,
//                giving a partial sum of the full n_embd output,
//   then the partial sums are combined before the residual ADD:
//     ALL_REDUCE (sum over ranks, in place)                       — default
//     REDUCE_SCATTER then ALL_GATHER (in place, same result)      — flashcomm (vllm-ascend's
//                VLLM_ASCEND_ENABLE_FLASHCOMM replaces the all-reduce with this pair)
//   ROPE, KV_WRITE, ATTENTION run over the local heads only (the rank's KV cache holds its KV
//   heads), SWIGLU over the local FFN features.
// Mixture-of-Experts layers: the router is replicated (every rank routes alike); each expert's
//   gate/up MOE_MATMUL keeps the rank's range of its features (ROWS), its down the same range of
//   inputs (COLS), the shared experts likewise; the partial sums are combined once, after
//   MOE_COMBINE (linear in the experts' outputs, with the replicated routing weights).
//   With `whole_experts` (expert parallelism on the same ranks, graph/parallel.h) the routed
//   experts keep all their features here (ShardExpertParallel then gives each rank E/tp of them);
//   the one reduction after MOE_COMBINE sums the ranks' partial outputs all the same.
// Latent attention (MLA): q (or q_b) keeps the local heads' rows, HEAD_MATMUL (W_UK, W_UV) and
//   MLA_ATTENTION run over the local heads, the output projection reads their features (COLS);
//   the low-rank projections kv_a (and q_a) and their norms are replicated, so KV_WRITE stores
//   the whole latent row [c | k_pe] on every rank (as vLLM holds MLA's cache under TP).
// REPLICATED rows (embedding, norms, lm-head) are whole on every rank: every rank holds the whole residual stream
// and computes the same logits. Collective nodes: in = out = the partial-sum tensor (the output
// is an in-place alias), n = n_embd, k = tp (the group size).
// The rewritten graph's `shape` holds the rank's local n_head, n_head_kv, n_ff, n_ff_exp and
// n_ff_shexp, and
// `Graph::tp` the shard, so consumers read local sizes where they read sizes before.
// Precondition: an unsharded, unfused graph (run fusion after this pass); tp == 1 is the
// identity. Throws duet::Error for a split the shape does not allow (graph/parallel.h).
#include "graph/parallel.h"
#include "graph/pass.h"

namespace duet::graph {

class ShardTensorParallel : public Pass {
public:
    ShardTensorParallel(int tp, int rank, bool flashcomm, int64_t ff_align = 1, bool whole_experts = false)
        : tp_(tp), rank_(rank), flashcomm_(flashcomm), ff_align_(ff_align), whole_experts_(whole_experts) {}
    const char* name() const override { return "shard_tensor_parallel"; }
    Graph run(const Graph& g) const override;

private:
    int tp_, rank_;
    bool flashcomm_;
    int64_t ff_align_;
    bool whole_experts_;
};

}  // namespace duet::graph
