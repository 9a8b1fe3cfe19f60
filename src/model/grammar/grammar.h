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
//   x* x+ x?     repetition;  x{m} x{m,} x{m,n} counted repetition
//
// A rule runs until the next `name ::=` or the end of the text. Character classes are
// compiled to UTF-8 byte sequences, so matching (grammar/matcher.h) works byte by byte and a
// negated class only ever matches valid UTF-8. Left recursion is rejected (it could never
// finish expanding).
//
// Ownership / thread safety: a Grammar is immutable after parse(); share it freely.
#include <bitset>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace duet::model::grammar {

struct Element {
    enum Kind : uint8_t { BYTES, RULE, END } kind = END;
    uint32_t index = 0;  // BYTES: into Grammar::sets; RULE: rule id
};

struct Grammar {
    std::vector<std::string> rule_names;  // [rules]; generated helper rules are named "<rule>_<n>"
    // rules[r] = offsets into `elems` where each alternative of rule r starts; every
    // alternative is a run of BYTES/RULE elements terminated by an END element.
    std::vector<std::vector<uint32_t>> rules;
    std::vector<Element> elems;
    std::vector<std::bitset<256>> sets;  // byte sets of BYTES elements
    uint32_t root = 0;

    // Throws duet::Error "<source>: line L: <what>" for a syntax error, an undefined rule, a
    // missing root rule or left recursion.
    static std::shared_ptr<const Grammar> parse(std::string_view text, std::string_view source = "grammar");
};

}  // namespace duet::model::grammar
