#pragma once
// The architecture shape a graph is built from: the hyperparameters plus the dtypes of the
// matrices and of the KV cache. A plain struct filled from model::Hparams by model::model_shape
// (model/hparams.h; graph does not depend on model) and read by the builders, the tensor
// catalogue, the planner and the simulator. `family` picks the builder.
// The expert FFN and latent attention are parts the llama-family builder composes
// (graph/moe_builder.h, graph/mla_builder.h) when their fields are set.
#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace duet::graph {

enum class Family {
    LLAMA,  // llama / mistral / qwen2: pre-norm blocks, GQA attention with RoPE, SwiGLU FFN
};

struct ModelShape {
    std::string name;       // "llama2-7b" or the file name, for reports
    int64_t n_vocab = 0;
    int64_t n_embd = 0;
    int64_t n_layer = 0;
    int64_t n_head = 0;
    int64_t n_head_kv = 0;  // < n_head: grouped-query attention
    int64_t n_ff = 0;
    int64_t head_dim = 0;
    bool tied_output = false;           // lm-head reuses the embedding table
    bool qkv_bias = false;              // q/k/v projections add an f32 bias (qwen2; a matmul epilogue, not a record)
    DType weight_dtype = DType::F16;    // matrices as stored on the device
    DType kv_dtype = DType::F16;        // KV cache elements
    // After the fields above, so positional initialisers written before the graph keep working.
    bool rope_neox = false;             // RoPE pairs (i, i + n_rot/2) (qwen2) instead of (2i, 2i + 1)
    Family family = Family::LLAMA;
    int64_t n_rot = 0;                  // rotated dimensions per head (0: head_dim)
    bool has_rope_freqs = false;        // the model stores RoPE frequency factors (Llama-3.1)

    // Mixture-of-Experts FFN (model::Hparams has the data flow; n_expert 0: dense).
    int64_t n_expert = 0;            // routed experts per MoE layer
    int64_t n_expert_used = 0;       // experts per token (top-k)
    int64_t n_ff_exp = 0;            // intermediate size of one routed expert
    int64_t n_ff_shexp = 0;          // intermediate size of the shared experts together (0: none)
    int64_t n_layer_dense_lead = 0;  // leading layers with the dense FFN of n_ff
    bool shared_expert_gate = false; // qwen2moe: a [1][n_embd] gate scales the shared expert
    bool qk_norm = false;            // qwen3: q and k RMS-normed per head before RoPE
    bool expert_probs_bias = false;  // the router has a selection-only bias per expert
    // Multi-head Latent Attention (kv_lora_rank 0: standard attention). head_dim is then
    // qk_nope_head_dim + qk_rope_head_dim.
    int64_t q_lora_rank = 0;  // 0: q is one n_embd -> n_head * head_dim matrix
    int64_t kv_lora_rank = 0;
    int64_t qk_rope_head_dim = 0;
    int64_t qk_nope_head_dim = 0;
    int64_t v_head_dim = 0;
    bool mla_kv_b = false;    // W_kv_b is stored unsplit instead of as its two per-head halves

    bool is_moe() const { return n_expert > 0; }
    bool is_mla() const { return kv_lora_rank > 0; }
    bool moe_layer(int64_t il) const { return is_moe() && il >= n_layer_dense_lead; }
    // KV-cache bytes one token takes in one layer: the latent c_kv and the shared RoPE key with
    // MLA, K and V of every kv head otherwise. `kv_row_bytes(n)` is the KV dtype's bytes for n values.
    int64_t kv_values_per_token_layer() const {
        return is_mla() ? kv_lora_rank + qk_rope_head_dim : 2 * n_head_kv * head_dim;
    }
};

}  // namespace duet::graph
