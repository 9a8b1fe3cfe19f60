#pragma once
// The fusion pass: runs of sibling matmuls that read the same input become one matmul over
// the concatenated weight matrix — Q, K, V into ATTN_QKV and gate, up into FFN_GATE_UP: the
// FUSED rows of the tensor catalogue and the parts that name them (graph/tensor_catalogue.h).
//
// Rewrite of a run  y_i = x · W_iᵀ (i = 1..p, consecutive nodes, same layer, same input x,
// same weight dtype and k, roles matching a fused role's parts in order):
//   y = x · [W_1; …; W_p]ᵀ  (one MATMUL node, role = the fused role, n = Σ n_i, bias if any part
//   had one) and every y_i becomes the column view [Σ_{j<i} n_j, + n_i) of y, so the consumers
//   are unchanged. An in-place result written over a view (RoPE's q and k) gets storage of its
//   own instead: the consuming op reads the strided view and writes a contiguous tensor
//   (attention needs contiguous q).
// The records of the fused graph have one MATMUL (one launch, one read of x) where the
// unfused graph had p.
// Only MATMUL nodes whose roles are a fused role's parts join: a MoE layer's grouped expert
// matmuls (MOE_MATMUL), its router and shared expert, and MLA's q_a / q_b / kv_a projections and
// per-head matmuls stay as they are.
#include "graph/pass.h"
#include "graph/tensor_catalogue.h"  // fused_parts

namespace duet::graph {

class FuseSiblingMatmuls : public Pass {
public:
    const char* name() const override { return "fuse_sibling_matmuls"; }
    Graph run(const Graph& g) const override;
};

}  // namespace duet::graph
