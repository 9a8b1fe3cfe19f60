#pragma once
// The byte string of every token of a vocabulary, precomputed once for grammar masking, and a
// byte trie over them so a mask walks shared prefixes once (grammar/matcher.h).
//
// Bytes are what the generated text gets from the token (Tokenizer::token_to_piece: SPM's ▁
// is a space, byte tokens are their byte, GPT-2 byte symbols are their bytes), so masking
// works the same for every tokenizer kind. End-of-generation tokens are flagged; other
// tokens with no bytes (control tokens) are never allowed under a grammar.
//
// Ownership / thread safety: immutable after construction; share one table per tokenizer.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace duet::model {
class Tokenizer;
}

namespace duet::model::grammar {

class TokenTable {
public:
    // bytes[i]: token i's bytes; eog[i]: token i ends generation.
    TokenTable(std::vector<std::string> bytes, std::vector<uint8_t> eog);
    static std::shared_ptr<const TokenTable> from_tokenizer(const Tokenizer& tok);

    int64_t n_vocab() const { return int64_t(bytes_.size()); }
    const std::string& bytes(int32_t id) const { return bytes_[size_t(id)]; }
    bool is_eog(int32_t id) const { return eog_[size_t(id)] != 0; }
    const std::vector<int32_t>& eog_tokens() const { return eog_ids_; }
    size_t max_token_bytes() const { return max_bytes_; }  // the longest token's byte length
    // Every byte value 0..255 is a token by itself (SPM byte fallback, byte-level BPE): the
    // condition under which the closing reserve, counted in bytes, is a count of tokens and no
    // text the grammar allows is a dead end in tokens (docs/grammar.md).
    bool has_every_byte() const { return has_every_byte_; }

    // Trie node: children by byte (sorted), tokens whose bytes end exactly here.
    struct Node {
        std::vector<std::pair<uint8_t, int32_t>> children;  // (byte, node index)
        std::vector<int32_t> tokens;
    };
    const std::vector<Node>& trie() const { return trie_; }  // trie()[0] is the root (empty prefix)

private:
    std::vector<std::string> bytes_;
    std::vector<uint8_t> eog_;
    std::vector<int32_t> eog_ids_;
    std::vector<Node> trie_;
    size_t max_bytes_ = 0;
    bool has_every_byte_ = false;
};

}  // namespace duet::model::grammar
