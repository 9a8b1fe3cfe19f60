#pragma once
// Shared by json_schema_fuzz and grammar_fuzz: walks a compiled grammar for a few bytes under a
// small budget (the closing reserve), so the matcher, its caches and min_bytes_to_end() see every
// grammar the fuzzer builds.
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "model/grammar/matcher.h"

namespace duet::fuzz {

inline std::shared_ptr<const model::grammar::TokenTable> byte_tokens() {
    static const auto table = [] {
        std::vector<std::string> bytes;
        for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, char(b)));
        bytes.push_back("");
        std::vector<uint8_t> eog(257, 0);
        eog[256] = 1;
        return std::make_shared<const model::grammar::TokenTable>(bytes, eog);
    }();
    return table;
}

// Feeds bytes chosen by `choices` (cycled) among those the budgeted mask allows.
inline void walk_grammar(std::shared_ptr<const model::grammar::Grammar> g, std::string_view choices) {
    model::grammar::Matcher m(std::move(g), byte_tokens());
    std::vector<uint8_t> allowed;
    const int64_t budget = 48;
    for (int64_t step = 0; step < budget; ++step) {
        const int64_t left = budget - step;
        int64_t n = m.allowed_tokens_within(allowed, uint32_t(left - 1));
        if (n == 0) n = m.allowed_tokens(allowed);
        std::vector<int32_t> ids;
        for (int32_t i = 0; i < 256; ++i)
            if (allowed[size_t(i)]) ids.push_back(i);
        if (ids.empty()) return;
        const uint8_t c = choices.empty() ? 0 : uint8_t(choices[size_t(step) % choices.size()]);
        if (!m.accept_token(ids[c % ids.size()])) std::abort();  // an allowed byte must be accepted
        (void)m.min_bytes_to_end();
    }
}

}  // namespace duet::fuzz
