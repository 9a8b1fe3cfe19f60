#pragma once
// Binds the tensors of a GGUF file to the weights of a decoder-only transformer, zero copy:
// every field points into the GgufFile's read-only mapping, so the GgufFile must outlive
// the Weights (runtime::Model holds both).
//
// Shapes are written in ggml order, as GGUF stores them: [ne0][ne1] where ne0 is the
// contiguous dimension. A matrix [k][n] is n rows of k elements: the kernels' W[n][k]
// (y = x · Wᵀ). bind_weights checks every tensor's presence, shape and dtype against the
// hparams; any mismatch throws duet::Error "<file>: tensor '<name>' ...".
//
// Thread safety: immutable after binding; read from any thread.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/hparams.h"

namespace duet::format {
class GgufFile;
}

namespace duet::model {

// One tensor inside the mapping. rows/cols: a matrix of `rows` rows of `cols` elements
// (ggml ne1 = rows, ne0 = cols); vectors have rows == 1.
struct TensorRef {
    const void* data = nullptr;
    DType dtype = DType::F32;
    int64_t rows = 0;
    int64_t cols = 0;
    size_t row_stride_bytes = 0;
    std::string name;  // GGUF tensor name, for messages

    bool present() const { return data != nullptr; }
    uint64_t n_bytes() const { return uint64_t(row_stride_bytes) * uint64_t(rows); }
    const float* f32() const { return static_cast<const float*>(data); }
};

struct LayerWeights {
    TensorRef attn_norm;  // [n_embd] f32
    TensorRef wq;         // [n_embd][n_head * head_dim]     rows: q features
    TensorRef wk;         // [n_embd][n_head_kv * head_dim]  rows: k features
    TensorRef wv;         // [n_embd][n_head_kv * head_dim]  rows: v features
    TensorRef wo;         // [n_head * head_dim][n_embd]     rows: model features
    TensorRef bq;         // [n_head * head_dim] f32, only when hparams.qkv_bias
    TensorRef bk;         // [n_head_kv * head_dim] f32, only when hparams.qkv_bias
    TensorRef bv;         // [n_head_kv * head_dim] f32, only when hparams.qkv_bias
    TensorRef ffn_norm;   // [n_embd] f32
    TensorRef ffn_gate;   // [n_embd][n_ff]  rows: n_ff
    TensorRef ffn_up;     // [n_embd][n_ff]  rows: n_ff
    TensorRef ffn_down;   // [n_ff][n_embd]  rows: n_embd
};

struct Weights {
    TensorRef token_embd;   // [n_embd][n_vocab]  one row per token
    TensorRef output_norm;  // [n_embd] f32
    TensorRef output;       // [n_embd][n_vocab]  == token_embd when hparams.tied_output
    TensorRef rope_freqs;   // [n_rot / 2] f32, only when hparams.has_rope_freqs
    std::vector<LayerWeights> layers;  // [n_layer]

    // Bytes of all distinct weight tensors (the tied output counted once).
    uint64_t total_bytes() const;
};

// Matmul weights may be F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_K, Q6_K (K-quants need cols % 256 == 0);
// norms, biases and rope_freqs must be F32.
Weights bind_weights(const format::GgufFile& file, const Hparams& hp);

}  // namespace duet::model
