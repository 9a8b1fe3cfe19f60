#pragma once
// A small English text (written for duet) from which the synthetic tokenizers learn their
// merges, so generated vocabularies hold real English words and sub-words.
#include <string_view>

namespace duet::model {

std::string_view synthetic_corpus();

}  // namespace duet::model
