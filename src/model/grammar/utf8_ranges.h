#pragma once
// Code-point ranges -> UTF-8 byte-range sequences (the construction RE2 and Go's regexp use
// to compile Unicode classes to byte automata): every code point of [lo, hi] encodes to a
// byte string matched by exactly one of the produced sequences, and nothing else matches.
// Surrogates (U+D800..U+DFFF) are never produced: they are not valid UTF-8.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace duet::model::grammar {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

struct CodeRange {
    uint32_t lo, hi;  // inclusive
};
struct ByteRange {
    uint32_t lo, hi;  // inclusive, 0..255
};

// UTF-8 bytes of one code point (<= 0x10FFFF).
std::string utf8_encode(uint32_t cp);
// Decodes one character at the start of s (non-empty); an invalid byte decodes as itself
// (len 1), so grammar text that is not UTF-8 still parses predictably.
uint32_t utf8_decode(std::string_view s, size_t& len);
// [0, 0x10FFFF] minus the ranges (and minus surrogates), sorted.
std::vector<CodeRange> complement(std::vector<CodeRange> ranges);
// Appends the byte-range sequences matching the UTF-8 encodings of [r.lo, r.hi] to out.
void utf8_sequences(CodeRange r, std::vector<std::vector<ByteRange>>& out);

}  // namespace duet::model::grammar
