#pragma once
// The architecture shape a graph is built from: the hyperparameters plus the dtypes of the
// matrices and of the KV cache. A plain struct filled from model::Hparams by model::model_shape
// (model/hparams.h; graph does not depend on model) and read by the builders, the tensor
// catalogue, the planner and the simulator. `family` picks the builder.
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
};

}  // namespace duet::graph
