#pragma once
// The architecture shape the trace-only planner needs: a plain struct the CLI fills from
// model::Hparams (sim does not depend on model). Decoder-only transformer with RMSNorm,
// GQA attention and a SwiGLU FFN (the only family duet runs).
#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace duet::sim {

struct ModelShape {
    std::string name;       // "llama2-7b" or the file name, for reports
    int64_t n_vocab = 0;
    int64_t n_embd = 0;
    int64_t n_layer = 0;
    int64_t n_head = 0;
    int64_t n_head_kv = 0;
    int64_t n_ff = 0;
    int64_t head_dim = 0;
    bool tied_output = false;           // lm-head reuses the embedding table
    bool qkv_bias = false;              // q/k/v projections add an f32 bias (qwen2; a matmul epilogue, not a record)
    DType weight_dtype = DType::F16;    // matrices as stored on the device
    DType kv_dtype = DType::F16;        // KV cache elements
};

}  // namespace duet::sim
