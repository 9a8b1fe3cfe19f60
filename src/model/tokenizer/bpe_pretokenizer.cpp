#include "model/tokenizer/bpe_pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/error.h"

namespace duet::model {

namespace {

// Patterns as published with each model's tokenizer.json (Llama-3, Qwen2, GPT-2).
constexpr std::string_view kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

}  // namespace

struct BpePreTokenizer::Code {
    pcre2_code* re = nullptr;
    ~Code() { pcre2_code_free(re); }
};

std::string_view BpePreTokenizer::pattern_for(std::string_view pre) {
    // Names llama.cpp runs with the same pattern.
    for (std::string_view n : {"llama-bpe", "llama3", "llama-v3", "dbrx", "smaug-bpe"})
        if (pre == n) return kLlama3;
    for (std::string_view n : {"qwen2", "deepseek-r1-qwen", "stablelm2", "megrez"})
        if (pre == n) return kQwen2;
    return kGpt2;
}

BpePreTokenizer::BpePreTokenizer(std::string_view pre_name)
    : pattern_(pattern_for(pre_name)), code_(std::make_unique<Code>()) {
    int err = 0;
    PCRE2_SIZE err_off = 0;
    code_->re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern_.data()), pattern_.size(),
                              PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &err_off, nullptr);
    if (!code_->re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        fail("tokenizer: pre-tokenizer regex for '{}' does not compile at offset {}: {}", pre_name, err_off,
             reinterpret_cast<const char*>(msg));
    }
    pcre2_jit_compile(code_->re, PCRE2_JIT_COMPLETE);  // optional speed-up; the interpreter is the fallback
}

BpePreTokenizer::~BpePreTokenizer() = default;

std::vector<std::string_view> BpePreTokenizer::split(std::string_view text) const {
    std::vector<std::string_view> out;
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_->re, nullptr);
    if (!md) fail("tokenizer: out of memory for regex match data");
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t off = 0;
    while (off < text.size()) {
        const int rc = pcre2_match(code_->re, subject, text.size(), off, 0, md, nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            pcre2_match_data_free(md);
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            fail("tokenizer: pre-tokenizer regex failed at byte {}: {}", off, reinterpret_cast<const char*>(msg));
        }
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        size_t start = ov[0], end = ov[1];
        if (start > off) out.push_back(text.substr(off, start - off));  // unmatched (invalid UTF-8) bytes
        if (end == start) end = start + 1;  // the patterns never match empty; guard against a loop anyway
        out.push_back(text.substr(start, end - start));
        off = end;
    }
    if (off < text.size()) out.push_back(text.substr(off));
    pcre2_match_data_free(md);
    return out;
}

}  // namespace duet::model
