#pragma once
// Working tokenizers for synthetic models, as GGUF tokenizer metadata.
//
// SPM presets (tokenizer.ggml.model = "llama"): <unk> (type 2), <s>, </s> (type 3), the 256
// byte tokens <0x00>..<0xFF> (type 6), then pieces learned by BPE on a small English corpus
// (model/synthetic_corpus.h) with scores -rank, then the single characters; "▁" marks a space.
// This is the layout of Llama-2's vocabulary.
//
// BPE presets (tokenizer.ggml.model = "gpt2", pre "llama-bpe" or "qwen2"): the 256 GPT-2
// byte-level symbols (ids 0..255 in GPT-2's order: '!'..'~', '¡'..'¬', '®'..'ÿ', then the
// remapped bytes Ā...), merged tokens with their merges, then the special tokens (type 3).
//
// Vocabularies bigger than what the corpus teaches are filled with systematic letter
// combinations that are valid pieces/merges. Exactly hparams.n_vocab tokens; deterministic.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/arch_presets.h"
#include "model/tokenizer/tokenizer.h"  // TokenType: tokenizer.ggml.token_type values

namespace duet::format {
class GgufWriter;
}

namespace duet::model {

struct SyntheticVocab {
    std::string model;  // "llama" or "gpt2"
    std::string pre;    // "default", "llama-bpe", "qwen2"
    std::vector<std::string> tokens;
    std::vector<float> scores;  // SPM only
    std::vector<int32_t> token_types;
    std::vector<std::string> merges;  // BPE only: "left right"
    int32_t bos_id = -1;
    int32_t eos_id = -1;
    std::optional<int32_t> eot_id;
    std::optional<int32_t> unk_id;
    bool add_bos = true;
    std::string chat_template;  // Jinja text
};

SyntheticVocab build_synthetic_vocab(const ArchPreset& preset);

// Writes the tokenizer.ggml.* keys and tokenizer.chat_template.
void write_vocab(format::GgufWriter& w, const SyntheticVocab& v);

// The Jinja chat template of a family: "llama-2", "llama-3", "chatml", "mistral" (the
// templates these model families ship in tokenizer_config.json). Throws duet::Error for
// another name, listing the known ones.
const std::string& chat_template_text(std::string_view family);
std::vector<std::string> chat_template_families();

// GPT-2's byte-to-symbol map: the UTF-8 text of the symbol standing for byte b.
std::string gpt2_byte_symbol(uint8_t b);

}  // namespace duet::model
