// JsonSchemaCompiler's strings: minLength/maxLength, pattern, format, and their combinations.
#include <fmt/format.h>

#include "model/grammar/grammar.h"
#include "model/grammar/json_schema_detail.h"
#include "model/grammar/json_schema_values.h"
#include "model/grammar/regex_to_grammar.h"

namespace duet::model::grammar {

using namespace detail;

// A string's contents (a pattern's or a format's grammar, with @tick after every character)
// limited to lo..hi characters (hi < 0: no maximum): as is when every match already has such a
// length, else inside @len, checked here so a refusal names the schema's keyword.
std::string JsonSchemaCompiler::counted_contents(const std::string& contents, int lo, int hi, const std::string& w,
                                                 const std::string& what) {
    const auto g = Grammar::parse("root ::= @len{0,}( " + contents + " )", w);
    const uint32_t body = g->elems[g->rules[g->root][0]].index;
    const uint32_t p_lo = g->rule_min_ticks[body], p_hi = g->rule_max_ticks[body];
    const uint32_t top = hi < 0 ? Grammar::kUnbounded : uint32_t(hi);
    if (p_lo >= uint32_t(lo) && p_hi <= top) return contents;
    const std::string lengths = hi < 0 ? fmt::format("at least {}", lo)
                                : lo == 0 ? fmt::format("at most {}", hi)
                                          : fmt::format("{} to {}", lo, hi);
    if (p_lo > top || p_hi < uint32_t(lo))
        fail("{}: {} matches no string of {} characters (its matches have {} to {})", w, what, lengths, p_lo,
             p_hi == Grammar::kUnbounded ? std::string("any number of") : std::to_string(p_hi));
    const std::string counted = fmt::format("@len{}( {} )", repeat(lo, hi), contents);
    if (lo > 0 && hi >= 0) {
        try {
            Grammar::parse("root ::= " + counted, w);
        } catch (const Error&) {
            fail("{}: minLength {} and maxLength {} together with {} cannot be enforced: a repeated or optional part "
                 "of 2 or more characters makes the lengths it can reach skip values (allowed with it: only one of "
                 "minLength/maxLength, or both when its repeated and optional parts are single characters)",
                 w, lo, hi, what);
        }
    }
    return counted;
}

std::string JsonSchemaCompiler::string_rule(const ojson& s, const std::string& path) {
    const std::string w = where(path);
    const int lo = count_in(s, "minLength", 0, w), hi = count_in(s, "maxLength", -1, w);
    if (hi >= 0 && hi < lo) fail("{}: maxLength {} is below minLength {}", w, hi, lo);
    const bool lengths = lo > 0 || hi >= 0;
    std::string contents, what;
    if (auto p = s.find("pattern"); p != s.end()) {
        if (!p->is_string()) fail("{}pattern: must be a string", into(w));
        contents = regex_to_grammar(p->get<std::string>(), into(w), limits_.max_depth, lengths);
        what = "pattern '" + p->get<std::string>() + "'";
    }
    if (auto f = s.find("format"); f != s.end() && f->is_string()) {
        const std::string e = format_regex(f->get<std::string>());
        if (!e.empty()) {
            if (!contents.empty())
                fail("{}: pattern and format '{}' together cannot be enforced (use one of them)", w, f->get<std::string>());
            contents = regex_to_grammar(e, into(w) + "format/", limits_.max_depth, lengths);
            what = "format '" + f->get<std::string>() + "'";
        }
    }
    if (!contents.empty())
        return "\"\\\"\" " + (lengths ? counted_contents(contents, lo, hi, w, what) : contents) + " \"\\\"\"";
    return lo == 0 && hi < 0 ? "string" : fmt::format("\"\\\"\" char{} \"\\\"\"", repeat(lo, hi));
}

}  // namespace duet::model::grammar
