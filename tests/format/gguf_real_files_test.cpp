// The reader on real GGUF files of the ecosystem (../shared/models); skipped when absent.
#include <gtest/gtest.h>

#include <filesystem>

#include "format/gguf.h"

namespace duet::format {
namespace {

std::string shared_model(const char* name) { return std::string(DUET_SHARED_DIR) + "/models/" + name; }

TEST(GgufRealFiles, Stories260K) {
    const std::string path = shared_model("stories260K.gguf");
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not present";
    GgufFile f = GgufFile::open(path);
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.get_string("general.architecture"), "llama");
    EXPECT_EQ(f.get_int("llama.block_count"), 5);
    EXPECT_EQ(f.get_int("llama.embedding_length"), 64);
    EXPECT_EQ(f.get_int("llama.attention.head_count"), 8);
    EXPECT_EQ(f.get_int("llama.attention.head_count_kv"), 4);
    EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "llama");
    EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens").size(), 512u);
    EXPECT_EQ(f.get_float_array("tokenizer.ggml.scores").size(), 512u);
    EXPECT_EQ(f.get_int_array("tokenizer.ggml.token_type").size(), 512u);
    EXPECT_EQ(f.get_int("tokenizer.ggml.padding_token_id"), 4294967295LL);
    // 5 layers x 9 tensors + token_embd, output_norm, output
    EXPECT_EQ(f.tensors().size(), 48u);
    const GgufTensorInfo& emb = f.tensor("token_embd.weight");
    EXPECT_EQ(emb.dtype, DType::F32);
    EXPECT_EQ(emb.shape, (std::vector<int64_t>{64, 512}));
    const GgufTensorInfo& k = f.tensor("blk.0.attn_k.weight");
    EXPECT_EQ(k.shape, (std::vector<int64_t>{64, 32}));  // 4 kv heads of 8
    // Every tensor lies inside the file, in order, without overlap (checked by open too).
    uint64_t total = 0;
    for (const auto& t : f.tensors()) total += t.n_bytes;
    EXPECT_LE(f.data_offset() + total, f.file_bytes());
    // norm weights of a trained model are finite and not all zero
    const float* w = reinterpret_cast<const float*>(f.tensor("output_norm.weight").data);
    float sum = 0;
    for (int i = 0; i < 64; ++i) sum += std::abs(w[i]);
    EXPECT_GT(sum, 1.0f);
}

TEST(GgufRealFiles, Llama2TinyRandomF16) {
    const std::string path = shared_model("llama-2-tiny-random.gguf");
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not present";
    GgufFile f = GgufFile::open(path);
    EXPECT_EQ(f.get_int("llama.embedding_length"), 8);
    EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens").size(), 32000u);
    EXPECT_EQ(f.tensor("blk.0.attn_q.weight").dtype, DType::F16);
    EXPECT_EQ(f.tensor("blk.0.attn_norm.weight").dtype, DType::F32);
    EXPECT_EQ(f.tensor("output.weight").shape, (std::vector<int64_t>{8, 32000}));
}

TEST(GgufRealFiles, VocabOnlyFile) {
    const std::string path = shared_model("ggml-vocab-llama-spm.gguf");
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not present";
    GgufFile f = GgufFile::open(path);
    EXPECT_TRUE(f.tensors().empty());
    EXPECT_EQ(f.get_int("llama.vocab_size"), 32000);
    const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
    ASSERT_EQ(tokens.size(), 32000u);
    EXPECT_EQ(tokens[0], "<unk>");
    EXPECT_EQ(tokens[1], "<s>");
    EXPECT_EQ(tokens[3], "<0x00>");
    EXPECT_TRUE(f.get_bool("tokenizer.ggml.add_bos_token"));
}

}  // namespace
}  // namespace duet::format
