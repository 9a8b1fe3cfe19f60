#include "model/synthetic_vocab.h"

#include <cctype>
#include <map>
#include <set>
#include <unordered_set>

#include "core/error.h"
#include "format/gguf_writer.h"
#include "model/synthetic_corpus.h"

namespace duet::model {
namespace {

const char* const kSpmSpace = "\xe2\x96\x81";  // U+2581 '▁'

std::string utf8(uint32_t cp) {
    std::string s;
    if (cp < 0x80) {
        s += char(cp);
    } else if (cp < 0x800) {
        s += char(0xc0 | (cp >> 6));
        s += char(0x80 | (cp & 0x3f));
    } else {
        s += char(0xe0 | (cp >> 12));
        s += char(0x80 | ((cp >> 6) & 0x3f));
        s += char(0x80 | (cp & 0x3f));
    }
    return s;
}

// GPT-2's bytes_to_unicode order: printable bytes keep their code point, the others are
// remapped to 256, 257, ... in byte order. Element i is the byte of token id i.
std::vector<uint8_t> gpt2_byte_order() {
    std::vector<uint8_t> order;
    for (int b = 0; b < 256; ++b)
        if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) order.push_back(uint8_t(b));
    for (int b = 0; b < 256; ++b)
        if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)) order.push_back(uint8_t(b));
    return order;
}

// Splits the corpus into words: a letter run with the space before it, digits, or one
// punctuation character. SPM words all get the dummy-prefix space, as SentencePiece does.
std::map<std::string, int64_t> corpus_words() {
    std::map<std::string, int64_t> words;
    const std::string_view text = synthetic_corpus();
    size_t i = 0;
    while (i < text.size()) {
        const bool space = text[i] == ' ';
        size_t j = space ? i + 1 : i;
        if (j >= text.size()) break;
        auto is_alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '\''; };
        auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
        size_t k = j;
        if (is_alpha(text[j])) {
            while (k < text.size() && is_alpha(text[k])) ++k;
        } else if (is_digit(text[j])) {
            while (k < text.size() && is_digit(text[k])) ++k;
        } else {
            k = j + 1;
        }
        if (text[j] != '\n' && text[j] != ' ') words[std::string(text.substr(i, k - i))] += 1;
        i = k;
    }
    return words;
}

struct Trained {
    std::vector<std::pair<std::string, std::string>> merges;  // in rank order
    std::vector<std::string> new_tokens;                      // distinct merge results, in order
};

// Plain BPE training: repeatedly merge the most frequent adjacent pair (ties: the
// lexicographically smallest pair) until max_tokens new tokens exist or nothing is left.
Trained train_bpe(std::vector<std::pair<std::vector<std::string>, int64_t>> words, size_t max_tokens,
                  std::unordered_set<std::string>& known) {
    Trained out;
    while (out.new_tokens.size() < max_tokens) {
        std::map<std::pair<std::string, std::string>, int64_t> counts;
        for (const auto& [syms, n] : words)
            for (size_t i = 0; i + 1 < syms.size(); ++i) counts[{syms[i], syms[i + 1]}] += n;
        if (counts.empty()) break;
        auto best = counts.begin();
        for (auto it = counts.begin(); it != counts.end(); ++it)
            if (it->second > best->second) best = it;
        const auto [left, right] = best->first;
        const std::string merged = left + right;
        out.merges.emplace_back(left, right);
        if (known.insert(merged).second) out.new_tokens.push_back(merged);
        for (auto& [syms, n] : words) {
            std::vector<std::string> next;
            for (size_t i = 0; i < syms.size(); ++i) {
                if (i + 1 < syms.size() && syms[i] == left && syms[i + 1] == right) {
                    next.push_back(merged);
                    ++i;
                } else {
                    next.push_back(syms[i]);
                }
            }
            syms = std::move(next);
        }
    }
    return out;
}

