#pragma once
// The llama family (Llama 1/2/3, Mistral, Qwen2): pre-norm decoder blocks
//   x += attn_out(attention(rope(q(xn), k(xn)), v(xn)))   with xn = rmsnorm(x) * attn_norm
//   x += down(silu(gate(xn)) * up(xn))                     with xn = rmsnorm(x) * ffn_norm
// then logits = lm_head(rmsnorm(x) * output_norm) for the OUT_ROWS rows.
// With experts (n_expert > 0) the FFN of layers >= n_layer_dense_lead is graph/moe_builder.h's;
// with a latent KV (kv_lora_rank > 0) the attention is graph/mla_builder.h's (Mixtral,
// Qwen2/3-MoE, DeepSeek-V2/V3: the same pre-norm block around them).
// Flags from the shape: qkv_bias (qwen2) puts a bias on Q/K/V, n_head_kv < n_head is GQA
// (narrower K/V), rope_neox is a property of the engine's RoPE kernel call (same graph).
// Thread safety: pure function.
#include "graph/graph.h"

namespace duet::graph {

Graph build_llama(const ModelShape& shape);

}  // namespace duet::graph
