#pragma once
// JSON Schema `pattern` (the regular-expression subset schemas use) -> a grammar expression
// for the contents of a JSON string, i.e. the characters JSON-encoded (a '"' in the match is
// written \", a newline \n). Not a public API (json_schema.cpp uses it).
//
// Supported: literals, escapes (\d \w \s \D \W \S, \. \\ \/ and other escaped punctuation,
// \n \r \t, \xHH, \uHHHH), '.', classes [a-z_] [^"] (with those escapes inside), groups ( )
// (?: ) (?<name> ) (?P<name> ), alternation |, quantifiers * + ? {m} {m,} {m,n} (a trailing ?
// for laziness is accepted: it changes no match), '^' at the start and '$' at the end.
// Refused with the pattern offset: lookaround, backreferences, \b, inline flags, anchors
// elsewhere, counts above 1000000.
//
// Soundness: the output is a subset of what the pattern accepts. JSON Schema patterns are
// searched, not anchored, but a string that is exactly a match always matches, so only the
// match itself is generated. Shorthand classes are ASCII (\w = [A-Za-z0-9_]); their negations
// and '.' cover only printable ASCII and non-ASCII letters outside any Unicode digit, word or
// space class are left out, so Python's and ECMAScript's Unicode-aware classes agree.
#include <string>
#include <string_view>

namespace duet::model::grammar {

// Throws duet::Error "<where>pattern: <what> at offset N" (where ends with '/'). With `ticks`,
// every character is followed by @tick, so @len{m,n}( ... ) around it counts characters (a JSON
// escape such as \" is one).
std::string regex_to_grammar(std::string_view pattern, const std::string& where, int max_depth, bool ticks = false);

}  // namespace duet::model::grammar
