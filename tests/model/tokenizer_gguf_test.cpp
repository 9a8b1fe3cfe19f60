// Tokenizers read from real GGUF files: llama.cpp's public SentencePiece test vectors for the
// Llama-2 vocabulary, the full 32000-token vocabulary of llama-2-tiny-random.gguf and the
// 512-token stories260K.gguf vocabulary. Skipped when the shared model folder is absent.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "format/gguf.h"
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

}  // namespace
}  // namespace duet::model
