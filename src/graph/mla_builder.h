#pragma once
// Multi-head Latent Attention of one layer (DeepSeek-V2/V3), in the absorbed form, on the normed
// input xn [T][n_embd]. H = n_head, C = kv_lora_rank, R = qk_rope_head_dim, N = qk_nope_head_dim,
// V = v_head_dim:
//   q       = MATMUL(attn_q_b, RMSNORM(attn_q_a_norm, MATMUL(attn_q_a, xn)))   [T][H * (N + R)]
//             (MATMUL(attn_q, xn) when q_lora_rank == 0)
//   q_nope, q_pe = the N and R columns of each head (llama.cpp's layout: head h is [N | R])
//   kv_a    = MATMUL(attn_kv_a_mqa, xn)                                       [T][C + R]
//   c_kv    = RMSNORM(attn_kv_a_norm, kv_a[:, :C]); k_pe = kv_a[:, C:]
//   ROPE(q_pe, k_pe)                                                          one RoPE key for all heads
//   KV_WRITE(c_kv, k_pe)          the cache row is the latent: C + R values per token and layer
//   q_lat   = HEAD_MATMUL(attn_k_b, q_nope)   per head W_UK[C][N]: the query in latent space [T][H * C]
//   o_lat   = MLA_ATTENTION(q_lat, q_pe)      scores q_lat·c_kv + q_pe·k_pe over the cached rows
//                                             (scale 1/sqrt(N + R)), softmax, weights · c_kv [T][H * C]
//   o       = HEAD_MATMUL(attn_v_b, o_lat)    per head W_UV[V][C]                         [T][H * V]
// then the caller's MATMUL(attn_output). This is the form llama.cpp's deepseek2 graph runs with
// attn_k_b/attn_v_b in every phase; the naive form (K and V up-projected per token, then ordinary
// attention) gives the same output (tests/reference/moe_mla.py checks it) and is not planned. The
// real engine runs these nodes as they are (runtime/engine_mla.cpp), the cache a latent one.
// Thread safety: appends to the builder's graph.
#include "graph/block_builder.h"

namespace duet::graph {

// Returns the attention output o [T][n_head * v_head_dim] (the output projection's input).
int32_t add_mla_attention(BlockBuilder& b, int32_t layer, int32_t xn);

}  // namespace duet::graph
