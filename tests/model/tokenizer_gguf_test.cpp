// Tokenizers read from real GGUF files: llama.cpp's public SentencePiece test vectors for the
// Llama-2 vocabulary, the full 32000-token vocabulary of llama-2-tiny-random.gguf and the
// 512-token stories260K.gguf vocabulary. Skipped when the shared model folder is absent.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>

#include <unistd.h>

#include "core/error.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "model/tokenizer/bpe_tokenizer.h"
#include "model/tokenizer/tokenizer.h"

namespace duet::model {
namespace {

std::string shared_model(const std::string& name) { return std::string(DUET_SHARED_DIR) + "/models/" + name; }

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

struct Case {
    std::string text;
    std::vector<int32_t> ids;
};

// .inp: every case followed by "\n__ggml_vocab_test__\n"; .out: one line of ids per case.
std::vector<Case> load_cases(const std::string& vocab_path) {
    const std::string inp = slurp(vocab_path + ".inp");
    const std::string out = slurp(vocab_path + ".out");
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<Case> cases;
    for (size_t pos = 0, next; (next = inp.find(sep, pos)) != std::string::npos; pos = next + sep.size())
        cases.push_back({inp.substr(pos, next - pos), {}});
    std::istringstream lines(out);
    std::string line;
    for (size_t i = 0; std::getline(lines, line); ++i) {
        if (i >= cases.size()) break;
        std::istringstream ids(line);
        for (int32_t id; ids >> id;) cases[i].ids.push_back(id);
    }
    return cases;
}

void expect_vectors(const Tokenizer& tok, const std::vector<Case>& cases) {
    for (const Case& c : cases) {
        EXPECT_EQ(tok.encode(c.text, false, false), c.ids) << "text: \"" << c.text << "\"";
        EXPECT_EQ(tok.decode(c.ids), c.text) << "decode of the ids of \"" << c.text << "\"";
    }
}

TEST(TokenizerGguf, LlamaSpmPublicTestVectors) {
    const std::string path = shared_model("ggml-vocab-llama-spm.gguf");
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " absent";
    const auto cases = load_cases(path);
    ASSERT_EQ(cases.size(), 46u);
    auto file = format::GgufFile::open(path);
    auto tok = Tokenizer::from_gguf(file);
    EXPECT_EQ(tok->kind(), "llama");
    EXPECT_EQ(tok->n_vocab(), 32000);
    expect_vectors(*tok, cases);
}

TEST(TokenizerGguf, Llama2TinyRandomHasTheFullVocabulary) {
    const std::string path = shared_model("llama-2-tiny-random.gguf");
    const std::string vectors = shared_model("ggml-vocab-llama-spm.gguf");
    if (!std::filesystem::exists(path) || !std::filesystem::exists(vectors)) GTEST_SKIP() << path << " absent";
    auto file = format::GgufFile::open(path);
    auto tok = Tokenizer::from_gguf(file);
    EXPECT_EQ(tok->n_vocab(), 32000);
    EXPECT_EQ(tok->bos(), 1);
    EXPECT_EQ(tok->eos(), 2);
    EXPECT_TRUE(tok->add_bos_default());
    EXPECT_TRUE(tok->is_eog(2));
    EXPECT_EQ(tok->token_to_piece(1, true), "<s>");
    EXPECT_EQ(tok->token_to_piece(3 + 0x41), "A");      // <0x41>
    EXPECT_EQ(tok->token_to_piece(15043), " Hello");    // ▁Hello
    expect_vectors(*tok, load_cases(vectors));
    // With parse_special the control tokens are recognised in text.
    EXPECT_EQ(tok->encode("<s>Hello world</s>", false, true), (std::vector<int32_t>{1, 15043, 3186, 2}));
    EXPECT_EQ(tok->encode("Hello world", true, false), (std::vector<int32_t>{1, 15043, 3186}));
}

TEST(TokenizerGguf, Llama2VocabularyRoundTripsRandomBytes) {
    const std::string path = shared_model("ggml-vocab-llama-spm.gguf");
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " absent";
    auto file = format::GgufFile::open(path);
    auto tok = Tokenizer::from_gguf(file);
    static const char* kPieces[] = {"a", " ", "\n", "the", "7", "\xC3\xA9", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80",
                                    "\xCC\x81", "</s>", "\t", "  "};
    std::mt19937 g(11);
    for (int i = 0; i < 2000; ++i) {
        std::string s;
        const int n = static_cast<int>(g() % 40);
        for (int k = 0; k < n; ++k) {
            if (i % 2 == 0 && g() % 2) s += kPieces[g() % 12];
            else s += static_cast<char>(g() & 0xFF);
        }
        const auto ids = tok->encode(s, true, false);
        for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < 32000);
        // Not for a literal U+2581 in the input, which SentencePiece itself reads as a space.
        if (s.find("\xE2\x96\x81") == std::string::npos) {
            EXPECT_EQ(tok->decode(ids), s);
        }
    }
}

TEST(TokenizerGguf, Llama2StreamingHoldsByteFallbackCharacters) {
    const std::string path = shared_model("ggml-vocab-llama-spm.gguf");
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " absent";
    auto file = format::GgufFile::open(path);
    auto tok = Tokenizer::from_gguf(file);
    // 😀 and 𝄞 are not in the vocabulary: each arrives as four <0xXX> byte tokens.
    const std::string text = "Hi \xF0\x9F\x98\x80 and \xF0\x9D\x84\x9E!";
    const auto ids = tok->encode(text, true, false);
    int n_byte_tokens = 0;
    for (int32_t id : ids) n_byte_tokens += id >= 3 && id < 259;
    EXPECT_EQ(n_byte_tokens, 8);
    StreamDecoder sd(*tok);
    std::string all;
    for (int32_t id : ids) {
        const std::string c = sd.feed(id);
        EXPECT_EQ(utf8_complete_prefix(c), c.size());
        if (!c.empty()) {  // never the inside of a character
            const auto last = static_cast<uint8_t>(c.back());
            EXPECT_TRUE(last < 0x80 || (last & 0xC0) == 0x80);
        }
        all += c;
    }
    all += sd.flush();
    EXPECT_EQ(all, " " + text);  // streaming keeps the SPM prefix space
}

TEST(TokenizerGguf, Stories260KVocabulary) {
    const std::string path = shared_model("stories260K.gguf");
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " absent";
    auto file = format::GgufFile::open(path);
    auto tok = Tokenizer::from_gguf(file);
    EXPECT_EQ(tok->kind(), "llama");
    EXPECT_EQ(tok->n_vocab(), 512);
    EXPECT_EQ(tok->bos(), 1);
    EXPECT_EQ(tok->eos(), 2);
    for (std::string s : {"Once upon a time, there was a little girl named Lily.", "She said: \"Wow!\"\nThe end.",
                          "caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80"}) {
        const auto ids = tok->encode(s, true, false);
        ASSERT_FALSE(ids.empty());
        EXPECT_EQ(ids[0], 1);
        for (int32_t id : ids) {
            EXPECT_GE(id, 0);
            EXPECT_LT(id, 512);
        }
        EXPECT_EQ(tok->decode(ids), s);
    }
    // A 512-token vocabulary spells non-ASCII through byte tokens.
    const auto cjk = tok->encode("\xE4\xB8\xAD", false, false);
    std::string bytes;
    for (int32_t id : cjk) bytes += tok->token_to_piece(id);
    EXPECT_EQ(bytes, " \xE4\xB8\xAD");
}

// --- vocabularies written with the GGUF writer (no shared files needed) ---

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("duet_tok_" + std::to_string(::getpid()) + "_" + name)).string();
}