// Systematic filler pieces: marker+letters and letter runs of growing length, each the merge
// of an existing token and one more letter (so BPE merges stay valid).
void fill_systematic(const std::string& marker, size_t want, std::unordered_set<std::string>& known, Trained& t) {
    std::vector<std::string> level = {""};
    for (int len = 1; len <= 4 && t.new_tokens.size() < want; ++len) {
        std::vector<std::string> next;
        for (const std::string& prefix : level)
            for (char c = 'a'; c <= 'z'; ++c) next.push_back(prefix + c);
        for (const std::string& body : next) {
            for (const std::string& cand : {marker + body, body}) {
                if (t.new_tokens.size() >= want) return;
                if (cand.size() < 2 || known.count(cand)) continue;
                const std::string left = cand.substr(0, cand.size() - 1);
                if (!known.count(left)) continue;
                known.insert(cand);
                t.new_tokens.push_back(cand);
                t.merges.emplace_back(left, cand.substr(cand.size() - 1));
            }
        }
        level = std::move(next);
    }
    if (t.new_tokens.size() < want)
        fail("synthetic vocabulary: cannot make {} tokens (made {})", want, t.new_tokens.size());
}

std::vector<std::string> utf8_chars(const std::string& s) {
    std::vector<std::string> out;
    for (size_t i = 0; i < s.size();) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        const size_t n = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
        out.push_back(s.substr(i, n));
        i += n;
    }
    return out;
}

SyntheticVocab build_spm(const ArchPreset& p) {
    SyntheticVocab v;
    v.model = "llama";
    v.pre = "default";
    v.tokens = {"<unk>", "<s>", "</s>"};
    v.token_types = {int32_t(TokenType::UNKNOWN), int32_t(TokenType::CONTROL), int32_t(TokenType::CONTROL)};
    v.scores = {0, 0, 0};
    for (int b = 0; b < 256; ++b) {
        v.tokens.push_back(fmt::format("<0x{:02X}>", b));
        v.token_types.push_back(int32_t(TokenType::BYTE));
        v.scores.push_back(0);
    }
    // Words with spaces as '▁'; every word gets the dummy prefix.
    std::vector<std::pair<std::vector<std::string>, int64_t>> words;
    std::set<std::string> chars = {kSpmSpace};
    for (const auto& [w, n] : corpus_words()) {
        // A space becomes '▁'; words without one are line starts (SentencePiece's dummy prefix)
        // unless they are punctuation or digits glued to the word before.
        const bool spaced = w[0] == ' ' || std::isalpha(static_cast<unsigned char>(w[0]));
        std::string body = w[0] == ' ' ? w.substr(1) : w;
        std::vector<std::string> syms;
        if (spaced) syms.push_back(kSpmSpace);
        for (auto& c : utf8_chars(body)) {
            chars.insert(c);
            syms.push_back(c);
        }
        words.emplace_back(std::move(syms), n);
    }
    const int64_t n_pieces = p.hparams.n_vocab - int64_t(v.tokens.size()) - int64_t(chars.size());
    if (n_pieces < 0) fail("preset {}: n_vocab {} is too small for an SPM vocabulary", p.name, p.hparams.n_vocab);
    std::unordered_set<std::string> known(chars.begin(), chars.end());
    Trained t = train_bpe(std::move(words), size_t(n_pieces), known);
    fill_systematic(kSpmSpace, size_t(n_pieces), known, t);
    float score = 0;
    for (const auto& piece : t.new_tokens) {
        v.tokens.push_back(piece);
        v.token_types.push_back(int32_t(TokenType::NORMAL));
        v.scores.push_back(score);
        score -= 1;
    }
    for (const auto& c : chars) {
        v.tokens.push_back(c);
        v.token_types.push_back(int32_t(TokenType::NORMAL));
        v.scores.push_back(score);
        score -= 1;
    }
    v.unk_id = 0;
    v.bos_id = 1;
    v.eos_id = 2;
    v.add_bos = true;
    return v;
}

