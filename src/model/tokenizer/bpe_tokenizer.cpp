#include "model/tokenizer/bpe_tokenizer.h"

#include <array>
#include <queue>

#include "core/error.h"
#include "model/tokenizer/tokenizer_index.h"
#include "model/tokenizer/utf8.h"

namespace duet::model {

namespace {

struct ByteTables {
    std::array<std::string, 256> symbol;
    std::array<int, 324> byte_of;  // codepoints used are < 256 + 68
    ByteTables() {
        byte_of.fill(-1);
        int extra = 0;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            const uint32_t cp = printable ? static_cast<uint32_t>(b) : 256u + extra++;
            utf8::append_codepoint(symbol[b], cp);
            byte_of[cp] = b;
        }
    }
};

const ByteTables& tables() {
    static const ByteTables t;
    return t;
}

struct Symbol {
    int prev, next;
    const char* text;
    size_t n;
};

struct Bigram {
    int left, right;
    int rank;
    size_t n_left, n_right;
};

struct BigramOrder {  // priority_queue top: lowest rank, then leftmost
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
};

}  // namespace

const std::string& BpeTokenizer::byte_symbol(uint8_t b) { return tables().symbol[b]; }

int BpeTokenizer::byte_of_codepoint(uint32_t cp) { return cp < tables().byte_of.size() ? tables().byte_of[cp] : -1; }

BpeTokenizer::BpeTokenizer(Vocab vocab)
    : Tokenizer(std::move(vocab)), pre_(vocab_.pre), ignore_merges_(is_llama3_pre(vocab_.pre)) {
    ranks_.reserve(vocab_.merges.size());
    for (size_t i = 0; i < vocab_.merges.size(); ++i) {
        const std::string& m = vocab_.merges[i];
        const size_t sp = m.find(' ', 1);
        if (sp == std::string::npos || sp + 1 >= m.size())
            fail("{}: tokenizer.ggml.merges[{}] = \"{}\" is not a merge (allowed: \"left right\")", vocab_.source, i, m);
        ranks_.emplace(m, static_cast<int>(i));  // first occurrence keeps the lowest rank
    }
}

int BpeTokenizer::rank(std::string_view left, std::string_view right) const {
    std::string key;
    key.reserve(left.size() + right.size() + 1);
    key.append(left).append(1, ' ').append(right);
    auto it = ranks_.find(key);
    return it == ranks_.end() ? -1 : it->second;
}

void BpeTokenizer::encode_text(std::string_view text, bool, std::vector<int32_t>& out) const {
    std::string mapped;
    for (std::string_view word : pre_.split(text)) {
        mapped.clear();
        for (char c : word) mapped += byte_symbol(static_cast<uint8_t>(c));
        encode_word(mapped, out);
    }
}

void BpeTokenizer::encode_word(std::string_view word, std::vector<int32_t>& out) const {
    const auto& map = index_->text_to_id;
    if (ignore_merges_) {
        auto it = map.find(std::string(word));
        if (it != map.end()) {
            out.push_back(it->second);
            return;
        }
    }
    std::vector<Symbol> sym;
    for (size_t off = 0; off < word.size();) {  // mapped text is valid UTF-8
        const size_t n = std::min(word.size() - off, utf8::lead_len(static_cast<uint8_t>(word[off])));
        const int idx = static_cast<int>(sym.size());
        sym.push_back({idx - 1, idx + 1, word.data() + off, n});
        off += n;
    }
    if (sym.empty()) return;
    sym.back().next = -1;

    std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
    auto try_add = [&](int l, int r) {
        if (l < 0 || r < 0) return;
        const int rk = rank({sym[l].text, sym[l].n}, {sym[r].text, sym[r].n});
        if (rk >= 0) queue.push({l, r, rk, sym[l].n, sym[r].n});
    };
    for (size_t i = 1; i < sym.size(); ++i) try_add(static_cast<int>(i) - 1, static_cast<int>(i));

    while (!queue.empty()) {
        const Bigram bg = queue.top();
        queue.pop();
        Symbol& l = sym[bg.left];
        Symbol& r = sym[bg.right];
        if (l.n != bg.n_left || r.n != bg.n_right || l.next != bg.right) continue;  // stale
        l.n += r.n;
        r.n = 0;
        l.next = r.next;
        if (r.next >= 0) sym[r.next].prev = bg.left;
        try_add(l.prev, bg.left);
        try_add(bg.left, l.next);
    }

    std::string key;
    for (int i = 0; i != -1; i = sym[i].next) {
        key.assign(sym[i].text, sym[i].n);
        auto it = map.find(key);
        if (it != map.end()) {
            out.push_back(it->second);
            continue;
        }
        // No token for the merged text (an incomplete vocabulary): spell it character by character.
        for (size_t k = 0; k < key.size();) {
            const size_t n = utf8::lead_len(static_cast<uint8_t>(key[k]));
            auto ch = map.find(key.substr(k, n));
            if (ch != map.end()) {
                out.push_back(ch->second);
            } else if (vocab_.unk_id >= 0) {
                out.push_back(vocab_.unk_id);
            } else {
                fail("{}: byte-level symbol \"{}\" has no token and the vocabulary has no unknown token",
                     vocab_.source, key.substr(k, n));
            }
            k += n;
        }
    }
}

std::string BpeTokenizer::normal_piece(int32_t id) const {
    const std::string& t = vocab_.tokens[id];
    std::string out;
    out.reserve(t.size());
    for (size_t i = 0; i < t.size();) {
        uint32_t cp = 0;
        const size_t n = utf8::decode(t, i, cp);
        if (n == 0) {  // not valid UTF-8: not a byte-level token, keep the byte
            out += t[i++];
            continue;
        }
        const int b = byte_of_codepoint(cp);
        if (b >= 0) out += static_cast<char>(b);
        else out.append(t, i, n);  // a character outside GPT-2's table: keep its UTF-8
        i += n;
    }
    return out;
}

}  // namespace duet::model