// A byte-level BPE vocabulary: the 256 byte symbols, "Ġw", "or", "Ġwor", "ld", "Ġworld", then
// <|begin_of_text|> (control) and <|eot_id|> (control).
void write_bpe(const std::string& path, const std::function<void(format::GgufWriter&)>& tweak = nullptr) {
    const std::string G = "\xC4\xA0";
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; ++b) tokens.push_back(BpeTokenizer::byte_symbol(static_cast<uint8_t>(b)));
    for (const std::string& t : {G + "w", std::string("or"), G + "wor", std::string("ld"), G + "world",
                                 std::string("<|begin_of_text|>"), std::string("<|eot_id|>")})
        tokens.push_back(t);
    std::vector<int32_t> types(tokens.size(), 1);
    types[261] = types[262] = 3;
    format::GgufWriter w(path);
    w.set_string("general.architecture", "llama");
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", "llama-bpe");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_string_array("tokenizer.ggml.merges", {G + " w", "o r", G + "w or", "l d", G + "wor ld"});
    w.set_u32("tokenizer.ggml.bos_token_id", 261);
    w.set_u32("tokenizer.ggml.eos_token_id", 262);
    w.set_u32("tokenizer.ggml.padding_token_id", 4294967295u);
    if (tweak) tweak(w);
    w.write();
}

