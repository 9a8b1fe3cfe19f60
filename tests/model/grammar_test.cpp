// Grammar text format and byte matching: what each construct accepts and rejects, UTF-8
// classes byte by byte, and the exact errors for malformed grammars.
#include "model/grammar/grammar.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "model/grammar/matcher.h"
#include "model/grammar/utf8_ranges.h"
#include "grammar_byte_table.h"

namespace duet::model::grammar {
namespace {

// Whole-string match: every byte accepted and the grammar complete at the end.
bool matches(const std::string& grammar, const std::string& text) {
    Matcher m(Grammar::parse(grammar), byte_table());
    return m.accept_bytes(text) && m.can_end();
}

std::string error_of(const std::string& grammar) {
    try {
        Grammar::parse(grammar, "g.gbnf");
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(Grammar, LiteralsAlternativesAndGroups) {
    const std::string g = "root ::= \"ab\" (\"c\" | \"de\") tail\ntail ::= \"!\" | \"\"";
    EXPECT_TRUE(matches(g, "abc"));
    EXPECT_TRUE(matches(g, "abde!"));
    EXPECT_FALSE(matches(g, "ab"));
    EXPECT_FALSE(matches(g, "abd"));
    EXPECT_FALSE(matches(g, "abcx"));
}

TEST(Grammar, RepetitionOperators) {
    EXPECT_TRUE(matches("root ::= [a-c]*", ""));
    EXPECT_TRUE(matches("root ::= [a-c]*", "abcabc"));
    EXPECT_FALSE(matches("root ::= [a-c]+", ""));
    EXPECT_TRUE(matches("root ::= \"x\"? \"y\"", "y"));
    EXPECT_TRUE(matches("root ::= \"x\"? \"y\"", "xy"));
    EXPECT_FALSE(matches("root ::= \"x\"? \"y\"", "xxy"));
    for (int n = 0; n <= 6; ++n) {
        const std::string s(size_t(n), 'a');
        EXPECT_EQ(matches("root ::= \"a\"{2,4}", s), n >= 2 && n <= 4) << n;
        EXPECT_EQ(matches("root ::= \"a\"{3}", s), n == 3) << n;
        EXPECT_EQ(matches("root ::= \"a\"{2,}", s), n >= 2) << n;
        EXPECT_EQ(matches("root ::= (\"a\" \"a\"){1,2}", s), n == 2 || n == 4) << n;
    }
}

TEST(Grammar, NegatedClassTakesWholeUtf8CharactersOnly) {
    const std::string g = "root ::= [^\"\\\\]*";
    EXPECT_TRUE(matches(g, "plain text"));
    EXPECT_TRUE(matches(g, "caf\xC3\xA9 \xE6\x97\xA5 \xF0\x9F\x98\x80"));  // é, 日, 😀
    EXPECT_FALSE(matches(g, "a\"b"));
    EXPECT_FALSE(matches(g, "\xFF"));          // never a UTF-8 byte
    EXPECT_FALSE(matches(g, "\xC3"));          // incomplete character
    EXPECT_FALSE(matches(g, "\xED\xA0\x80"));  // a surrogate encoded as UTF-8
    EXPECT_TRUE(matches("root ::= [\\u00e0-\\u00ff]", "\xC3\xA9"));
    EXPECT_FALSE(matches("root ::= [\\u00e0-\\u00ff]", "\xC3\x89"));  // É = U+00C9
    EXPECT_TRUE(matches("root ::= .", "\xE2\x82\xAC"));
}

TEST(Grammar, Utf8SequencesCoverEveryCodePointExactlyOnce) {
    std::vector<std::vector<ByteRange>> seqs;
    utf8_sequences({0x70, 0x10FFFF}, seqs);
    auto count = [&](uint32_t cp) {
        const std::string b = utf8_encode(cp);
        int hits = 0;
        for (const auto& s : seqs) {
            if (s.size() != b.size()) continue;
            bool ok = true;
            for (size_t i = 0; i < b.size(); ++i) ok = ok && uint8_t(b[i]) >= s[i].lo && uint8_t(b[i]) <= s[i].hi;
            hits += ok;
        }
        return hits;
    };
    for (uint32_t cp : {0x70u, 0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xD7FFu, 0xE000u, 0xFFFFu, 0x10000u, 0x10FFFFu, 0x1F600u})
        EXPECT_EQ(count(cp), 1) << std::hex << cp;
    EXPECT_EQ(count(0xD800), 0);
    EXPECT_EQ(count(0x41), 0);
}

TEST(Grammar, CommentsAndMultiLineRules) {
    const std::string g = "# a greeting\nroot ::= hi\n   ( \" \" name )?  # optional name\nhi ::= \"hi\"\nname ::= [a-z]+\n";
    EXPECT_TRUE(matches(g, "hi"));
    EXPECT_TRUE(matches(g, "hi bob"));
    EXPECT_FALSE(matches(g, "hi "));
}

TEST(Grammar, CompletionStatus) {
    Matcher m(Grammar::parse("root ::= \"a\" \"b\"?"), byte_table());
    EXPECT_FALSE(m.can_end());
    EXPECT_FALSE(m.accept_bytes("b"));
    EXPECT_TRUE(m.accept_bytes("a"));
    EXPECT_TRUE(m.can_end());
    EXPECT_FALSE(m.must_end());
    EXPECT_TRUE(m.accept_token('b'));
    EXPECT_TRUE(m.must_end());
    EXPECT_TRUE(m.token_allowed(256));  // EOS once complete
    m.reset();
    EXPECT_FALSE(m.token_allowed(256));
}

TEST(Grammar, ErrorsNameTheProblem) {
    EXPECT_EQ(error_of("root ::= foo"), "g.gbnf: line 1: rule 'foo' is used but not defined");
    EXPECT_EQ(error_of("start ::= \"a\""), "g.gbnf: no rule named 'root' (the start rule)");
    EXPECT_EQ(error_of("root ::= root \"a\" | \"b\""),
              "g.gbnf: rule 'root' is left-recursive (it can reach itself before matching any byte)");
    EXPECT_EQ(error_of("root ::= x? root\nx ::= \"a\""),
              "g.gbnf: rule 'root' is left-recursive (it can reach itself before matching any byte)");
    EXPECT_EQ(error_of("root ::= \"a"), "g.gbnf: line 1: unterminated literal (missing '\"')");
    EXPECT_EQ(error_of("root ::= [a-"), "g.gbnf: line 1: unterminated character class (missing ']')");
    EXPECT_EQ(error_of("\nroot ::= (\"a\""), "g.gbnf: line 2: missing ')'");
    EXPECT_EQ(error_of("root ::= \"a\"{5,2}"), "g.gbnf: line 1: repeat {5,2} has max below min");
    EXPECT_EQ(error_of("root ::= \"\\q\""),
              "g.gbnf: line 1: unknown escape '\\q' (allowed: \\n \\r \\t \\xHH \\uHHHH \\\\ \\\" \\] \\-)");
    EXPECT_EQ(error_of("root ::= \"a\"\nroot ::= \"b\""), "g.gbnf: line 2: rule 'root' is defined twice");
    EXPECT_EQ(error_of("root := \"a\""), "g.gbnf: line 1: expected '::=' after rule name 'root'");
}

// @len regions that cannot be enforced (grammar.h); their enforcement: grammar_length_test.cpp
TEST(Grammar, LengthRegionsThatCannotBeEnforcedAreRefused) {
    EXPECT_EQ(error_of(R"(root ::= "<" @len{2,3}( "abcd" @tick @tick @tick @tick ) ">")"),
              "g.gbnf: rule 'root': @len{2,3}: its body takes 4 to 4 ticks, none within the bounds");
    EXPECT_EQ(error_of(R"(root ::= @len{5,}( ( "a" @tick )? ))"),
              "g.gbnf: rule 'root': @len{5,}: its body takes 0 to 1 ticks, none within the bounds");
    EXPECT_EQ(error_of(R"(root ::= @len{1,5}( ( "ab" @tick @tick )* ))"),
              "g.gbnf: rule 'root': @len{1,5}: with both bounds, its body must take tick counts without gaps from any "
              "position (a repeated or optional part of 2 or more ticks skips counts)");
    EXPECT_EQ(error_of(R"(root ::= @len{1,5}( "x" ( "." @tick [0-9] @tick )? ))"),
              "g.gbnf: rule 'root': @len{1,5}: with both bounds, its body must take tick counts without gaps from any "
              "position (a repeated or optional part of 2 or more ticks skips counts)");
    EXPECT_EQ(error_of(R"(root ::= @len{2,1}( "x" ))"), "g.gbnf: line 1: @len{2,1} has max below min");
    EXPECT_EQ(error_of(R"(root ::= @size{2}( "x" ))"), "g.gbnf: line 1: unknown '@size' (allowed: @len{m,n}( ... ), @tick)");
    EXPECT_EQ(error_of(R"(root ::= @len{0,200}( ( "x"? @tick ){100} ))"),
              "g.gbnf: rule 'root_3': a repeat of more than 64 of something that can match no byte cannot hold @tick "
              "(write it with a byte before each @tick)");
    // a fixed count of a longer part, or one bound only, has no gap to fall into
    EXPECT_EQ(error_of(R"(root ::= @len{1,5}( ( "ab" @tick @tick ){2} ))"), "(no error)");
    EXPECT_EQ(error_of(R"(root ::= @len{0,5}( ( "ab" @tick @tick )* ))"), "(no error)");
}

}  // namespace
}  // namespace duet::model::grammar
