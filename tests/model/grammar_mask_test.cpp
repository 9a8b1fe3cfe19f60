// The cached token mask (Matcher's lazily built DFA over stack sets) against the uncached
// reference (stepping the pushdown stacks byte by byte, token by token): over random grammars
// and random reachable states, for the synthetic SPM and both byte-level BPE vocabularies, the
// allowed sets must be identical. Also: the cache bound keeps the current state.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "core/error.h"
#include "model/arch_presets.h"
#include "model/grammar/matcher.h"
#include "model/synthetic_vocab.h"
#include "model/tokenizer/tokenizer.h"

namespace duet::model {
namespace {

using grammar::Grammar;
using grammar::Matcher;
using grammar::TokenTable;

std::shared_ptr<const TokenTable> synthetic_table(const char* arch) {
    const SyntheticVocab sv = build_synthetic_vocab(arch_preset(arch));
    Vocab v;
    v.kind = sv.model == "llama" ? TokenizerKind::SPM : TokenizerKind::BPE;
    v.tokens = sv.tokens;
    v.scores = sv.scores;
    for (int32_t t : sv.token_types) v.types.push_back(TokenType(t));
    v.merges = sv.merges;
    v.pre = sv.pre;
    v.bos_id = sv.bos_id;
    v.eos_id = sv.eos_id;
    v.eot_id = sv.eot_id.value_or(-1);
    v.unk_id = sv.unk_id.value_or(-1);
    v.add_bos = sv.add_bos;
    v.add_space_prefix = v.kind == TokenizerKind::SPM;
    return TokenTable::from_tokenizer(*Tokenizer::from_vocab(v));
}

// A random grammar of four rules over atoms that the synthetic vocabularies' tokens contain
// (letters, space, quotes, braces, digits, any character, negated classes). A rule may refer
// to a later rule anywhere, and to any rule (itself included) after a literal, so recursion is
// right recursion only; a grammar the parser still refuses is skipped by the caller.
std::string random_grammar(std::mt19937_64& rng) {
    const char* atoms[] = {"\"a\"", "\"e\"", "\"th\"", "\" \"", "\"\\\"\"", "\"{\"", "\"}\"", "[a-z]", "[0-9]",
                           "[^\"\\\\]", ".", "[aeiou ]", "[^a-m]", "\"in\"", "\"\\u00e9\""};
    const char* reps[] = {"", "", "", "*", "+", "?", "{1,3}", "{2}"};
    auto pick = [&](size_t n) { return size_t(rng() % n); };
    auto name = [](int r) {
        std::string n = r == 0 ? "root" : "r";
        if (r > 0) n += char('0' + r);
        return n;
    };
    std::string text;
    const int n_rules = 4;
    for (int r = 0; r < n_rules; ++r) {
        text += name(r);
        text += " ::= ";
        const size_t n_alts = 1 + pick(3);
        for (size_t a = 0; a < n_alts; ++a) {
            if (a) text += " | ";
            const size_t n_items = 1 + pick(4);
            bool after_literal = false;
            for (size_t i = 0; i < n_items; ++i) {
                const int target = after_literal ? int(pick(n_rules)) : r + 1 + int(pick(size_t(n_rules)));
                if (pick(4) == 0 && target < n_rules) {
                    text += name(target);
                    text += ' ';
                } else {
                    text += '(';
                    text += atoms[pick(std::size(atoms))];
                    text += ')';
                    text += reps[pick(std::size(reps))];
                    text += ' ';
                    after_literal = true;
                }
            }
        }
        text += "\n";
    }
    return text;
}

class GrammarMask : public ::testing::TestWithParam<const char*> {};

TEST_P(GrammarMask, CachedMaskEqualsUncachedTokenCheckOnRandomGrammars) {
    const auto table = synthetic_table(GetParam());
    std::mt19937_64 rng(2026);
    int grammars = 0, states = 0;
    std::vector<uint8_t> allowed;
    for (int trial = 0; trial < 60; ++trial) {
        const std::string text = random_grammar(rng);
        std::shared_ptr<const Grammar> g;
        try {
            g = Grammar::parse(text);
        } catch (const duet::Error&) {
            continue;  // left recursion through an optional prefix
        }
        ++grammars;
        Matcher m(g, table);
        for (int step = 0; step < 10; ++step) {
            ++states;
            const int64_t n = m.allowed_tokens(allowed);
            int64_t count = 0;
            std::vector<int32_t> ids;
            for (int32_t id = 0; id < int32_t(table->n_vocab()); ++id) {
                const bool ref = m.token_allowed_uncached(id);
                ASSERT_EQ(bool(allowed[size_t(id)]), ref) << text << "step " << step << " token " << id;
                ASSERT_EQ(m.token_allowed(id), ref) << text << "step " << step << " token " << id;
                count += ref;
                if (ref && !table->is_eog(id)) ids.push_back(id);
            }
            ASSERT_EQ(n, count) << text;
            std::vector<uint8_t> again;  // the same state again: served from the mask cache
            ASSERT_EQ(m.allowed_tokens(again), n) << text;
            ASSERT_EQ(again, allowed) << text;
            if (ids.empty()) break;
            ASSERT_TRUE(m.accept_token(ids[rng() % ids.size()])) << text;
        }
    }
    EXPECT_GE(grammars, 30);
    EXPECT_GE(states, 150);
}

INSTANTIATE_TEST_SUITE_P(TokenizerKinds, GrammarMask, ::testing::Values("tiny-llama", "tiny-qwen2", "tiny-llama3"));

// Counted repetitions above Grammar::kExpandCount keep their count in the parse stack and are
// relaxed in the cached state while no token can reach a bound: at every count on the way to and
// past the bounds, the cached mask must equal stepping the exact stacks, and the closing reserve
// must be the remaining minimum. The same for @len regions, whose counts stay exact.
TEST_P(GrammarMask, CountedRepeatsEqualTheExactStacksAtEveryCount) {
    const auto table = synthetic_table(GetParam());
    const char* grammars[] = {
        "root ::= \"\\\"\" ( [a-z ] | \"\\\\n\" | [^\\x00-\\x7f] ){65,80} \"\\\"\"",
        "root ::= ( [a-z]{0,3} \" \" ){66,} \".\"",
        "root ::= ( [a-z]? ){0,70} \"!\"",
        "root ::= ( \"[\" [a-z ]{65,70} \"]\" ){1,100}",
        "root ::= \"{\" ( [0-9] | \"e\" ){70} \"}\" | \"{\" [0-9]{0,68} \"x}\"",
        // length regions (@len): counts exact in the cached state, checked ahead
        "root ::= \"'\" @len{20,40}( ( [a-z] @tick )+ ( [ -] @tick ( [a-z] @tick )* )* ) \"'\"",
        "root ::= @len{0,30}( ( \"ab\" @tick @tick | [0-9] @tick )* \".\" @tick ) \"!\"",
        "root ::= @len{66,80}( ( [a-z ] @tick ){0,100} ) \"!\"",
    };
    std::mt19937_64 rng(7);
    std::vector<uint8_t> allowed;
    int states = 0, ends = 0;
    for (const char* text : grammars) {
        const auto g = Grammar::parse(text);
        ASSERT_TRUE(g->has_repeats || g->has_counts) << text;
        for (int run = 0; run < 2; ++run) {
            Matcher m(g, table);
            std::string prefix;  // the text accepted so far
            for (int step = 0; step < 120; ++step) {
                ++states;
                const int64_t n = m.allowed_tokens(allowed);
                std::vector<int32_t> ids;
                for (int32_t id = 0; id < int32_t(table->n_vocab()); ++id) {
                    const bool ref = m.token_allowed_uncached(id);
                    ASSERT_EQ(bool(allowed[size_t(id)]), ref) << text << " step " << step << " token " << id;
                    ASSERT_EQ(m.token_allowed(id), ref) << text << " step " << step << " token " << id;
                    if (ref && !table->is_eog(id)) ids.push_back(id);
                }
                ASSERT_EQ(n, int64_t(ids.size()) + (m.can_end() ? int64_t(table->eog_tokens().size()) : 0)) << text;
                // the reserve after a token, read from the cached (relaxed) state, is the exact one
                for (int k = 0; k < 8 && !ids.empty(); ++k) {
                    const int32_t id = ids[rng() % ids.size()];
                    Matcher after(g, table);
                    ASSERT_TRUE(after.accept_bytes(prefix + table->bytes(id)));
                    ASSERT_EQ(m.min_bytes_after(id), after.min_bytes_to_end()) << text << " token " << id;
                    ASSERT_LE(after.min_bytes_to_end(), m.max_close_after_allowed()) << text;
                }
                if (ids.empty()) break;
                ends += m.can_end();
                const int32_t next = ids[rng() % ids.size()];
                ASSERT_TRUE(m.accept_token(next)) << text;
                prefix += table->bytes(next);
            }
        }
    }
    EXPECT_GE(states, 400);
    EXPECT_GE(ends, 5) << states;  // the runs got past the minimum counts (65 and more)
}

TEST(GrammarMask, CountedRepeatsEnforceTheirBoundsAndReserve) {
    auto table = std::make_shared<TokenTable>(std::vector<std::string>{"a", "aaaa", "!", ""},
                                              std::vector<uint8_t>{0, 0, 0, 1});
    const auto g = Grammar::parse("root ::= \"<\" \"a\"{100,65535} \"!\"");
    EXPECT_LT(g->elems.size(), 8u);  // independent of the count
    Matcher m(g, table);
    ASSERT_TRUE(m.accept_bytes("<"));
    for (int k = 0; k < 65535; ++k) {
        ASSERT_EQ(m.min_bytes_to_end(), uint32_t(std::max(100 - k, 0) + 1)) << k;
        ASSERT_EQ(m.token_allowed(2), k >= 100) << k;
        ASSERT_EQ(m.token_allowed(1), k + 4 <= 65535) << k;
        ASSERT_TRUE(m.accept_token(0)) << k;
    }
    EXPECT_LE(m.cached_states(), 20u);  // below the minimum and in the interior: one state each
    EXPECT_FALSE(m.token_allowed(0));
    EXPECT_FALSE(m.accept_bytes("a"));
    ASSERT_TRUE(m.accept_token(2));
    EXPECT_TRUE(m.must_end());
}

TEST(GrammarMask, CacheBoundKeepsTheCurrentState) {
    // Every "(" nests one level deeper: a new stack set each byte, so the cache must be dropped
    // on the way down; the matcher must still know how many ")" it owes.
    auto table = std::make_shared<TokenTable>(std::vector<std::string>{"(", ")", "x", ""},
                                              std::vector<uint8_t>{0, 0, 0, 1});
    Matcher m(Grammar::parse("root ::= \"(\" root \")\" | \"x\""), table);
    const int depth = int(Matcher::kMaxCachedStates) + 500;
    for (int i = 0; i < depth; ++i) ASSERT_TRUE(m.accept_token(0)) << i;
    EXPECT_LE(m.cached_states(), Matcher::kMaxCachedStates + 1);
    ASSERT_TRUE(m.accept_token(2));
    for (int i = 0; i < depth; ++i) {
        ASSERT_FALSE(m.can_end()) << i;
        ASSERT_FALSE(m.token_allowed(2));
        ASSERT_TRUE(m.accept_token(1)) << i;
    }
    EXPECT_TRUE(m.must_end());
    EXPECT_FALSE(m.token_allowed(1));
}

}  // namespace
}  // namespace duet::model
