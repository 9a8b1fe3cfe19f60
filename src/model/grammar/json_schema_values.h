#pragma once
// Grammar expressions for JSON Schema's scalar constraints (used by json_schema.cpp; not a
// public API): integer and number ranges as digit grammars, string formats, and the JSON
// encoding of a set of characters inside a string.
//
// Integer ranges use the digit-range construction of llama.cpp's json-schema-to-grammar (and
// of regex generators for numeric ranges): split [lo, hi] by digit count, then for two
// numbers of equal length emit "same first digit, recurse" or "lo's first digit then
// anything >= lo's rest | a middle digit then any digits | hi's first digit then anything
// <= hi's rest". The text grows with the square of the digit count (<= 16 here).
#include <cstdint>
#include <string>
#include <vector>

#include "model/grammar/utf8_ranges.h"

namespace duet::model::grammar {

// The largest magnitude the generated numbers reach: 16 digits, as the unbounded integer rule.
constexpr int64_t kMaxIntMagnitude = 9999999999999999;

// Decimal integers in [lo, hi] (|lo|, |hi| <= kMaxIntMagnitude, lo <= hi), no leading zeros,
// no "-0". A parenthesised grammar expression.
std::string integer_range(int64_t lo, int64_t hi);

// Numbers in the interval given by the bounds (nullptr = unbounded side; exclusive_* say the
// bound itself is excluded): integers of the interval, and I.fraction forms whose whole
// interval [I, I+1) (or (-(I+1), -I]) lies inside it (|I| < 2^24, 6 fraction digits); no exponent. Empty string when no such
// number exists. `integer` keeps only the integers.
struct NumberBounds {
    bool has_lo = false, has_hi = false, exclusive_lo = false, exclusive_hi = false;
    double lo = 0, hi = 0;
};
std::string number_range(const NumberBounds& b, bool integer);

// A string format's contents (between the quotes) as a pattern in the regex subset of
// regex_to_grammar.h (so a length can be counted over it as over a pattern); empty for a format
// this compiler does not enforce.
std::string format_regex(const std::string& format);

// One character of the ranges as it appears inside a JSON string: raw, or escaped for '"',
// '\\', '\n', '\r', '\t' (other control characters are left out). Empty when nothing remains.
std::string json_string_char(const std::vector<CodeRange>& ranges);

}  // namespace duet::model::grammar
