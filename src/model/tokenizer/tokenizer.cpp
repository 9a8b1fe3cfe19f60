#include "model/tokenizer/tokenizer.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "model/tokenizer/bpe_tokenizer.h"
#include "model/tokenizer/spm_tokenizer.h"
#include "model/tokenizer/tokenizer_index.h"

namespace duet::model {

namespace {

// Texts llama.cpp also treats as end-of-generation when they are special tokens of the vocab.
constexpr std::string_view kEogTexts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
                                          "<|endoftext|>", "<|end_of_text|>", "<EOT>", "<|eom_id|>"};

void check_id(const Vocab& v, const char* key, int32_t id) {
    if (id < -1 || id >= static_cast<int32_t>(v.tokens.size()))
        fail("{}: tokenizer.ggml.{} = {} is out of range (allowed: -1 for none, or 0 to {})", v.source, key, id,
             v.tokens.size() - 1);
}

void validate(const Vocab& v) {
    if (v.tokens.empty()) fail("{}: tokenizer.ggml.tokens is empty (a vocabulary needs at least one token)", v.source);
    if (!v.scores.empty() && v.scores.size() != v.tokens.size())
        fail("{}: tokenizer.ggml.scores has {} entries but tokenizer.ggml.tokens has {} (must be equal)", v.source,
             v.scores.size(), v.tokens.size());
    if (!v.types.empty() && v.types.size() != v.tokens.size())
        fail("{}: tokenizer.ggml.token_type has {} entries but tokenizer.ggml.tokens has {} (must be equal)",
             v.source, v.types.size(), v.tokens.size());
    for (size_t i = 0; i < v.types.size(); ++i) {
        const auto t = static_cast<int32_t>(v.types[i]);
        if (t < 0 || t > 6)
            fail("{}: tokenizer.ggml.token_type[{}] = {} is not a token type (allowed: 0 to 6)", v.source, i, t);
    }
    check_id(v, "bos_token_id", v.bos_id);
    check_id(v, "eos_token_id", v.eos_id);
    check_id(v, "unknown_token_id", v.unk_id);
    check_id(v, "eot_token_id", v.eot_id);
    check_id(v, "padding_token_id", v.pad_id);
}

}  // namespace

Tokenizer::Tokenizer(Vocab vocab) : vocab_(std::move(vocab)), index_(std::make_unique<Index>()) {
    const auto n = static_cast<int32_t>(vocab_.tokens.size());
    if (vocab_.scores.empty()) vocab_.scores.assign(n, 0.0f);
    if (vocab_.types.empty()) vocab_.types.assign(n, TokenType::NORMAL);
    index_->text_to_id.reserve(n);
    for (int32_t id = 0; id < n; ++id) {
        index_->text_to_id[vocab_.tokens[id]] = id;  // a duplicate text maps to its last id, as in llama.cpp
        const TokenType t = vocab_.types[id];
        if ((t == TokenType::CONTROL || t == TokenType::USER_DEFINED || t == TokenType::UNKNOWN) &&
            !vocab_.tokens[id].empty())
            index_->specials.push_back(id);
    }
    // Longest first, so "<|im_end|>" wins over a shorter special that is its prefix.
    std::stable_sort(index_->specials.begin(), index_->specials.end(), [&](int32_t a, int32_t b) {
        return vocab_.tokens[a].size() > vocab_.tokens[b].size();
    });
    for (int32_t id : {vocab_.eos_id, vocab_.eot_id})
        if (id >= 0) index_->eog.insert(id);
    for (auto text : kEogTexts) {
        auto it = index_->text_to_id.find(std::string(text));
        if (it != index_->text_to_id.end() && vocab_.types[it->second] == TokenType::CONTROL)
            index_->eog.insert(it->second);
    }
}

Tokenizer::~Tokenizer() = default;

std::unique_ptr<Tokenizer> Tokenizer::from_vocab(Vocab vocab) {
    validate(vocab);
    if (vocab.kind == TokenizerKind::SPM) return std::make_unique<SpmTokenizer>(std::move(vocab));
    return std::make_unique<BpeTokenizer>(std::move(vocab));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
    return encode_impl(text, add_bos, parse_special, {});
}

std::vector<int32_t> Tokenizer::encode_chat(std::string_view text, std::string_view shape, bool add_bos) const {
    if (text.size() != shape.size())
        fail("tokenizer: chat prompt and its shape differ in length ({} vs {} bytes)", text.size(), shape.size());
    return encode_impl(text, add_bos, true, shape);
}

std::string Tokenizer::defuse_special(std::string_view s) const {
    std::string out(s);
    for (int32_t sid : index_->specials) {
        if (vocab_.types[sid] == TokenType::USER_DEFINED) continue;  // parsed everywhere, as in encode()
        const std::string& st = vocab_.tokens[sid];
        for (size_t pos = 0; (pos = out.find(st, pos)) != std::string::npos; pos += st.size())
            out[pos] = st[0] == '#' ? '@' : '#';
    }
    return out;
}

