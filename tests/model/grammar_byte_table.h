#pragma once
// The vocabulary of grammar tests that step byte by byte: token b is the byte b (0..255),
// token 256 ends generation.
#include <memory>
#include <string>
#include <vector>

#include "model/grammar/token_table.h"

namespace duet::model::grammar {

inline std::shared_ptr<const TokenTable> byte_table() {
    std::vector<std::string> bytes;
    for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, char(b)));
    bytes.push_back("");
    std::vector<uint8_t> eog(257, 0);
    eog[256] = 1;
    return std::make_shared<TokenTable>(bytes, eog);
}

}  // namespace duet::model::grammar
