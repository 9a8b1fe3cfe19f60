#pragma once
// Pre-tokenizer of GPT-2 byte-level BPE: a regex (PCRE2, UTF + UCP so \p{L}, \p{N}, \s are
// Unicode-aware) cuts the text into words that BPE merges never cross. The pattern is chosen
// by tokenizer.ggml.pre:
//   "llama-bpe" (also llama3, llama-v3, dbrx, smaug-bpe): Llama-3 (contractions
//        in any case, letters with one leading non-letter, digits in groups of 1-3, punctuation
//        runs, newline runs, spaces);
//   "qwen2" (also deepseek-r1-qwen, stablelm2, megrez): as Llama-3 but digits one at a time;
//   anything else:          GPT-2's original pattern.
// Bytes the regex cannot match (invalid UTF-8) become pieces of their own, so every byte of
// the input appears in exactly one piece, in order.
// Thread safety: immutable after construction; split() may run on many threads at once.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace duet::model {

class BpePreTokenizer {
public:
    explicit BpePreTokenizer(std::string_view pre_name);
    ~BpePreTokenizer();
    BpePreTokenizer(const BpePreTokenizer&) = delete;
    BpePreTokenizer& operator=(const BpePreTokenizer&) = delete;

    std::vector<std::string_view> split(std::string_view text) const;  // views into text
    const std::string& pattern() const { return pattern_; }
    static std::string_view pattern_for(std::string_view pre_name);

private:
    std::string pattern_;
    struct Code;
    std::unique_ptr<Code> code_;
};

}  // namespace duet::model
