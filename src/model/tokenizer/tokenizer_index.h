#pragma once
// Lookup tables shared by the tokenizer implementations. Internal to duet_model.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "model/tokenizer/tokenizer.h"

namespace duet::model {

struct Tokenizer::Index {
    std::unordered_map<std::string, int32_t> text_to_id;
    std::vector<int32_t> specials;  // control, user-defined and unknown ids, longest text first
    std::unordered_set<int32_t> eog;
};

}  // namespace duet::model
