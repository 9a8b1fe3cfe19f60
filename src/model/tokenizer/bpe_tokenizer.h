#pragma once
// GPT-2 byte-level BPE (tokenizer.ggml.model = "gpt2"): every byte of a pre-tokenized word
// is mapped to a printable Unicode character (GPT-2's bytes_to_unicode), then adjacent
// symbols are merged by the rank of their pair in tokenizer.ggml.merges (lowest rank first,
// leftmost on ties). With pre "llama-bpe" a word that is itself a token is emitted whole
// (Llama-3's ignore_merges).
#include <unordered_map>

#include "model/tokenizer/bpe_pretokenizer.h"
#include "model/tokenizer/tokenizer.h"

namespace duet::model {

class BpeTokenizer final : public Tokenizer {
public:
    explicit BpeTokenizer(Vocab vocab);

    // GPT-2's byte -> Unicode character (UTF-8 encoded) table, and its inverse (-1: not a byte symbol).
    static const std::string& byte_symbol(uint8_t b);
    static int byte_of_codepoint(uint32_t cp);
    // Llama-3's pre-tokenizer names: whole-word tokens bypass merges, BOS added by default.
    static bool is_llama3_pre(std::string_view pre) { return pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3"; }

protected:
    void encode_text(std::string_view text, bool after_special, std::vector<int32_t>& out) const override;
    std::string normal_piece(int32_t id) const override;

private:
    void encode_word(std::string_view word, std::vector<int32_t>& out) const;
    int rank(std::string_view left, std::string_view right) const;

    BpePreTokenizer pre_;
    bool ignore_merges_;
    std::unordered_map<std::string, int> ranks_;  // "left right" -> rank
};

}  // namespace duet::model
