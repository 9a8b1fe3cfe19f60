// SentencePiece-style tokenizer on hand-built vocabularies: merge order by score, ties,
// space prefix, byte fallback, special tokens, round trips.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "model/tokenizer/tokenizer.h"

namespace duet::model {
namespace {

const std::string kSp = "\xE2\x96\x81";  // ▁

// ids: 0 <unk>, 1 <s>, 2 </s>, 3..258 <0x00>..<0xFF>, then `normal` in order.
Vocab spm_vocab(const std::vector<std::pair<std::string, float>>& normal, bool space_prefix = true) {
    Vocab v;
    v.kind = TokenizerKind::SPM;
    v.tokens = {"<unk>", "<s>", "</s>"};
    v.types = {TokenType::UNKNOWN, TokenType::CONTROL, TokenType::CONTROL};
    v.scores = {0, 0, 0};
    for (int b = 0; b < 256; ++b) {
        v.tokens.push_back(fmt::format("<0x{:02X}>", b));
        v.types.push_back(TokenType::BYTE);
        v.scores.push_back(0);
    }
    for (const auto& [t, s] : normal) {
        v.tokens.push_back(t);
        v.types.push_back(TokenType::NORMAL);
        v.scores.push_back(s);
    }
    v.unk_id = 0, v.bos_id = 1, v.eos_id = 2;
    v.add_bos = true;
    v.add_space_prefix = space_prefix;
    return v;
}
constexpr int32_t kFirst = 259;   // first normal id
int32_t byte_id(uint8_t b) { return 3 + b; }

TEST(SpmTokenizer, HigherScoreMergesFirst) {
    // "▁a" beats "ab": ▁ab -> [▁a, b]
    auto t1 = Tokenizer::from_vocab(spm_vocab({{kSp, -1}, {"a", -1}, {"b", -1}, {kSp + "a", -2}, {"ab", -3}}));
    EXPECT_EQ(t1->encode("ab", false, false), (std::vector<int32_t>{kFirst + 3, kFirst + 2}));
    // "ab" beats "▁a": -> [▁, ab]
    auto t2 = Tokenizer::from_vocab(spm_vocab({{kSp, -1}, {"a", -1}, {"b", -1}, {kSp + "a", -3}, {"ab", -2}}));
    EXPECT_EQ(t2->encode("ab", false, false), (std::vector<int32_t>{kFirst + 0, kFirst + 4}));
}

TEST(SpmTokenizer, MergesRepeatUntilNoPairIsAToken) {
    auto t = Tokenizer::from_vocab(
        spm_vocab({{kSp, -1}, {"a", -1}, {"b", -1}, {kSp + "a", -2}, {kSp + "ab", -5}, {"c", -1}}));
    EXPECT_EQ(t->encode("abc", false, false), (std::vector<int32_t>{kFirst + 4, kFirst + 5}));
}

TEST(SpmTokenizer, EqualScoresMergeLeftmostFirst) {
    auto t = Tokenizer::from_vocab(spm_vocab({{"a", -1}, {"aa", -2}}, /*space_prefix=*/false));
    EXPECT_EQ(t->encode("aaa", false, false), (std::vector<int32_t>{kFirst + 1, kFirst + 0}));
}

TEST(SpmTokenizer, SpacesBecomeU2581AndPrefixIsAdded) {
    auto t = Tokenizer::from_vocab(spm_vocab({{kSp, -1}, {"a", -1}, {kSp + "a", -2}, {kSp + kSp, -3}}));
    EXPECT_EQ(t->encode("a a", false, false), (std::vector<int32_t>{kFirst + 2, kFirst + 2}));
    EXPECT_EQ(t->encode("a", true, false), (std::vector<int32_t>{1, kFirst + 2}));
    EXPECT_EQ(t->encode(" ", false, false), (std::vector<int32_t>{kFirst + 3}));  // prefix + the space
    EXPECT_EQ(t->encode("", false, false), std::vector<int32_t>{});
    EXPECT_EQ(t->encode("", true, false), std::vector<int32_t>{1});
    auto np = Tokenizer::from_vocab(spm_vocab({{kSp, -1}, {"a", -1}, {kSp + "a", -2}}, false));
    EXPECT_EQ(np->encode("a a", false, false), (std::vector<int32_t>{kFirst + 1, kFirst + 2}));
}

TEST(SpmTokenizer, UnknownCharactersFallBackToUtf8Bytes) {
    auto t = Tokenizer::from_vocab(spm_vocab({{kSp, -1}, {"a", -1}}, false));
    // é = C3 A9, 中 = E4 B8 AD, 😀 = F0 9F 98 80
    EXPECT_EQ(t->encode("a\xC3\xA9", false, false), (std::vector<int32_t>{kFirst + 1, byte_id(0xC3), byte_id(0xA9)}));
    EXPECT_EQ(t->encode("\xE4\xB8\xAD\xF0\x9F\x98\x80", false, false),
              (std::vector<int32_t>{byte_id(0xE4), byte_id(0xB8), byte_id(0xAD), byte_id(0xF0), byte_id(0x9F),
                                    byte_id(0x98), byte_id(0x80)}));
    // An invalid byte is spelled as itself too.
    EXPECT_EQ(t->encode("\xFF", false, false), (std::vector<int32_t>{byte_id(0xFF)}));
}

TEST(SpmTokenizer, MultiByteCharacterTokensAreUsedWhenPresent) {
    auto t = Tokenizer::from_vocab(spm_vocab({{"\xC3\xA9", -1}, {"t", -1}, {"\xC3\xA9t", -2}}, false));
    EXPECT_EQ(t->encode("\xC3\xA9t\xC3\xA9", false, false), (std::vector<int32_t>{kFirst + 2, kFirst + 0}));
}

TEST(SpmTokenizer, PiecesDecodeBytesAndSpaces) {
    auto t = Tokenizer::from_vocab(spm_vocab({{kSp + "hi" + kSp, -1}}));
    EXPECT_EQ(t->token_to_piece(kFirst), " hi ");
    EXPECT_EQ(t->token_to_piece(byte_id(0x41)), "A");
    EXPECT_EQ(t->token_to_piece(byte_id(0xC3)), "\xC3");
    EXPECT_EQ(t->token_to_piece(1), "");
    EXPECT_EQ(t->token_to_piece(1, true), "<s>");
    EXPECT_EQ(t->token_to_piece(0), "\xE2\x96\x85");
    EXPECT_THROW(t->token_to_piece(-1), Error);
    EXPECT_THROW(t->token_to_piece(static_cast<int32_t>(t->n_vocab())), Error);
}

TEST(SpmTokenizer, RoundTripsArbitraryBytes) {
    auto t = Tokenizer::from_vocab(
        spm_vocab({{kSp, -1}, {"a", -1}, {"b", -1}, {kSp + "a", -2}, {"ab", -3}, {"\xC3\xA9", -1}}));
    for (std::string s : {"ab ab  a", " leading", "trailing ", "caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87",
                          "e\xCC\x81 \xF0\x9F\x98\x80\xF0\x9F\x91\x8D", "bad \xFF\xFE\xC3 bytes\x80", "tab\tnl\n"}) {
        EXPECT_EQ(t->decode(t->encode(s, true, false)), s) << s;
    }
}

TEST(SpmTokenizer, SpecialTokensSplitOnlyWhenAsked) {
    auto t = Tokenizer::from_vocab(spm_vocab({{kSp, -1}, {"a", -1}, {kSp + "a", -2}}));
    // parse_special: </s> is one token, and the fragment after it gets the space prefix again.
    EXPECT_EQ(t->encode("a</s>a", false, true), (std::vector<int32_t>{kFirst + 2, 2, kFirst + 2}));
    // Otherwise "</s>" is spelled with byte tokens.
    const auto spelled = t->encode("</s>", false, false);
    EXPECT_EQ(spelled, (std::vector<int32_t>{kFirst, byte_id('<'), byte_id('/'), byte_id('s'), byte_id('>')}));
    EXPECT_EQ(t->decode(t->encode("a</s>", true, true)), "a");  // control tokens print nothing
}

TEST(SpmTokenizer, UserDefinedTokensAlwaysSplit) {
    Vocab v = spm_vocab({{kSp, -1}, {"a", -1}, {"<tool>", 0}});
    v.types[kFirst + 2] = TokenType::USER_DEFINED;
    auto t = Tokenizer::from_vocab(v);
    EXPECT_EQ(t->encode("<tool>", false, false), (std::vector<int32_t>{kFirst + 2}));
    EXPECT_EQ(t->token_to_piece(kFirst + 2), "<tool>");
}

TEST(SpmTokenizer, EndOfGeneration) {
    auto t = Tokenizer::from_vocab(spm_vocab({{"a", -1}}));
    EXPECT_EQ(t->bos(), 1);
    EXPECT_EQ(t->eos(), 2);
    EXPECT_TRUE(t->is_eog(2));
    EXPECT_FALSE(t->is_eog(1));
    EXPECT_EQ(t->kind(), "llama");
    EXPECT_TRUE(t->add_bos_default());
}

TEST(SpmTokenizer, InvalidVocabulariesAreErrors) {
    Vocab v = spm_vocab({{"a", -1}});
    v.scores.pop_back();
    v.source = "m.gguf";
    try {
        Tokenizer::from_vocab(v);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "m.gguf: tokenizer.ggml.scores has 259 entries but tokenizer.ggml.tokens has 260 (must be equal)");
    }
    Vocab w = spm_vocab({{"a", -1}});
    w.source = "m.gguf";
    w.eos_id = 260;
    try {
        Tokenizer::from_vocab(w);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "m.gguf: tokenizer.ggml.eos_token_id = 260 is out of range (allowed: -1 for none, or 0 to 259)");
    }
    Vocab nob;
    nob.kind = TokenizerKind::SPM;
    nob.tokens = {"a"};
    auto t = Tokenizer::from_vocab(nob);
    try {
        t->encode("b", false, false);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "vocab: byte 0x62 has no token (the vocabulary has neither <0x62> nor an unknown token)");
    }
}

}  // namespace
}  // namespace duet::model
