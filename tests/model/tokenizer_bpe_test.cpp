// GPT-2 byte-level BPE on hand-built vocabularies: pre-tokenizer splits of each regex, byte
// mapping, merges by rank, special tokens, round trips of arbitrary UTF-8 and invalid bytes.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "model/tokenizer/bpe_pretokenizer.h"
#include "model/tokenizer/bpe_tokenizer.h"
#include "model/tokenizer/tokenizer.h"

namespace duet::model {
namespace {

using Pieces = std::vector<std::string>;

Pieces split(std::string_view pre, std::string_view text) {
    BpePreTokenizer p(pre);
    Pieces out;
    for (auto v : p.split(text)) out.emplace_back(v);
    return out;
}

TEST(BpePreTokenizer, Llama3Splits) {
    EXPECT_EQ(split("llama-bpe", "Hello world's 12345!"), (Pieces{"Hello", " world", "'s", " ", "123", "45", "!"}));
    // Contractions in any case; a letter run takes one leading non-letter, non-digit character.
    EXPECT_EQ(split("llama-bpe", "I'M HERE'S"), (Pieces{"I", "'M", " HERE", "'S"}));
    EXPECT_EQ(split("llama-bpe", "12345678"), (Pieces{"123", "456", "78"}));
    EXPECT_EQ(split("llama-bpe", "a\n\nb"), (Pieces{"a", "\n\n", "b"}));
    // \s+(?!\S): the last space of a run goes with the next word.
    EXPECT_EQ(split("llama-bpe", "a   b"), (Pieces{"a", "  ", " b"}));
    EXPECT_EQ(split("llama-bpe", "x  "), (Pieces{"x", "  "}));
    EXPECT_EQ(split("llama-bpe", "(hi)..."), (Pieces{"(hi", ")..."}));
    EXPECT_EQ(split("llama-bpe", "ok!!\n\nnext"), (Pieces{"ok", "!!\n\n", "next"}));
    // Unicode letters and digits: é, CJK (Lo), Arabic-Indic digits (Nd).
    EXPECT_EQ(split("llama-bpe", "h\xC3\xA9llo \xE4\xB8\x96\xE7\x95\x8C \xD9\xA3\xD9\xA4\xD9\xA5\xD9\xA6"),
              (Pieces{"h\xC3\xA9llo", " \xE4\xB8\x96\xE7\x95\x8C", " ", "\xD9\xA3\xD9\xA4\xD9\xA5", "\xD9\xA6"}));
}

TEST(BpePreTokenizer, Qwen2SplitsDigitsOneByOne) {
    EXPECT_EQ(split("qwen2", "Hello world's 12345!"),
              (Pieces{"Hello", " world", "'s", " ", "1", "2", "3", "4", "5", "!"}));
    EXPECT_EQ(split("qwen2", "I'M"), (Pieces{"I", "'M"}));
}

TEST(BpePreTokenizer, Gpt2DefaultPattern) {
    EXPECT_EQ(split("gpt2", "Hello world's 12345!"), (Pieces{"Hello", " world", "'s", " 12345", "!"}));
    // Contractions are lower-case only in GPT-2's pattern.
    EXPECT_EQ(split("default", "I'M HERE'S"), (Pieces{"I", "'", "M", " HERE", "'", "S"}));
    EXPECT_EQ(BpePreTokenizer::pattern_for("anything-else"), BpePreTokenizer::pattern_for("gpt2"));
}

TEST(BpePreTokenizer, InvalidUtf8BytesBecomeTheirOwnPieces) {
    EXPECT_EQ(split("llama-bpe", "ab\xFF" "cd"), (Pieces{"ab", "\xFF", "cd"}));
    EXPECT_EQ(split("qwen2", "\xC3 x\x80"), (Pieces{"\xC3", " x", "\x80"}));
    // Every byte lands in exactly one piece, in order.
    const std::string s = "z\xF0\x9F\x98 \xE2\x82\xAC\xFE 9";
    std::string joined;
    for (const auto& p : split("llama-bpe", s)) joined += p;
    EXPECT_EQ(joined, s);
}

TEST(BpeByteMap, MatchesGpt2BytesToUnicode) {
    EXPECT_EQ(BpeTokenizer::byte_symbol('A'), "A");
    EXPECT_EQ(BpeTokenizer::byte_symbol(' '), "\xC4\xA0");   // Ġ U+0120
    EXPECT_EQ(BpeTokenizer::byte_symbol('\n'), "\xC4\x8A");  // Ċ U+010A
    EXPECT_EQ(BpeTokenizer::byte_symbol(0x00), "\xC4\x80");  // U+0100
    EXPECT_EQ(BpeTokenizer::byte_symbol(0xAD), "\xC5\x83");  // U+0143, the last one
    EXPECT_EQ(BpeTokenizer::byte_symbol(0xE9), "\xC3\xA9");  // printable Latin-1 maps to itself
    for (int b = 0; b < 256; ++b) {
        const std::string& s = BpeTokenizer::byte_symbol(static_cast<uint8_t>(b));
        uint32_t cp = static_cast<uint8_t>(s[0]);
        if (s.size() == 2) cp = ((cp & 0x1F) << 6) | (static_cast<uint8_t>(s[1]) & 0x3F);
        EXPECT_EQ(BpeTokenizer::byte_of_codepoint(cp), b);
    }
}

// ids 0..255: the byte symbols in byte order; then `extra` normal tokens; merges as given.
Vocab bpe_vocab(const std::vector<std::string>& extra, const std::vector<std::string>& merges,
                std::string pre = "llama-bpe") {
    Vocab v;
    v.kind = TokenizerKind::BPE;
    v.pre = std::move(pre);
    for (int b = 0; b < 256; ++b) v.tokens.push_back(BpeTokenizer::byte_symbol(static_cast<uint8_t>(b)));
    for (const auto& e : extra) v.tokens.push_back(e);
    v.merges = merges;
    return v;
}

TEST(BpeTokenizer, MergesApplyByRank) {
    // "abc": with "a b" ranked first -> [ab, c]; with "b c" first -> [a, bc].
    auto t1 = Tokenizer::from_vocab(bpe_vocab({"ab", "bc"}, {"a b", "b c"}));
    EXPECT_EQ(t1->encode("abc", false, false), (std::vector<int32_t>{256, 'c'}));
    auto t2 = Tokenizer::from_vocab(bpe_vocab({"ab", "bc"}, {"b c", "a b"}));
    EXPECT_EQ(t2->encode("abc", false, false), (std::vector<int32_t>{'a', 257}));
}

TEST(BpeTokenizer, MergesChainAndRespectWordBoundaries) {
    const std::string G = "\xC4\xA0";  // Ġ
    auto t = Tokenizer::from_vocab(bpe_vocab({"he", "ll", "hell", "hello", G + "w", "or", G + "wor", "ld", G + "world"},
                                             {"h e", "l l", "he ll", "hell o", G + " w", "o r", G + "w or", "l d",
                                              G + "wor ld"}, "gpt2"));
    EXPECT_EQ(t->encode("hello world", false, false), (std::vector<int32_t>{259, 264}));
    EXPECT_EQ(t->token_to_piece(264), " world");
    EXPECT_EQ(t->encode("hello", false, false), (std::vector<int32_t>{259}));
    EXPECT_EQ(t->encode("held", false, false), (std::vector<int32_t>{256, 263}));
}

TEST(BpeTokenizer, Llama3EmitsWholeWordTokensWithoutMerges) {
    // ignore_merges: "abc" is in the vocabulary, so it is used although no merge builds it.
    auto t = Tokenizer::from_vocab(bpe_vocab({"abc"}, {}, "llama-bpe"));
    EXPECT_EQ(t->encode("abc", false, false), (std::vector<int32_t>{256}));
    auto g = Tokenizer::from_vocab(bpe_vocab({"abc"}, {}, "gpt2"));
    EXPECT_EQ(g->encode("abc", false, false), (std::vector<int32_t>{'a', 'b', 'c'}));
}

TEST(BpeTokenizer, BytesWithoutMergesAreByteSymbols) {
    auto t = Tokenizer::from_vocab(bpe_vocab({}, {}, "qwen2"));
    // 中 = E4 B8 AD: three byte symbols; a space maps to Ġ (id 32 here).
    EXPECT_EQ(t->encode(" \xE4\xB8\xAD", false, false), (std::vector<int32_t>{32, 0xE4, 0xB8, 0xAD}));
    EXPECT_EQ(t->token_to_piece(0xE4), "\xE4");
}

TEST(BpeTokenizer, RoundTripsArbitraryUtf8AndInvalidBytes) {
    const std::string G = "\xC4\xA0";
    for (const char* pre : {"llama-bpe", "qwen2", "gpt2"}) {
        auto t = Tokenizer::from_vocab(bpe_vocab({G + "t", "he", G + "the"}, {G + " t", "h e", G + "t he"}, pre));
        for (std::string s : std::vector<std::string>{"the the  the\n\n", "\xF0\x9F\x98\x80\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD emoji",
                              "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4",
                              "e\xCC\x81 a\xCC\x8A combining", "bad \xFF\xFE\xC3 \x80 bytes", std::string("nul\0x", 5),
                              "  lead and trail  ", "x1234567 y'all I'LL"}) {
            EXPECT_EQ(t->decode(t->encode(s, false, false)), s) << pre << ": " << s;
        }
    }
}

TEST(BpeTokenizer, SpecialAndUserDefinedTokens) {
    Vocab v = bpe_vocab({"<|im_end|>", "<tool>", "<|begin_of_text|>"}, {});
    v.types.assign(v.tokens.size(), TokenType::NORMAL);
    v.types[256] = TokenType::CONTROL;
    v.types[257] = TokenType::USER_DEFINED;
    v.types[258] = TokenType::CONTROL;
    v.bos_id = 258;
    v.eos_id = 256;
    v.add_bos = true;
    auto t = Tokenizer::from_vocab(v);
    EXPECT_EQ(t->encode("a<|im_end|>", true, true), (std::vector<int32_t>{258, 'a', 256}));
    const auto spelled = t->encode("<|im_end|>", false, false);
    EXPECT_EQ(spelled.size(), 10u);  // "<|", "im", "_end", "|>": all single byte symbols here
    EXPECT_EQ(t->decode(spelled), "<|im_end|>");
    EXPECT_EQ(t->encode("x<tool>", false, false), (std::vector<int32_t>{'x', 257}));
    EXPECT_EQ(t->token_to_piece(256), "");
    EXPECT_EQ(t->token_to_piece(256, true), "<|im_end|>");
    EXPECT_TRUE(t->is_eog(256));
    EXPECT_EQ(t->kind(), "gpt2");
}

TEST(BpeTokenizer, EndOfGenerationIncludesKnownTurnEnders) {
    Vocab v = bpe_vocab({"<|eot_id|>", "<|end_of_text|>"}, {});
    v.types.assign(v.tokens.size(), TokenType::NORMAL);
    v.types[256] = TokenType::CONTROL;
    v.types[257] = TokenType::CONTROL;
    v.eos_id = 257;
    auto t = Tokenizer::from_vocab(v);
    EXPECT_TRUE(t->is_eog(256));
    EXPECT_TRUE(t->is_eog(257));
    EXPECT_FALSE(t->is_eog('a'));
}

TEST(BpeTokenizer, MalformedMergeIsAnError) {
    Vocab v = bpe_vocab({}, {"a b", "nospace"});
    v.source = "q.gguf";
    try {
        Tokenizer::from_vocab(v);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "q.gguf: tokenizer.ggml.merges[1] = \"nospace\" is not a merge (allowed: \"left right\")");
    }
}

}  // namespace
}  // namespace duet::model

