#pragma once
// The tensors of a multi-token-prediction block of their own (llama.cpp's LLM_TENSOR_NEXTN_*,
// DeepSeek-V3's MTP module), beside the block's ordinary rows of the tensor catalogue (attention,
// the expert FFN). A file with <arch>.nextn_predict_layers = m holds them in its last m blocks
// (block_count counts them; Hparams::n_layer does not). The engine never runs them: binding
// checks their shapes and dtypes (model/weights.h), and the synthetic writer emits them so a
// test file has the structure of a real one.
//
//   blk.N.nextn.eh_proj.weight           [2 n_embd -> n_embd] matrix: [norm(embedding) | norm(hidden)]
//   blk.N.nextn.enorm.weight, hnorm      [n_embd] f32 norms of the embedding and of the hidden state
//   blk.N.nextn.embed_tokens.weight      [n_embd][n_vocab] table (optional: the model's own otherwise)
//   blk.N.nextn.shared_head_head.weight  [n_embd][n_vocab] lm-head (optional)
//   blk.N.nextn.shared_head_norm.weight  [n_embd] f32 (optional)
// Thread safety: an immutable table.
#include <cstdint>
#include <string>

#include "model/hparams.h"

namespace duet::model {

enum class NextnShape : uint8_t { EH_PROJ, NORM, VOCAB_TABLE };

struct NextnTensorSpec {
    const char* gguf;  // "%d" stands for the block index
    NextnShape shape;
    bool required;
};

inline constexpr NextnTensorSpec kNextnTensors[] = {
    {"blk.%d.nextn.eh_proj.weight", NextnShape::EH_PROJ, true},
    {"blk.%d.nextn.enorm.weight", NextnShape::NORM, true},
    {"blk.%d.nextn.hnorm.weight", NextnShape::NORM, true},
    {"blk.%d.nextn.embed_tokens.weight", NextnShape::VOCAB_TABLE, false},
    {"blk.%d.nextn.shared_head_head.weight", NextnShape::VOCAB_TABLE, false},
    {"blk.%d.nextn.shared_head_norm.weight", NextnShape::NORM, false},
};

// Input features (ggml ne0) and output rows (ne1; 0 for an f32 vector) of the tensor.
inline int64_t nextn_cols(const NextnTensorSpec& t, const Hparams& hp) {
    return t.shape == NextnShape::EH_PROJ ? 2 * hp.n_embd : hp.n_embd;
}
inline int64_t nextn_rows(const NextnTensorSpec& t, const Hparams& hp) {
    return t.shape == NextnShape::EH_PROJ ? hp.n_embd : t.shape == NextnShape::VOCAB_TABLE ? hp.n_vocab : 0;
}
inline std::string nextn_name(const NextnTensorSpec& t, int64_t block) {
    std::string s = t.gguf;
    return s.replace(s.find("%d"), 2, std::to_string(block));
}

}  // namespace duet::model