SyntheticVocab build_bpe(const ArchPreset& p) {
    SyntheticVocab v;
    v.model = "gpt2";
    v.pre = p.tokenizer_pre;
    std::vector<std::string> specials;
    if (p.tokenizer_pre == "qwen2") {
        specials = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    } else {
        specials = {"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};
    }
    // Real-size vocabularies reserve a block of special tokens, as Llama-3 does.
    const size_t named = specials.size();
    if (!p.tiny)
        for (size_t i = named; i < 256; ++i)
            specials.push_back(fmt::format("<|reserved_special_token_{}|>", i - named));
    std::unordered_set<std::string> known;
    for (uint8_t b : gpt2_byte_order()) {
        v.tokens.push_back(gpt2_byte_symbol(b));
        v.token_types.push_back(int32_t(TokenType::NORMAL));
        known.insert(v.tokens.back());
    }
    std::vector<std::pair<std::vector<std::string>, int64_t>> words;
    for (const auto& [w, n] : corpus_words()) {
        std::vector<std::string> syms;
        for (unsigned char c : w) syms.push_back(gpt2_byte_symbol(c));
        words.emplace_back(std::move(syms), n);
    }
    const int64_t n_merged = p.hparams.n_vocab - 256 - int64_t(specials.size());
    if (n_merged < 0)
        fail("preset {}: n_vocab {} is too small for a byte-level BPE vocabulary", p.name, p.hparams.n_vocab);
    Trained t = train_bpe(std::move(words), size_t(n_merged), known);
    fill_systematic(gpt2_byte_symbol(' '), size_t(n_merged), known, t);
    for (const auto& tok : t.new_tokens) {
        v.tokens.push_back(tok);
        v.token_types.push_back(int32_t(TokenType::NORMAL));
    }
    for (const auto& [l, r] : t.merges) v.merges.push_back(l + " " + r);
    const int32_t first_special = int32_t(v.tokens.size());
    for (const auto& s : specials) {
        v.tokens.push_back(s);
        v.token_types.push_back(int32_t(TokenType::CONTROL));
    }
    if (p.tokenizer_pre == "qwen2") {
        v.bos_id = first_special;      // <|endoftext|>
        v.eos_id = first_special + 2;  // <|im_end|>
        v.eot_id = first_special + 2;
        v.add_bos = false;
    } else {
        v.bos_id = first_special;      // <|begin_of_text|>
        v.eos_id = first_special + 4;  // <|eot_id|>: the instruct models stop there
        v.eot_id = first_special + 4;
        v.add_bos = true;
    }
    return v;
}

}  // namespace

std::string gpt2_byte_symbol(uint8_t b) {
    static const std::vector<std::string> table = [] {
        std::vector<std::string> t(256);
        uint32_t next = 256;
        for (int c = 0; c < 256; ++c) {
            const bool printable = (c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174;
            t[size_t(c)] = utf8(printable ? uint32_t(c) : next++);
        }
        return t;
    }();
    return table[b];
}

SyntheticVocab build_synthetic_vocab(const ArchPreset& preset) {
    SyntheticVocab v = preset.tokenizer == TokenizerKind::SPM ? build_spm(preset) : build_bpe(preset);
    v.chat_template = chat_template_text(preset.chat_template);
    DUET_CHECK(int64_t(v.tokens.size()) == preset.hparams.n_vocab, "{}: {} tokens for n_vocab {}", preset.name,
               v.tokens.size(), preset.hparams.n_vocab);
    return v;
}

void write_vocab(format::GgufWriter& w, const SyntheticVocab& v) {
    w.set_string("tokenizer.ggml.model", v.model);
    w.set_string("tokenizer.ggml.pre", v.pre);
    w.set_string_array("tokenizer.ggml.tokens", v.tokens);
    if (!v.scores.empty()) w.set_f32_array("tokenizer.ggml.scores", v.scores);
    w.set_i32_array("tokenizer.ggml.token_type", v.token_types);
    if (!v.merges.empty()) w.set_string_array("tokenizer.ggml.merges", v.merges);
    w.set_u32("tokenizer.ggml.bos_token_id", uint32_t(v.bos_id));
    w.set_u32("tokenizer.ggml.eos_token_id", uint32_t(v.eos_id));
    if (v.eot_id) w.set_u32("tokenizer.ggml.eot_token_id", uint32_t(*v.eot_id));
    if (v.unk_id) w.set_u32("tokenizer.ggml.unknown_token_id", uint32_t(*v.unk_id));
    w.set_bool("tokenizer.ggml.add_bos_token", v.add_bos);
    w.set_bool("tokenizer.ggml.add_eos_token", false);
    w.set_string("tokenizer.chat_template", v.chat_template);
}

}  // namespace duet::model
