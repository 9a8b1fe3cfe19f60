// Length regions (@len{m,n} with @tick, grammar.h): random walks never reach a state that cannot
// end (the matcher's tick lookahead) and every complete text has its strings' lengths within the
// bounds, checked on the decoded JSON, not with duet's grammar (the refusals: grammar_test.cpp); and,
// through the schema compiler, a pattern or a format together with minLength/maxLength.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "model/grammar/json_schema.h"
#include "model/grammar/matcher.h"
#include "grammar_byte_table.h"

namespace duet::model::grammar {
namespace {

using ojson = nlohmann::ordered_json;

size_t code_points(const std::string& s) {
    return size_t(std::count_if(s.begin(), s.end(), [](char c) { return (uint8_t(c) & 0xC0) != 0x80; }));
}

// Every string anywhere in v.
void strings_of(const ojson& v, std::vector<std::string>& out) {
    if (v.is_string()) out.push_back(v.get<std::string>());
    if (v.is_structured())
        for (const auto& x : v) strings_of(x, out);
}

// A random text of the grammar, byte by byte; fails the test at a state with no continuation.
std::string walk(const std::shared_ptr<const Grammar>& g, std::mt19937_64& rng) {
    Matcher m(g, byte_table());
    std::vector<uint8_t> allowed;
    std::string text;
    const int wander = int(rng() % 100);
    for (int step = 0; step < 2000; ++step) {
        if (m.can_end() && (m.must_end() || rng() % (step < wander ? 8 : 2) == 0)) return text;
        // then head for the end (the closing reserve; any allowed byte when none is closer)
        int64_t n = step >= wander && m.min_bytes_to_end() > 0 ? m.allowed_tokens_within(allowed, m.min_bytes_to_end() - 1) : 0;
        if (n == 0) n = m.allowed_tokens(allowed);
        std::vector<int> bytes;
        for (int b = 0; b < 256; ++b)
            if (allowed[size_t(b)]) bytes.push_back(b);
        EXPECT_FALSE(bytes.empty()) << "no continuation after '" << text << "'";
        if (bytes.empty()) return text;
        const int b = bytes[rng() % bytes.size()];
        EXPECT_TRUE(m.accept_bytes(std::string(1, char(b))));
        text += char(b);
    }
    ADD_FAILURE() << "no end after 2000 bytes: " << text;
    return text;
}

TEST(LengthRegions, EveryWalkEndsWithItsStringsWithinTheBounds) {
    struct Case {
        const char* grammar;
        size_t lo, hi;  // of every string in the text
    };
    const Case cases[] = {
        {R"(root ::= "\"" @len{3,8}( ( [a-z] @tick )+ "-" @tick ( [0-9] @tick )+ ) "\"")", 3, 8},
        {R"(root ::= "\"" @len{2,5}( ( [\u00e9\u4e2d] @tick | "\\n" @tick | "\\\"" @tick )+ ) "\"")", 2, 5},
        {R"(root ::= "\"" @len{0,10}( ( "ab" @tick @tick )* "c" @tick ) "\"")", 1, 10},  // gaps: one bound only
        {R"(root ::= "\"" @len{7,}( ( [xy] @tick ){1,3} ( "." @tick [0-9] @tick [0-9] @tick )* ) "\"")", 7, 1000},
        {R"(root ::= "\"" @len{65,70}( ( [a-z] @tick ){0,100} ) "\"")", 65, 70},
        {R"(root ::= "[" s ( "," s ){0,3} "]"
            s ::= "\"" @len{1,3}( ( [a-z] @tick )+ ) "\"")", 1, 3},
    };
    std::mt19937_64 rng(39);
    for (const Case& c : cases) {
        const auto g = Grammar::parse(c.grammar, "g");
        size_t shortest = SIZE_MAX, longest = 0;
        for (int w = 0; w < 60; ++w) {
            const std::string text = walk(g, rng);
            std::vector<std::string> strings;
            ASSERT_NO_THROW(strings_of(ojson::parse(text), strings)) << c.grammar << "\n" << text;
            for (const auto& s : strings) {
                const size_t n = code_points(s);
                EXPECT_TRUE(n >= c.lo && n <= c.hi) << c.grammar << "\n" << text << ": " << n;
                shortest = std::min(shortest, n), longest = std::max(longest, n);
            }
        }
        EXPECT_LT(shortest, longest) << c.grammar;  // the walks explored the range
    }
}

// Through the schema compiler: walks of pattern/format strings with lengths, checked by the
// lengths of the decoded strings (the patterns themselves by the property test's validator).
TEST(LengthRegions, PatternsAndFormatsWithLengthsAreEnforced) {
    struct Case {
        const char* schema;
        size_t lo, hi;
    };
    const Case cases[] = {
        {R"({"type":"string","pattern":"^[a-z]+-[0-9]+$","maxLength":6})", 3, 6},
        {R"({"type":"string","pattern":"^\\w+@\\w+\\.com$","minLength":8,"maxLength":12})", 8, 12},
        {R"({"type":"string","pattern":"^(foo|bar)+$","maxLength":7})", 3, 7},
        {R"({"type":"string","pattern":"^[\"\u00e9]{2,}$","maxLength":4})", 2, 4},
        {R"({"type":"string","format":"email","maxLength":12})", 5, 12},
        {R"({"type":"string","format":"date-time","maxLength":22})", 20, 22},
        {R"({"type":"string","format":"ipv4","minLength":9,"maxLength":11})", 9, 11},
    };
    std::mt19937_64 rng(7);
    for (const Case& c : cases) {
        const std::string text = json_schema_to_grammar(ojson::parse(c.schema), "s.json");
        EXPECT_NE(text.find("@len"), std::string::npos) << c.schema;
        const auto g = Grammar::parse(text, "s.json");
        for (int w = 0; w < 40; ++w) {
            const std::string out = walk(g, rng);
            const size_t n = code_points(ojson::parse(out).get<std::string>());
            EXPECT_TRUE(n >= c.lo && n <= c.hi) << c.schema << ": " << out;
        }
    }
    // every match already within the bounds: no region at all
    EXPECT_EQ(json_schema_to_grammar(ojson::parse(R"({"type":"string","format":"uuid","maxLength":36})")).find("@len"),
              std::string::npos);
}

}  // namespace
}  // namespace duet::model::grammar