namespace duet::model {
namespace {

TEST(BpePreTokenizer, AliasesShareTheirFamilysPattern) {
    for (const char* n : {"llama3", "llama-v3", "dbrx", "smaug-bpe"})
        EXPECT_EQ(BpePreTokenizer::pattern_for(n), BpePreTokenizer::pattern_for("llama-bpe")) << n;
    for (const char* n : {"deepseek-r1-qwen", "stablelm2", "megrez"})
        EXPECT_EQ(BpePreTokenizer::pattern_for(n), BpePreTokenizer::pattern_for("qwen2")) << n;
    EXPECT_NE(BpePreTokenizer::pattern_for("qwen2"), BpePreTokenizer::pattern_for("llama-bpe"));
    EXPECT_TRUE(BpeTokenizer::is_llama3_pre("llama-v3"));
    EXPECT_FALSE(BpeTokenizer::is_llama3_pre("qwen2"));
}

}  // namespace
}  // namespace duet::model

namespace duet::model {
namespace {

std::string random_bytes(std::mt19937& g, bool utf8_heavy) {
    static const char* kPieces[] = {"a", " ", "\n", "'s", "7", "\xC3\xA9", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80",
                                    "\xCC\x81", "\xE2\x96\x81", "<|im_end|>", "\t"};
    std::string s;
    const int n = static_cast<int>(g() % 40);
    for (int i = 0; i < n; ++i) {
        if (utf8_heavy && g() % 2) s += kPieces[g() % 12];
        else s += static_cast<char>(g() & 0xFF);
    }
    return s;
}

TEST(BpeTokenizer, RandomBytesRoundTrip) {
    const std::string G = "\xC4\xA0";
    std::vector<std::string> extra = {G + "a", "aa", "<|im_end|>"};
    Vocab v = bpe_vocab(extra, {G + " a", "a a"}, "qwen2");
    v.types.assign(v.tokens.size(), TokenType::NORMAL);
    v.types[258] = TokenType::CONTROL;
    auto t = Tokenizer::from_vocab(v);
    std::mt19937 g(5);
    for (int i = 0; i < 2000; ++i) {
        const std::string s = random_bytes(g, i % 2 == 0);
        EXPECT_EQ(t->decode(t->encode(s, false, false)), s);
    }
}

}  // namespace
}  // namespace duet::model
