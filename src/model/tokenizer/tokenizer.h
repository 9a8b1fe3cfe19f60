#pragma once
// Tokenizers read from GGUF metadata (docs/tokenizers.md):
//   - "llama": SentencePiece-style (llama.cpp SPM): leading-space prefix, spaces -> U+2581,
//     bigram merges by best score, byte fallback <0xXX>;
//   - "gpt2":  GPT-2 byte-level BPE: pre-tokenizer regex chosen by tokenizer.ggml.pre
//     ("llama-bpe", "qwen2" and their aliases, anything else = GPT-2's pattern), merges by rank.
// Special tokens (control, user-defined, unknown) are split out of the text before either
// algorithm runs; control and unknown tokens only when parse_special is true.
//
// Ownership: a Tokenizer copies everything it needs out of the GGUF file; it does not keep
// the file. Thread safety: immutable after construction; every const method may be called
// from any number of threads at once. StreamDecoder is per-stream state (one thread).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/arch_presets.h"

namespace duet::format {
class GgufFile;
}

namespace duet::model {

// tokenizer.ggml.token_type values (llama.cpp / gguf-py TokenType).
enum class TokenType : int32_t {
    UNDEFINED = 0,
    NORMAL = 1,
    UNKNOWN = 2,
    CONTROL = 3,
    USER_DEFINED = 4,
    UNUSED = 5,
    BYTE = 6,
};

// TokenizerKind { SPM, BPE } is defined once, next to the architecture presets that choose it
// (model/arch_presets.h), so both headers can be included together.

// Everything a tokenizer is built from; what from_gguf reads, and what tests build by hand.
struct Vocab {
    TokenizerKind kind = TokenizerKind::SPM;
    std::vector<std::string> tokens;  // [n_vocab] token text as stored (SPM: ▁ for space; BPE: GPT-2 byte symbols)
    std::vector<float> scores;        // [n_vocab] or empty (all 0); SPM merge priority, higher first
    std::vector<TokenType> types;     // [n_vocab] or empty (all NORMAL)
    std::vector<std::string> merges;  // BPE only: "left right", rank = index (lower merges first)
    std::string pre = "default";      // BPE pre-tokenizer name (tokenizer.ggml.pre)
    int32_t bos_id = -1, eos_id = -1, unk_id = -1, eot_id = -1, pad_id = -1;  // -1 = none
    bool add_bos = false;           // tokenizer.ggml.add_bos_token
    bool add_eos = false;           // tokenizer.ggml.add_eos_token (informational)
    bool add_space_prefix = false;  // SPM only: ' ' before a fragment that starts the text or follows a special token
    std::string source = "vocab";   // used in error messages (the GGUF path)
};

class Tokenizer {
public:
    // Reads tokenizer.ggml.* keys; throws duet::Error naming the file, the key, the value and
    // what is allowed for a missing/unsupported model, inconsistent array lengths or ids out of range.
    static std::unique_ptr<Tokenizer> from_gguf(const format::GgufFile& file);
    // Same validation on a hand-built vocabulary.
    static std::unique_ptr<Tokenizer> from_vocab(Vocab vocab);
    virtual ~Tokenizer();

    // Text (any bytes; invalid UTF-8 is still encoded, through byte tokens) -> token ids.
    // add_bos prepends bos() when the vocabulary has one. parse_special: text such as
    // "<|im_end|>" or "<s>" becomes the control token instead of being spelled out.
    virtual std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special) const;

    // Chat prompts, where only the template may write control tokens: `text` is the rendered
    // prompt and `shape` the same rendering made from defuse_special() request strings (same
    // length). A control token's text in `text` becomes the token only where `shape` has the
    // same text at the same offset (the template wrote it there); elsewhere it is spelled out
    // as text, exactly as encode(.., parse_special = false) would. Throws duet::Error when the
    // lengths differ.
    std::vector<int32_t> encode_chat(std::string_view text, std::string_view shape, bool add_bos) const;
    // `s` with the first byte of every control token's text in it replaced by '#' ('@' when
    // that byte is '#'): same length, and no control token's text left in it.
    std::string defuse_special(std::string_view s) const;

    // Raw bytes of one token: byte tokens -> their byte, ▁ -> space, GPT-2 byte symbols -> bytes.
    // Control tokens give "" unless special is true (then their text); unknown ids throw.
    std::string token_to_piece(int32_t id, bool special = false) const;
    // Concatenated pieces (control tokens dropped); for SPM with add_space_prefix, the one
    // leading space the encoder added is removed, so decode(encode(t, ...)) == t.
    std::string decode(const std::vector<int32_t>& ids) const;

    int32_t bos() const { return vocab_.bos_id; }
    int32_t eos() const { return vocab_.eos_id; }
    int32_t eot() const { return vocab_.eot_id; }
    bool is_eog(int32_t id) const;  // end of generation: eos, eot, <|im_end|>, <|eot_id|>, </s> ...
    bool is_control(int32_t id) const;
    int64_t n_vocab() const { return static_cast<int64_t>(vocab_.tokens.size()); }
    bool add_bos_default() const { return vocab_.add_bos; }
    TokenizerKind kind_enum() const { return vocab_.kind; }
    std::string_view kind() const { return vocab_.kind == TokenizerKind::SPM ? "llama" : "gpt2"; }
    const std::string& token_text(int32_t id) const;  // as stored in the vocabulary
    int32_t find_token(std::string_view text) const;  // exact vocabulary entry, -1 if none
    const Vocab& vocab() const { return vocab_; }

protected:
    explicit Tokenizer(Vocab vocab);
    // shape non-empty: encode_chat's rule for control tokens.
    std::vector<int32_t> encode_impl(std::string_view text, bool add_bos, bool parse_special,
                                     std::string_view shape) const;
    // Encodes one fragment of plain text (no special tokens inside). after_special: the
    // fragment starts the text or follows a special token (SPM adds its space prefix then).
    virtual void encode_text(std::string_view text, bool after_special, std::vector<int32_t>& out) const = 0;
    virtual std::string normal_piece(int32_t id) const = 0;

    Vocab vocab_;
    struct Index;
    std::unique_ptr<Index> index_;  // text -> id, special-token list, eog set
};

// Streaming detokenizer: feed() returns the text that is safe to print now. Bytes of a UTF-8
// character split across tokens are held back until the character is complete; bytes that
// can never become a valid character are passed through as they are. Control tokens print
// nothing. flush() returns whatever is still held. Borrows the tokenizer (must outlive it).
class StreamDecoder {
public:
    explicit StreamDecoder(const Tokenizer& tok) : tok_(tok) {}
    std::string feed(int32_t id);
    std::string flush();

private:
    const Tokenizer& tok_;
    std::string pending_;
};

// Length of the longest prefix of s that does not end inside an incomplete (but so far
// valid) UTF-8 sequence. Exposed for tests.
size_t utf8_complete_prefix(std::string_view s);

}  // namespace duet::model
