#pragma once
// The `deepseek2` GGUF metadata (DeepSeek-V2/V3: latent attention and experts) as llama.cpp's
// converter writes it (convert_hf_to_gguf.py DeepseekV2Model) and its loader reads it
// (llama-model.cpp, LLM_ARCH_DEEPSEEK2). Internal to model/hparams.cpp.
//
//   <a>.attention.kv_lora_rank            C, the cached latent's width (required)
//   <a>.attention.q_lora_rank             the low-rank query's width; 0 or absent: one query matrix
//   <a>.attention.key_length_mla          N + R per query/key head; value_length_mla: V per value head.
//                                         Files written for llama.cpp's absorbed cache (W_kv_b in
//                                         per-head halves) carry them, and then key_length = C + R and
//                                         value_length = C (the latent "head"); older files
//                                         (W_kv_b whole) carry only key_length = N + R, value_length = V
//   <a>.rope.dimension_count              R = qk_rope_head_dim (required)
//   <a>.expert_count, expert_used_count, expert_feed_forward_length (required), expert_shared_count
//   (shared width = count x expert width), leading_dense_block_count, expert_weights_scale (default 1),
//   expert_weights_norm (default false), expert_gating_func (1 softmax, 2 sigmoid; absent: softmax,
//   as llama.cpp for DeepSeek-V2 files)
//   <a>.expert_group_count, expert_group_used_count   group-limited routing (DeepSeek-V3's n_group,
//                                         topk_group; absent, 0 or 1: none): the count must split the
//                                         experts into groups of >= 2, the used count is 1..count and
//                                         its groups must hold expert_used_count experts
//   <a>.nextn_predict_layers              the multi-token-prediction blocks, counted in block_count
//                                         (0..block_count - 1): Hparams::n_layer is block_count minus
//                                         them, and their tensors are checked but never run
//   <a>.rope.scaling.type = yarn          YaRN (DeepSeek-V2/V3's files): rope.scaling.factor (f),
//   .original_context_length (default: context_length), .yarn_log_multiplier (0.1 x mscale_all_dim),
//   .yarn_beta_fast / .yarn_beta_slow (32, 1)
// Refused, naming the key: rope scaling other than none and yarn, rope.scaling.attn_factor other
// than 1, a gating function other than softmax/sigmoid.
// Tensors decide (by their catalogue names): the router's selection bias, and W_kv_b whole or split.
#include "model/hparams.h"

namespace duet::model {

// Fills every field but the common ones hparams_from_gguf reads (context, embedding, blocks,
// heads, norm epsilon, rope base, vocabulary). Throws duet::Error "<file>: metadata key ...".
void read_deepseek2(const format::GgufFile& f, Hparams& hp);
// The keys read_deepseek2 reads (the newer, absorbed-cache form: key_length_mla and friends).
void write_deepseek2(format::GgufWriter& w, const Hparams& hp);

}  // namespace duet::model
