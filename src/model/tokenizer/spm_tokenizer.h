#pragma once
// SentencePiece-style tokenizer (tokenizer.ggml.model = "llama"), llama.cpp's SPM algorithm:
// spaces -> U+2581, ' ' prepended to a fragment that starts the text or follows a special
// token (when add_space_prefix), characters merged pairwise by best vocabulary score
// (ties: leftmost pair first), leftover characters spelled with <0xXX> byte tokens.
#include "model/tokenizer/tokenizer.h"

namespace duet::model {

class SpmTokenizer final : public Tokenizer {
public:
    explicit SpmTokenizer(Vocab vocab);

protected:
    void encode_text(std::string_view text, bool after_special, std::vector<int32_t>& out) const override;
    std::string normal_piece(int32_t id) const override;

private:
    int32_t byte_token(uint8_t byte) const;
    int32_t byte_ids_[256];
};

}  // namespace duet::model