TEST(TokenizerGguf, BytePairVocabularyFromAWrittenFile) {
    const std::string path = temp_path("bpe.gguf");
    write_bpe(path);
    auto file = format::GgufFile::open(path);
    auto tok = Tokenizer::from_gguf(file);
    std::filesystem::remove(path);
    EXPECT_EQ(tok->kind(), "gpt2");
    EXPECT_EQ(tok->n_vocab(), 263);
    EXPECT_EQ(tok->bos(), 261);
    EXPECT_EQ(tok->eos(), 262);
    EXPECT_EQ(tok->vocab().pad_id, -1);
    EXPECT_TRUE(tok->add_bos_default());  // llama-bpe's default
    EXPECT_TRUE(tok->is_eog(262));
    EXPECT_EQ(tok->encode("a world<|eot_id|>", true, true), (std::vector<int32_t>{261, 'a', 260, 262}));
    EXPECT_EQ(tok->decode(tok->encode("a world\xE2\x82\xAC", true, false)), "a world\xE2\x82\xAC");
}

std::string load_error(const std::function<void(format::GgufWriter&)>& tweak) {
    const std::string path = temp_path("bad.gguf");
    write_bpe(path, tweak);
    std::string msg = "(no error)";
    try {
        auto file = format::GgufFile::open(path);
        Tokenizer::from_gguf(file);
    } catch (const Error& e) {
        msg = e.what();
        const size_t at = msg.find(path);
        if (at != std::string::npos) msg.replace(at, path.size(), "F");
    }
    std::filesystem::remove(path);
    return msg;
}

TEST(TokenizerGguf, BadMetadataNamesFileKeyValueAndAllowed) {
    EXPECT_EQ(load_error([](format::GgufWriter& w) { w.set_string("tokenizer.ggml.model", "bert"); }),
              "F: tokenizer.ggml.model = \"bert\" is not supported (allowed: llama, gpt2)");
    EXPECT_EQ(load_error([](format::GgufWriter& w) { w.set_u32("tokenizer.ggml.eos_token_id", 263); }),
              "F: tokenizer.ggml.eos_token_id = 263 is out of range (allowed: -1 or 4294967295 for none, or 0 to 262)");
    EXPECT_EQ(load_error([](format::GgufWriter& w) {
                  std::vector<int32_t> types(263, 1);
                  types[7] = 9;
                  w.set_i32_array("tokenizer.ggml.token_type", types);
              }),
              "F: tokenizer.ggml.token_type[7] = 9 is not a token type (allowed: 0 to 6)");
    EXPECT_EQ(load_error([](format::GgufWriter& w) { w.set_f32_array("tokenizer.ggml.scores", {1.0f, 2.0f}); }),
              "F: tokenizer.ggml.scores has 2 entries but tokenizer.ggml.tokens has 263 (must be equal)");
    const std::string no_merges = load_error([](format::GgufWriter& w) { w.remove("tokenizer.ggml.merges"); });
    EXPECT_NE(no_merges.find("tokenizer.ggml.merges"), std::string::npos) << no_merges;
    EXPECT_EQ(no_merges.rfind("F: ", 0), 0u) << no_merges;
}

}  // namespace
}  // namespace duet::model
