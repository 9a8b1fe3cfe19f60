#include "model/tokenizer/spm_tokenizer.h"

#include <queue>

#include "core/error.h"
#include "model/tokenizer/tokenizer_index.h"
#include "model/tokenizer/utf8.h"

namespace duet::model {

namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // ▁ U+2581

struct Symbol {
    int prev, next;
    const char* text;
    size_t n;  // 0 once merged into its left neighbour
};

struct Bigram {
    int left, right;
    float score;
    size_t n_bytes;
};

struct BigramOrder {  // priority_queue top: highest score, then leftmost
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

}  // namespace

SpmTokenizer::SpmTokenizer(Vocab vocab) : Tokenizer(std::move(vocab)) {
    for (int b = 0; b < 256; ++b) {
        const std::string hex = fmt::format("<0x{:02X}>", b);
        int32_t id = find_token(hex);
        if (id < 0) id = find_token(std::string(1, static_cast<char>(b)));  // vocabularies without byte tokens
        byte_ids_[b] = id >= 0 ? id : vocab_.unk_id;
    }
}

int32_t SpmTokenizer::byte_token(uint8_t byte) const {
    const int32_t id = byte_ids_[byte];
    if (id < 0)
        fail("{}: byte 0x{:02X} has no token (the vocabulary has neither <0x{:02X}> nor an unknown token)",
             vocab_.source, byte, byte);
    return id;
}

void SpmTokenizer::encode_text(std::string_view raw, bool after_special, std::vector<int32_t>& out) const {
    std::string text;
    text.reserve(raw.size() * 3 / 2 + 3);
    if (vocab_.add_space_prefix && after_special) text += kSpace;
    for (char c : raw) {
        if (c == ' ') text += kSpace;
        else text += c;
    }
    if (text.empty()) return;

    std::vector<Symbol> sym;
    sym.reserve(text.size());
    for (size_t off = 0; off < text.size();) {
        // One symbol per well-formed character. llama.cpp trusts the lead byte here, which lets
        // an invalid byte swallow the next character (and a ▁); a malformed byte stands alone
        // instead, so invalid input still round-trips. Identical for valid UTF-8.
        uint32_t cp;
        const size_t n = std::max<size_t>(1, utf8::decode(text, off, cp));
        const int idx = static_cast<int>(sym.size());
        sym.push_back({idx - 1, idx + 1, text.data() + off, n});
        off += n;
    }
    sym.back().next = -1;

    std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
    const auto& map = index_->text_to_id;
    std::string key;
    auto try_add = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        key.assign(sym[left].text, sym[left].n + sym[right].n);  // symbols are contiguous in text
        auto it = map.find(key);
        if (it == map.end()) return;
        queue.push({left, right, vocab_.scores[it->second], key.size()});
    };
    for (size_t i = 1; i < sym.size(); ++i) try_add(static_cast<int>(i) - 1, static_cast<int>(i));

    while (!queue.empty()) {
        const Bigram bg = queue.top();
        queue.pop();
        Symbol& l = sym[bg.left];
        Symbol& r = sym[bg.right];
        if (l.n == 0 || r.n == 0 || l.n + r.n != bg.n_bytes) continue;  // stale: a side was merged since
        l.n += r.n;
        r.n = 0;
        l.next = r.next;
        if (r.next >= 0) sym[r.next].prev = bg.left;
        try_add(l.prev, bg.left);
        try_add(bg.left, l.next);
    }

    for (int i = 0; i != -1; i = sym[i].next) {
        key.assign(sym[i].text, sym[i].n);
        auto it = map.find(key);
        if (it != map.end()) {
            out.push_back(it->second);
        } else {
            for (size_t k = 0; k < sym[i].n; ++k) out.push_back(byte_token(static_cast<uint8_t>(sym[i].text[k])));
        }
    }
}

std::string SpmTokenizer::normal_piece(int32_t id) const {
    const std::string& t = vocab_.tokens[id];
    std::string out;
    out.reserve(t.size());
    for (size_t i = 0; i < t.size();) {
        if (t.compare(i, kSpace.size(), kSpace) == 0) {
            out += ' ';
            i += kSpace.size();
        } else {
            out += t[i++];
        }
    }
    return out;
}

}  // namespace duet::model
