#include "model/grammar/token_table.h"

#include <algorithm>

#include "core/error.h"
#include "model/tokenizer/tokenizer.h"

namespace duet::model::grammar {

TokenTable::TokenTable(std::vector<std::string> bytes, std::vector<uint8_t> eog)
    : bytes_(std::move(bytes)), eog_(std::move(eog)) {
    if (eog_.size() != bytes_.size())
        fail("token table: {} eog flags for {} tokens (allowed: one per token)", eog_.size(), bytes_.size());
    trie_.emplace_back();
    for (int32_t id = 0; id < int32_t(bytes_.size()); ++id) {
        if (eog_[size_t(id)]) {
            eog_ids_.push_back(id);
            continue;
        }
        if (bytes_[size_t(id)].empty()) continue;  // control tokens: never allowed under a grammar
        max_bytes_ = std::max(max_bytes_, bytes_[size_t(id)].size());
        int32_t node = 0;
        for (char c : bytes_[size_t(id)]) {
            const uint8_t b = uint8_t(c);
            auto& ch = trie_[size_t(node)].children;
            auto it = std::lower_bound(ch.begin(), ch.end(), b,
                                       [](const std::pair<uint8_t, int32_t>& p, uint8_t v) { return p.first < v; });
            if (it != ch.end() && it->first == b) {
                node = it->second;
            } else {
                const int32_t fresh = int32_t(trie_.size());
                ch.insert(it, {b, fresh});
                trie_.emplace_back();  // may reallocate: `ch` is not used after this
                node = fresh;
            }
        }
        trie_[size_t(node)].tokens.push_back(id);
    }
    const auto& root = trie_[0].children;
    has_every_byte_ = root.size() == 256 && std::all_of(root.begin(), root.end(), [&](const auto& c) {
        return !trie_[size_t(c.second)].tokens.empty();
    });
}

std::shared_ptr<const TokenTable> TokenTable::from_tokenizer(const Tokenizer& tok) {
    const int64_t n = tok.n_vocab();
    std::vector<std::string> bytes(static_cast<size_t>(n));
    std::vector<uint8_t> eog(size_t(n), 0);
    for (int32_t id = 0; id < int32_t(n); ++id) {
        eog[size_t(id)] = tok.is_eog(id) ? 1 : 0;
        bytes[size_t(id)] = tok.is_control(id) ? std::string() : tok.token_to_piece(id, false);
    }
    return std::make_shared<TokenTable>(std::move(bytes), std::move(eog));
}

}  // namespace duet::model::grammar
