#pragma once
// The Mixture-of-Experts FFN of one layer (Mixtral, Qwen2/3-MoE, DeepSeek-V2/V3), on the normed
// input xn [T][n_embd]:
//   logits  = MATMUL(ffn_gate_inp)      [T][n_expert]
//   w       = MOE_ROUTE(logits)         [T][n_expert_used]  top-k ids and weights (softmax or
//                                                            sigmoid, optional renormalisation, scale)
//   g, u    = MOE_MATMUL(ffn_gate_exps), MOE_MATMUL(ffn_up_exps)   routed rows: [T][k * n_ff_exp]
//   a       = SWIGLU(g, u)                                          [T][k * n_ff_exp]
//   d       = MOE_MATMUL(ffn_down_exps, a)                          [T][k * n_embd]
//   shared  = down_shexp(silu(gate_shexp(xn)) * up_shexp(xn))       when n_ff_shexp > 0
//   sg      = MATMUL(ffn_gate_inp_shexp) [T][1]                     qwen2moe's shared-expert gate
//   out     = MOE_COMBINE(d, w[, shared[, sg]])                     [T][n_embd]
// A routed tensor holds each token's k expert rows side by side ([T * k] rows of n stored as
// [T][k * n]), so the static memory plan sizes it without a new row kind. Which expert a row
// goes to is a property of the data: the planner prices the grouped matmuls under uniform
// routing (sim/op_trace.h, MOE_MATMUL).
// Thread safety: appends to the builder's graph.
#include "graph/block_builder.h"

namespace duet::graph {

// Returns the FFN's output tensor [T][n_embd] (the caller adds it to the residual stream).
int32_t add_moe_ffn(BlockBuilder& b, int32_t layer, int32_t xn);

}  // namespace duet::graph
