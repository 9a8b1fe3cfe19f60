#pragma once
// The tensor-parallel pass under TpPartition::CENT (graph/parallel.h): the graph one of `tp`
// devices runs in CENT's model-parallel trace (Morteza1814/CENT @a5d6e53, cent_simulation/
// Llama.py TransformerBlockLlama::trace_only with --model-parallel --FC-devices tp; the
// derivation is in docs/scale-out.md, "CENT's partition").
//
// Per layer, on rank r:
//   every block MATMUL (Q, K, V, attention output, gate, up, down): n = the rank's range of the
//     matrix's output rows, [r·n/tp, (r+1)·n/tp), k whole (CENT spreads each matrix's columns over
//     the banks of all FC_devices: Vector_Matrix_Mul_weight_pim_only_trace with FC_total_banks);
//     then ALL_GATHER of the whole output (in = the local rows, out = an in-place alias of the
//     whole width, n = the matrix's full output width, k = tp), so every rank holds it;
//   ROPE, KV_WRITE, ATTENTION, SWIGLU and the norms keep the full model's sizes (every rank runs
//     every head and the whole FFN width, as CENT's per-device trace does);
//   the graph's `tp` holds the whole ranges of heads and FFN features and context_ranks = tp:
//     each sequence's context positions are spread over the ranks' memories (q.K^T over one
//     tp-th of them per rank; the lowering carries it to the ATTENTION record).
// The embedding, the output norm and the lm-head stay replicated, as under MEGATRON.
// Precondition: an unsharded, unfused dense graph with standard attention; tp == 1 is the
// identity. Throws duet::Error for a MoE or latent-attention model, a fused graph, or a rank
// outside [0, tp).
#include "graph/pass.h"

namespace duet::graph {

class ShardTensorParallelCent : public Pass {
public:
    ShardTensorParallelCent(int tp, int rank) : tp_(tp), rank_(rank) {}
    const char* name() const override { return "shard_tensor_parallel_cent"; }
    Graph run(const Graph& g) const override;

private:
    int tp_, rank_;
};

}  // namespace duet::graph