std::vector<int32_t> Tokenizer::encode_impl(std::string_view text, bool add_bos, bool parse_special,
                                            std::string_view shape) const {
    // Fragments: raw text (id < 0) or one special token.
    struct Fragment {
        int32_t id;
        std::string_view text;
    };
    std::vector<Fragment> frags{{-1, text}};
    for (int32_t sid : index_->specials) {
        const TokenType t = vocab_.types[sid];
        if (!parse_special && t != TokenType::USER_DEFINED) continue;
        const std::string& st = vocab_.tokens[sid];
        std::vector<Fragment> next;
        next.reserve(frags.size());
        for (const Fragment& f : frags) {
            if (f.id >= 0) {
                next.push_back(f);
                continue;
            }
            std::string_view rest = f.text;
            for (size_t pos, from = 0; (pos = rest.find(st, from)) != std::string_view::npos;) {
                // encode_chat: a control token only where the template's shape has it too.
                const size_t at = size_t(rest.data() - text.data()) + pos;
                if (!shape.empty() && t != TokenType::USER_DEFINED && shape.compare(at, st.size(), st) != 0) {
                    from = pos + 1;
                    continue;
                }
                if (pos > 0) next.push_back({-1, rest.substr(0, pos)});
                next.push_back({sid, {}});
                rest.remove_prefix(pos + st.size());
                from = 0;
            }
            if (!rest.empty()) next.push_back({-1, rest});
        }
        frags.swap(next);
    }

    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 2);
    if (add_bos && vocab_.bos_id >= 0) out.push_back(vocab_.bos_id);
    bool after_special = true;
    for (const Fragment& f : frags) {
        if (f.id >= 0) {
            out.push_back(f.id);
            after_special = true;
        } else if (!f.text.empty()) {  // empty text gives no tokens (not even SPM's space prefix)
            encode_text(f.text, after_special, out);
            after_special = false;
        }
    }
    return out;
}

const std::string& Tokenizer::token_text(int32_t id) const {
    if (id < 0 || id >= n_vocab()) fail("tokenizer: token id {} is out of range (allowed: 0 to {})", id, n_vocab() - 1);
    return vocab_.tokens[id];
}

int32_t Tokenizer::find_token(std::string_view text) const {
    auto it = index_->text_to_id.find(std::string(text));
    return it == index_->text_to_id.end() ? -1 : it->second;
}

bool Tokenizer::is_eog(int32_t id) const { return index_->eog.count(id) != 0; }

bool Tokenizer::is_control(int32_t id) const {
    return id >= 0 && id < n_vocab() && vocab_.types[id] == TokenType::CONTROL;
}

std::string Tokenizer::token_to_piece(int32_t id, bool special) const {
    const std::string& text = token_text(id);  // range check
    switch (vocab_.types[id]) {
        case TokenType::CONTROL:
            return special ? text : std::string();
        case TokenType::USER_DEFINED:
            return text;
        case TokenType::UNKNOWN:
            return special ? text : std::string("\xE2\x96\x85");  // ▅, as llama.cpp prints <unk>
        case TokenType::BYTE: {
            // "<0xXX>"
            if (text.size() == 6 && text.compare(0, 3, "<0x") == 0 && text[5] == '>')
                return std::string(1, static_cast<char>(std::stoi(text.substr(3, 2), nullptr, 16)));
            return normal_piece(id);
        }
        default:
            return normal_piece(id);
    }
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
    std::string out;
    for (int32_t id : ids) out += token_to_piece(id);
    if (vocab_.kind == TokenizerKind::SPM && vocab_.add_space_prefix && !out.empty() && out[0] == ' ') out.erase(0, 1);
    return out;
}

size_t utf8_complete_prefix(std::string_view s) {
    // Walk back over at most 3 continuation bytes to the last lead byte.
    size_t i = s.size();
    size_t n_cont = 0;
    while (i > 0 && n_cont < 4 && (static_cast<uint8_t>(s[i - 1]) & 0xC0) == 0x80) --i, ++n_cont;
    if (i == 0 || n_cont >= 4) return s.size();
    const auto lead = static_cast<uint8_t>(s[i - 1]);
    size_t need;
    if (lead >= 0xC2 && lead <= 0xDF) need = 2;
    else if (lead >= 0xE0 && lead <= 0xEF) need = 3;
    else if (lead >= 0xF0 && lead <= 0xF4) need = 4;
    else return s.size();  // ASCII or a byte that can never start a character
    if (n_cont + 1 >= need) return s.size();  // complete (or over-long: not ours to hold)
    if (n_cont >= 1) {  // the second byte has a narrower range after some lead bytes
        const auto c1 = static_cast<uint8_t>(s[i]);
        if ((lead == 0xE0 && c1 < 0xA0) || (lead == 0xED && c1 > 0x9F) || (lead == 0xF0 && c1 < 0x90) ||
            (lead == 0xF4 && c1 > 0x8F))
            return s.size();
    }
    return i - 1;
}

std::string StreamDecoder::feed(int32_t id) {
    pending_ += tok_.token_to_piece(id);
    const size_t n = utf8_complete_prefix(pending_);
    std::string ready = pending_.substr(0, n);
    pending_.erase(0, n);
    return ready;
}

std::string StreamDecoder::flush() {
    std::string rest;
    rest.swap(pending_);
    return rest;
}

}  // namespace duet::model
