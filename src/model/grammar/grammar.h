#pragma once
// A context-free grammar over bytes, written in a small GBNF-like text format (llama.cpp's
// GBNF is the model; docs/grammar.md is the reference):
//
//   # comment to the end of the line
//   root   ::= "{" ws pair ("," ws pair)* "}"      the rule named `root` is the start
//   pair   ::= name ws ":" ws [0-9]+
//   name   ::= "\"" [a-z_]{1,16} "\""
//   ws     ::= " "?
//
//   "text"       literal (escapes \" \\ \n \r \t \xHH \uHHHH; UTF-8 inside is kept as is)
//   [a-z_] [^"\\] character class of Unicode code points (same escapes; ^ negates)
//   .            any Unicode character
//   name         another rule;  ( ... ) group;  a | b alternatives
//   x* x+ x?     repetition;  x{m} x{m,} x{m,n} counted repetition (counts up to kMaxCount)
//   @len{m,n}( x )  x, ending only after m to n @tick elements inside it (m,: no maximum)
//   @tick        counts one for the innermost @len around it (no byte; outside any @len: nothing)
//
// @len is how a JSON string's length combines with its pattern: the schema compiler puts a
// @tick after every character of the pattern's grammar. The matcher keeps the count in its
// parse stack and drops a stack as soon as no completion of x can end within m..n (from the
// fewest and most ticks x can still take, Grammar::min_ticks/max_ticks). That is exact when
// the tick counts x can still take from any position have no gaps; parse() refuses a @len with
// both bounds (m > 0) whose x can take counts with gaps (as in ("ab" @tick @tick)* or
// ("." @tick [0-9] @tick)?, which skip a count), and one whose x has no count within m..n.
//
// A counted repetition whose count exceeds kExpandCount is one REPEAT element (the matcher
// keeps the iteration count in its parse stack), so a grammar's size does not grow with the
// count: "\"" char{0,65535} "\"" is three elements. Smaller counts are expanded into copies.
//
// A rule runs until the next `name ::=` or the end of the text. Character classes are
// compiled to UTF-8 byte sequences, so matching (grammar/matcher.h) works byte by byte and a
// negated class only ever matches valid UTF-8. Left recursion is rejected (it could never
// finish expanding).
//
// Ownership / thread safety: a Grammar is immutable after parse(); share it freely.
#include <bitset>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace duet::model::grammar {

// Thrown when a compilation's cancel callback answers true (the client left); a duet::Error,
// so callers that do not care treat it as any other failure.
class GrammarCancelled : public Error {
public:
    using Error::Error;
};

// Bounds on what parsing a grammar may build, so hostile text is refused in bounded time and
// memory with an error naming the limit (defaults: assumptions far above any schema grammar
// seen in the tests; no source).
struct GrammarLimits {
    int max_depth = 128;                   // ( ... ) groups nested inside each other
    size_t max_rules = size_t(1) << 16;    // rules, helper rules of groups and repeats included
    size_t max_elements = size_t(1) << 21; // elements of all alternatives (repeats expanded)
    std::function<bool()> cancelled;       // polled while parsing; true throws GrammarCancelled
};

struct Element {
    enum Kind : uint8_t { BYTES, RULE, REPEAT, COUNT, TICK, END } kind = END;
    // BYTES: into Grammar::sets; RULE: rule id; REPEAT: the repeated rule's id; COUNT (@len):
    // the rule whose ticks are counted
    uint32_t index = 0;
    uint32_t lo = 0, hi = 0;  // REPEAT: iterations, COUNT: ticks allowed, lo to hi (kUnbounded: no limit)
};

struct Grammar {
    std::vector<std::string> rule_names;  // [rules]; generated helper rules are named "<rule>_<n>"
    // rules[r] = offsets into `elems` where each alternative of rule r starts; every
    // alternative is a run of BYTES/RULE elements terminated by an END element.
    std::vector<std::vector<uint32_t>> rules;
    std::vector<Element> elems;
    std::vector<std::bitset<256>> sets;  // byte sets of BYTES elements
    uint32_t root = 0;
    // [elems]: the fewest bytes that finish the alternative from this element on (its END: 0);
    // kNoEnd when no finite text can. A matcher stack's sum is the bytes left to close it.
    std::vector<uint32_t> min_bytes;
    std::vector<uint32_t> rule_min_bytes;  // [rules]: the fewest bytes each rule matches (kNoEnd: none)
    bool has_repeats = false;              // some element is a REPEAT
    // @len support, for the elements of rules a @len body reaches (0 elsewhere): the fewest and
    // most ticks that finish the alternative from this element on (kUnbounded: no limit), and
    // the same per rule.
    std::vector<uint32_t> min_ticks, max_ticks;
    std::vector<uint32_t> rule_min_ticks, rule_max_ticks;
    bool has_counts = false;               // some element is a COUNT
    static constexpr uint32_t kNoEnd = UINT32_MAX;
    static constexpr uint32_t kUnbounded = UINT32_MAX;
    static constexpr uint32_t kMaxCount = 1000000;  // the largest count of {m,n} (assumption: far above
                                                    // the 65535 of a frameworks' maxLength; no source)
    static constexpr uint32_t kExpandCount = 64;    // counts up to this are expanded into copies

    // Throws duet::Error "<source>: line L: <what>" for a syntax error, an undefined rule, a
    // missing root rule, left recursion or an exceeded limit; GrammarCancelled when cancelled.
    static std::shared_ptr<const Grammar> parse(std::string_view text, std::string_view source = "grammar");
    static std::shared_ptr<const Grammar> parse(std::string_view text, std::string_view source,
                                                const GrammarLimits& limits);
};

}  // namespace duet::model::grammar
