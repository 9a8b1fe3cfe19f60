#pragma once
// Model hyper-parameters: the shape of a decoder-only transformer, read from GGUF metadata
// (hparams_from_gguf) or taken from the preset table (model/arch_presets.h).
//
// Supported architectures (general.architecture): `llama` (Llama 1/2/3/3.1, and Mistral,
// whose GGUF files use arch `llama`) and `qwen2`. Anything else is a duet::Error that lists
// the supported ones.
//
// Conventions shared with the engine:
//  - RoPE rotates the first n_rot dimensions of each head. rope_neox = false is the
//    interleaved order of llama (pairs (2i, 2i+1)); true is the NEOX / HF order of qwen2
//    (pairs (i, i + n_rot/2)). Position p, pair i: theta = p * rope_freq_scale *
//    rope_freq_base^(-2i/n_rot) / rope_freqs[i] where rope_freqs is the optional F32 tensor
//    `rope_freqs.weight` of n_rot/2 elements (Llama-3.1 scaling, as llama.cpp's converter
//    writes it; has_rope_freqs says it exists). rope_freq_scale = 1 / rope.scaling.factor
//    for linear scaling, else 1.
//  - Attention: n_head query heads of head_dim each, n_head_kv key/value heads (GQA when
//    n_head_kv < n_head); query head h uses kv head h / (n_head / n_head_kv).
//  - FFN is SwiGLU: down(silu(gate(x)) * up(x)); norms are RMSNorm with norm_eps.
//  - tied_output: the output projection reuses token_embd.weight (no output.weight tensor).
//  - qkv_bias: attn_q/k/v carry F32 biases (qwen2).
//
// Thread safety: plain value type.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/dtype.h"
#include "graph/model_shape.h"

namespace duet::format {
class GgufFile;
class GgufWriter;
}  // namespace duet::format

namespace duet::model {

enum class Arch { LLAMA, QWEN2 };

const char* arch_name(Arch a);       // "llama", "qwen2": the general.architecture value
std::string supported_arch_names();  // "llama, qwen2"

struct Hparams {
    Arch arch = Arch::LLAMA;
    std::string arch_name = "llama";  // general.architecture as written in GGUF

    int64_t n_vocab = 0;
    int64_t n_ctx_train = 0;  // context length the model was trained for
    int64_t n_embd = 0;
    int64_t n_layer = 0;
    int64_t n_head = 0;
    int64_t n_head_kv = 0;
    int64_t n_ff = 0;
    int64_t head_dim = 0;  // per-head size of q, k and v
    int64_t n_rot = 0;     // rotated dimensions per head (== head_dim for every supported model)

    float norm_eps = 1e-5f;
    float rope_freq_base = 10000.0f;
    float rope_freq_scale = 1.0f;

    bool rope_neox = false;  // qwen2: true
    bool qkv_bias = false;   // qwen2: true
    bool tied_output = false;
    bool has_rope_freqs = false;

    int64_t n_gqa() const { return n_head / n_head_kv; }        // query heads per kv head
    int64_t n_embd_q() const { return n_head * head_dim; }      // query features (the catalogue's Q_DIM)
    int64_t n_embd_kv() const { return n_head_kv * head_dim; }  // key or value features (KV_DIM)
    // Parameters in the weights: every tensor of the catalogue the model has (graph/tensor_catalogue.h).
    int64_t n_params() const;

    // Throws duet::Error "<source>: <problem>" when the numbers are inconsistent or out of
    // range (n_embd % n_head, n_head % n_head_kv, n_rot even and <= head_dim, ...).
    void validate(std::string_view source) const;
};

bool operator==(const Hparams& a, const Hparams& b);

// The shape the graph, the tensor catalogue and the simulator work from: these hparams plus
// the dtypes of the matrices and of the KV cache (graph does not depend on model; this is
// the one translation).
graph::ModelShape model_shape(const Hparams& hp, DType weight_dtype = DType::F16, DType kv_dtype = DType::F16,
                              std::string name = "");

// Reads general.architecture and the <arch>.* keys (context_length, embedding_length,
// block_count, feed_forward_length, attention.head_count, attention.head_count_kv,
// attention.layer_norm_rms_epsilon, attention.key_length, rope.freq_base,
// rope.dimension_count, rope.scaling.type / .factor), n_vocab from <arch>.vocab_size or the
// tokenizer's token list or token_embd.weight, and the tensor-dependent flags (output.weight,
// rope_freqs.weight, blk.0.attn_q.bias). Validates; errors name the file and key.
Hparams hparams_from_gguf(const format::GgufFile& f);

// Writes general.architecture and the <arch>.* keys above (the inverse of hparams_from_gguf
// for the metadata side; tied_output, qkv_bias and has_rope_freqs are told by the tensors).
void write_hparams(format::GgufWriter& w, const Hparams& hp);

}  // namespace duet::model
