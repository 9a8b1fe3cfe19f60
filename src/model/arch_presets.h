#pragma once
// The architecture preset table: named model shapes that `duet gen-model` writes as GGUF
// files and that the simulator uses for trace-only runs (shapes without weights).
//
// Tiny presets (tiny-llama, tiny-llama3, tiny-mistral, tiny-qwen2, small-llama, and the
// Mixture-of-Experts tiny-mixtral, tiny-qwen2moe, tiny-qwen3moe, and the latent-attention
// tiny-deepseek2) are test sizes covering every
// architecture variant the engine runs: SPM vs byte-level BPE tokenizer, MHA vs GQA, separate vs
// tied output, QKV bias, both RoPE orders, Llama-3.1 rope_freqs, routed and shared experts, q/k
// norms. The others carry the real shapes of public models (numbers from their Hugging Face
// config.json). The Mixture-of-Experts and latent-attention presets (mixtral-8x7b,
// qwen3-30b-a3b, qwen3-235b-a22b, deepseek-v3) embed their public config.json and are read
// through model/hf_config.h.
//
// The table is static and immutable; every function is thread-safe.
#include <string>
#include <string_view>
#include <vector>

#include "model/hparams.h"

namespace duet::model {

enum class TokenizerKind {
    SPM,  // tokenizer.ggml.model = "llama": SentencePiece pieces with scores, byte fallback
    BPE,  // tokenizer.ggml.model = "gpt2": byte-level BPE with merges and a pre-tokenizer
};

struct ArchPreset {
    std::string name;         // "tiny-llama", "llama2-7b", ...
    std::string description;  // one line, with the source of the numbers for real models
    Hparams hparams;
    TokenizerKind tokenizer = TokenizerKind::SPM;
    std::string tokenizer_pre;  // tokenizer.ggml.pre for BPE: "llama-bpe" or "qwen2"; empty for SPM
    std::string chat_template;  // template family: "llama-2", "llama-3", "chatml", "mistral"
    bool tiny = false;          // a test size that gen-model writes quickly
};

// nullptr when unknown.
const Hparams* find_arch_preset(std::string_view name);
const ArchPreset* find_arch_preset_info(std::string_view name);
// Throws duet::Error "unknown architecture preset 'X' (known: a, b, ...)" naming `what`
// (e.g. "--arch") as the parameter.
const ArchPreset& arch_preset(std::string_view name, std::string_view what = "architecture preset");
std::vector<std::string> arch_preset_names();
// "tiny-llama, tiny-llama3, ..." for messages and --help; gen_model_only: only the presets
// gen-model can write (every preset, now that the engine runs latent attention).
std::string arch_preset_list(bool gen_model_only = false);
const std::vector<ArchPreset>& arch_presets();

}  // namespace duet::model
