// StreamDecoder never prints part of a UTF-8 character, and prints everything else at once.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "model/tokenizer/tokenizer.h"

namespace duet::model {
namespace {

// SPM vocabulary with only byte tokens (ids 3 + byte) and "a": every non-ASCII character
// arrives one byte token at a time.
std::unique_ptr<Tokenizer> bytes_only() {
    Vocab v;
    v.kind = TokenizerKind::SPM;
    v.tokens = {"<unk>", "<s>", "</s>"};
    v.types = {TokenType::UNKNOWN, TokenType::CONTROL, TokenType::CONTROL};
    for (int b = 0; b < 256; ++b) {
        v.tokens.push_back(fmt::format("<0x{:02X}>", b));
        v.types.push_back(TokenType::BYTE);
    }
    v.tokens.push_back("a");
    v.types.push_back(TokenType::NORMAL);
    v.unk_id = 0, v.bos_id = 1, v.eos_id = 2;
    return Tokenizer::from_vocab(v);
}

bool valid_utf8(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<uint8_t>(s[i]);
        size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
        if (n == 0 || i + n > s.size()) return false;
        for (size_t k = 1; k < n; ++k)
            if ((static_cast<uint8_t>(s[i + k]) & 0xC0) != 0x80) return false;
        i += n;
    }
    return true;
}

TEST(StreamDecoder, NeverSplitsMultiByteCharacters) {
    auto t = bytes_only();
    // 2-byte é, 3-byte 中 and €, 4-byte 😀, mixed with ASCII.
    const std::string text = "a\xC3\xA9" "a\xE4\xB8\xAD\xE2\x82\xAC\xF0\x9F\x98\x80" "a";
    const std::vector<int32_t> ids = t->encode(text, true, false);
    ASSERT_GT(ids.size(), 12u);
    StreamDecoder sd(*t);
    std::string all;
    std::vector<std::string> chunks;
    for (int32_t id : ids) {
        std::string c = sd.feed(id);
        EXPECT_TRUE(valid_utf8(c)) << "chunk splits a character";
        all += c;
        if (!c.empty()) chunks.push_back(c);
    }
    all += sd.flush();
    EXPECT_EQ(all, text);
    // One chunk per character.
    EXPECT_EQ(chunks, (std::vector<std::string>{"a", "\xC3\xA9", "a", "\xE4\xB8\xAD", "\xE2\x82\xAC",
                                                 "\xF0\x9F\x98\x80", "a"}));
}

TEST(StreamDecoder, HoldsOnlyWhileACharacterCanStillComplete) {
    auto t = bytes_only();
    auto byte = [](uint8_t b) { return 3 + b; };
    StreamDecoder sd(*t);
    EXPECT_EQ(sd.feed(byte(0xF0)), "");
    EXPECT_EQ(sd.feed(byte(0x9F)), "");
    EXPECT_EQ(sd.feed(byte(0x98)), "");
    EXPECT_EQ(sd.feed(byte(0x80)), "\xF0\x9F\x98\x80");
    // A lead byte followed by ASCII can never complete: both go out at once.
    EXPECT_EQ(sd.feed(byte(0xC3)), "");
    EXPECT_EQ(sd.feed(byte('x')), "\xC3x");
    // Bytes that never start a character are passed through.
    EXPECT_EQ(sd.feed(byte(0xFF)), "\xFF");
    EXPECT_EQ(sd.feed(byte(0x80)), "\x80");
    // E0 must be followed by A0..BF: E0 80 is already invalid.
    EXPECT_EQ(sd.feed(byte(0xE0)), "");
    EXPECT_EQ(sd.feed(byte(0x80)), "\xE0\x80");
    // Control tokens print nothing; flush returns an unfinished tail.
    EXPECT_EQ(sd.feed(2), "");
    EXPECT_EQ(sd.feed(byte(0xE4)), "");
    EXPECT_EQ(sd.flush(), "\xE4");
    EXPECT_EQ(sd.flush(), "");
}

TEST(Utf8CompletePrefix, CutsBeforeAnIncompleteTail) {
    EXPECT_EQ(utf8_complete_prefix(""), 0u);
    EXPECT_EQ(utf8_complete_prefix("abc"), 3u);
    EXPECT_EQ(utf8_complete_prefix("ab\xC3"), 2u);
    EXPECT_EQ(utf8_complete_prefix("ab\xC3\xA9"), 4u);
    EXPECT_EQ(utf8_complete_prefix("a\xE4\xB8"), 1u);
    EXPECT_EQ(utf8_complete_prefix("a\xF0\x9F\x98"), 1u);
    EXPECT_EQ(utf8_complete_prefix("a\xF0\x9F\x98\x80"), 5u);
    EXPECT_EQ(utf8_complete_prefix("a\xED\xA0"), 3u);  // a surrogate can never complete
    EXPECT_EQ(utf8_complete_prefix("a\xF5"), 2u);       // F5 never starts a character
    EXPECT_EQ(utf8_complete_prefix("\x80\x80\x80\x80"), 4u);
}

}  // namespace
}  // namespace duet::model

namespace duet::model {
namespace {

TEST(StreamDecoder, ByteLevelBpeEmojiArrivesWhole) {
    // A byte-level vocabulary with no merges: every byte of 😀 and 中 is its own token.
    Vocab v;
    v.kind = TokenizerKind::BPE;
    v.pre = "llama-bpe";
    for (int b = 0; b < 256; ++b) {
        // GPT-2 stand-ins: printable bytes map to themselves, the rest to U+0100 + n.
        v.tokens.push_back({});
    }
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
        const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        const uint32_t cp = printable ? b : 256 + extra++;
        std::string s;
        if (cp < 0x80) s += static_cast<char>(cp);
        else s += static_cast<char>(0xC0 | (cp >> 6)), s += static_cast<char>(0x80 | (cp & 0x3F));
        v.tokens[b] = s;
    }
    auto t = Tokenizer::from_vocab(v);
    const std::string text = "x \xF0\x9F\x98\x80\xE4\xB8\xAD!";
    const auto ids = t->encode(text, false, false);
    EXPECT_EQ(ids.size(), text.size());
    StreamDecoder sd(*t);
    std::vector<std::string> chunks;
    for (int32_t id : ids)
        if (auto c = sd.feed(id); !c.empty()) chunks.push_back(c);
    EXPECT_EQ(sd.flush(), "");
    EXPECT_EQ(chunks, (std::vector<std::string>{"x", " ", "\xF0\x9F\x98\x80", "\xE4\xB8\xAD", "!"}));
}

}  // namespace
}  // namespace duet::model
