#pragma once
// Length analyses over a parsed grammar (grammar_parser.cpp uses them; not a public API):
// the fewest bytes or ticks each rule matches, and the @len checks and tables of grammar.h.
#include <cstdint>
#include <string>
#include <vector>

#include "model/grammar/grammar.h"

namespace duet::model::grammar {

enum class Measure { BYTES, TICKS };

// [rules]: the fewest bytes (or @tick elements) of a text each rule matches; Grammar::kNoEnd
// when it matches no finite text (Knuth's generalisation of Dijkstra to grammars, O(E log E)).
// Ticks inside a nested @len count for that one only, so a COUNT element takes none; in bytes,
// a @len{m,n} takes at least m (the closing reserve's assumption: a byte per tick).
std::vector<uint64_t> rule_minimum(const Grammar& g, Measure m);

// Fills g.min_ticks/max_ticks/rule_min_ticks/rule_max_ticks for the rules @len bodies reach
// (g.rule_min_bytes must be set) and checks every @len element; throws duet::Error
// "<source>: rule 'R': @len{m,n}: <why>" for one with no count within m..n or, with both
// bounds, a body whose counts have gaps.
void analyse_lengths(Grammar& g, const std::string& source);

}  // namespace duet::model::grammar
