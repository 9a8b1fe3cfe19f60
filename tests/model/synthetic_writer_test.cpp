// Synthetic models: every tiny preset x every dtype reads back with the right hparams,
// tensors, values and a consistent tokenizer; same seed gives the same bytes.
#include "model/synthetic_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <unordered_set>

#include "core/error.h"
#include "core/quant.h"
#include "format/gguf.h"
#include "model/arch_presets.h"
#include "model/synthetic_vocab.h"

namespace duet::model {
namespace {

namespace fs = std::filesystem;
using format::GgufFile;

class SyntheticTest : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("duet_synth_" + std::to_string(::getpid()) + "_" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string gen(const std::string& preset, const std::string& dtype, uint64_t seed, int threads = 1,
                    int64_t layers = 0) {
        const std::string p =
            (dir_ / (preset + "_" + dtype + "_" + std::to_string(seed) + "_" + std::to_string(threads) + ".gguf"))
                .string();
        SyntheticOptions o;
        o.dtype = dtype;
        o.seed = seed;
        o.n_threads = threads;
        o.n_layer = layers;
        write_synthetic_model(p, arch_preset(preset), o);
        return p;
    }
    static std::vector<char> slurp(const std::string& p) {
        std::ifstream in(p, std::ios::binary);
        return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    }
    fs::path dir_;
};

const char* const kTiny[] = {"tiny-llama", "tiny-llama3", "tiny-mistral", "tiny-qwen2", "small-llama"};
const char* const kDtypes[] = {"f32", "f16", "bf16", "q8_0", "q4_0", "q5_0", "q4_k", "q6_k"};

// Largest |error| a dtype may introduce on a row whose largest magnitude is amax.
float tolerance(DType t, float amax) {
    switch (t) {
        case DType::F32:
            return 0.0f;
        case DType::F16:
            return amax * 1e-3f;
        case DType::BF16:
            return amax * 8e-3f;
        case DType::Q8_0:
            return amax / 127.0f * 0.51f + amax * 1e-3f;
        case DType::Q6_K:
            return amax / 31.0f * 1.1f;
        case DType::Q4_0:
            return amax / 8.0f * 1.1f;
        case DType::Q5_0:  // step amax/16, one step at the clipped side
            return amax / 16.0f * 1.1f;
        case DType::Q4_K:
            return amax / 7.0f * 1.2f;
        default:
            return amax;
    }
}

TEST_F(SyntheticTest, EveryTinyPresetAndDtypeReadsBack) {
    for (const char* preset : kTiny) {
        for (const char* dtype : kDtypes) {
            SCOPED_TRACE(std::string(preset) + " " + dtype);
            const std::string path = gen(preset, dtype, 3);
            GgufFile f = GgufFile::open(path);
            const ArchPreset& p = arch_preset(preset);
            EXPECT_EQ(hparams_from_gguf(f), p.hparams);
            const auto plan = synthetic_tensor_plan(p.hparams, dtype);
            ASSERT_EQ(f.tensors().size(), plan.size());
            std::vector<float> want, got;
            for (const SyntheticTensor& t : plan) {
                const format::GgufTensorInfo& ti = f.tensor(t.name);
                EXPECT_EQ(ti.dtype, t.dtype) << t.name;
                EXPECT_EQ(ti.shape, t.shape) << t.name;
                if (t.shape.size() == 1) {
                    EXPECT_EQ(ti.dtype, DType::F32) << t.name;
                }
                // Rows 0 and last decode to the generator's values within the dtype's error.
                const int64_t n = t.shape[0], rows = ti.n_elements() / n;
                want.resize(size_t(n));
                got.resize(size_t(n));
                for (int64_t r : {int64_t(0), rows - 1}) {
                    synthetic_row(t, p.hparams, 3, r, want.data());
                    quant::dequantize_row(ti.data + size_t(r) * row_bytes(ti.dtype, n), ti.dtype, got.data(), n);
                    float amax = 0;
                    for (float v : want) amax = std::max(amax, std::fabs(v));
                    const float tol = tolerance(ti.dtype, amax);
                    for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(got[size_t(i)], want[size_t(i)], tol) << t.name;
                }
            }
            fs::remove(path);
        }
    }
}

TEST_F(SyntheticTest, SameSeedSameBytesAnyThreadCount) {
    const auto a = slurp(gen("tiny-qwen2", "q4_0", 42, 1));
    const auto b = slurp(gen("tiny-qwen2", "q4_0", 42, 2));
    const auto c = slurp(gen("tiny-qwen2", "q4_0", 43, 2));
    ASSERT_FALSE(a.empty());
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
    EXPECT_EQ(a.size(), c.size());
}

TEST_F(SyntheticTest, WeightsHaveTheDocumentedScale) {
    const Hparams& hp = arch_preset("small-llama").hparams;
    const auto plan = synthetic_tensor_plan(hp, "f32");
    std::vector<float> row(size_t(hp.n_embd));
    for (const SyntheticTensor& t : plan) {
        if (t.name != "blk.0.attn_q.weight" && t.name != "blk.0.attn_norm.weight") continue;
        double s = 0, s2 = 0;
        const int64_t rows = 64;
        for (int64_t r = 0; r < rows; ++r) {
            synthetic_row(t, hp, 9, r, row.data());
            for (float v : row) {
                s += v;
                s2 += double(v) * v;
            }
        }
        const double n = double(rows * hp.n_embd), mean = s / n, sd = std::sqrt(s2 / n - mean * mean);
        if (t.kind == SyntheticTensor::Kind::WEIGHT) {
            EXPECT_NEAR(mean, 0.0, 0.01);
            EXPECT_NEAR(sd, 1.0 / std::sqrt(double(hp.n_embd)), 0.005);
        } else {
            EXPECT_NEAR(mean, 1.0, 0.01);
            EXPECT_NEAR(sd, 0.1 / std::sqrt(3.0), 0.005);  // 1 + 0.1 U(-1, 1)
        }
    }
}

TEST_F(SyntheticTest, Llama31RopeFreqs) {
    GgufFile f = GgufFile::open(gen("tiny-llama3", "f16", 1));
    const auto& t = f.tensor("rope_freqs.weight");
    ASSERT_EQ(t.shape, (std::vector<int64_t>{16}));
    const float* v = reinterpret_cast<const float*>(t.data);
    // Independent: wavelength 2 pi base^(2i/32) vs Llama-3.1's 2048 / 8192 thresholds.
    for (int i = 0; i < 16; ++i) {
        const double wavelen = 2 * M_PI * std::pow(500000.0, 2.0 * i / 32.0);
        if (wavelen < 2048)
            EXPECT_EQ(v[i], 1.0f) << i;
        else if (wavelen > 8192)
            EXPECT_EQ(v[i], 8.0f) << i;
        else
            EXPECT_TRUE(v[i] > 1.0f && v[i] < 8.0f) << i;
    }
    EXPECT_EQ(v[0], 1.0f);
    EXPECT_EQ(v[15], 8.0f);
}

TEST_F(SyntheticTest, Q4kIsAQ4KMStyleMixAndTinyRowsFallBack) {
    GgufFile f = GgufFile::open(gen("small-llama", "q4_k", 1));
    EXPECT_EQ(f.tensor("blk.0.attn_q.weight").dtype, DType::Q4_K);
    EXPECT_EQ(f.tensor("blk.0.attn_v.weight").dtype, DType::Q4_K);
    EXPECT_EQ(f.tensor("blk.1.attn_v.weight").dtype, DType::Q6_K);  // more-bits layer (last 1/8)
    EXPECT_EQ(f.tensor("blk.1.ffn_down.weight").dtype, DType::Q6_K);
    EXPECT_EQ(f.tensor("output.weight").dtype, DType::Q6_K);
    EXPECT_EQ(f.tensor("token_embd.weight").dtype, DType::Q4_K);
    EXPECT_EQ(f.get_int("general.file_type"), 15);              // LLAMA_FTYPE_MOSTLY_Q4_K_M
    GgufFile t = GgufFile::open(gen("tiny-llama", "q4_k", 1));  // rows of 64: no K-quant fits
    EXPECT_EQ(t.tensor("blk.0.attn_q.weight").dtype, DType::Q8_0);
    EXPECT_EQ(t.tensor("blk.0.ffn_down.weight").dtype, DType::Q8_0);  // 192 % 256 != 0
}

TEST_F(SyntheticTest, Q5_0FileTypeAndMatrices) {
    GgufFile f = GgufFile::open(gen("tiny-qwen2", "q5_0", 6));
    EXPECT_EQ(f.get_int("general.file_type"), 8);  // LLAMA_FTYPE_MOSTLY_Q5_0
    EXPECT_EQ(f.tensor("blk.0.ffn_down.weight").dtype, DType::Q5_0);
    EXPECT_EQ(f.tensor("token_embd.weight").dtype, DType::Q5_0);
}

TEST_F(SyntheticTest, MetadataAndLayerOverride) {
    GgufFile f = GgufFile::open(gen("tiny-mistral", "q4_0", 5, 0, 3));
    EXPECT_EQ(f.get_int("llama.block_count"), 3);
    EXPECT_EQ(hparams_from_gguf(f).n_layer, 3);
    EXPECT_NE(f.find_tensor("blk.2.ffn_down.weight"), nullptr);
    EXPECT_EQ(f.get_string("general.name"), "duet synthetic tiny-mistral");
    EXPECT_EQ(f.get_int("duet.synthetic.seed"), 5);
    EXPECT_EQ(f.get_int("general.quantization_version"), 2);
    EXPECT_EQ(f.get_int("general.file_type"), 2);  // LLAMA_FTYPE_MOSTLY_Q4_0
    // Real shapes, planned without writing 13 GB: llama.cpp's names and ggml-order shapes.
    const auto plan = synthetic_tensor_plan(arch_preset("llama2-7b").hparams, "f16");
    EXPECT_EQ(plan.size(), 2u + 32u * 9u + 1u);
    auto find = [&](const std::string& name) {
        for (const auto& t : plan)
            if (t.name == name) return t;
        ADD_FAILURE() << name;
        return plan[0];
    };
    EXPECT_EQ(find("blk.31.ffn_gate.weight").shape, (std::vector<int64_t>{4096, 11008}));
    EXPECT_EQ(find("blk.0.ffn_down.weight").shape, (std::vector<int64_t>{11008, 4096}));
    EXPECT_EQ(find("token_embd.weight").shape, (std::vector<int64_t>{4096, 32000}));
    EXPECT_EQ(find("output.weight").dtype, DType::F16);
    const auto qplan = synthetic_tensor_plan(arch_preset("qwen2.5-0.5b").hparams, "q8_0");
    EXPECT_EQ(qplan.size(), 1u + 24u * 12u + 1u);  // tied: no output.weight
    int64_t n = 0;
    for (const auto& t : qplan) {
        int64_t e = 1;
        for (int64_t d : t.shape) e *= d;
        n += e;
    }
    EXPECT_EQ(n, 494032768);  // Qwen2.5-0.5B's published parameter count
    try {
        gen("tiny-llama", "q5_k", 1);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "unknown --dtype 'q5_k' (allowed: f32, f16, bf16, q8_0, q4_0, q5_0, q4_k, q6_k)");
    }
}

void check_vocab_common(const GgufFile& f, const ArchPreset& p) {
    const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
    const auto types = f.get_int_array("tokenizer.ggml.token_type");
    ASSERT_EQ(int64_t(tokens.size()), p.hparams.n_vocab);
    ASSERT_EQ(types.size(), tokens.size());
    EXPECT_EQ(std::set<std::string>(tokens.begin(), tokens.end()).size(), tokens.size()) << "duplicate tokens";
    EXPECT_EQ(f.get_string("tokenizer.chat_template"), chat_template_text(p.chat_template));
    const int64_t bos = f.get_int("tokenizer.ggml.bos_token_id"), eos = f.get_int("tokenizer.ggml.eos_token_id");
    EXPECT_EQ(types[size_t(bos)], int32_t(TokenType::CONTROL));
    EXPECT_EQ(types[size_t(eos)], int32_t(TokenType::CONTROL));
}

TEST_F(SyntheticTest, SpmVocabulary) {
    for (const char* name : {"tiny-llama", "tiny-mistral"}) {
        GgufFile f = GgufFile::open(gen(name, "f32", 1));
        const ArchPreset& p = arch_preset(name);
        check_vocab_common(f, p);
        EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "llama");
        const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
        const auto types = f.get_int_array("tokenizer.ggml.token_type");
        const auto scores = f.get_float_array("tokenizer.ggml.scores");
        EXPECT_EQ(tokens[0], "<unk>");
        EXPECT_EQ(tokens[1], "<s>");
        EXPECT_EQ(tokens[2], "</s>");
        EXPECT_EQ(f.get_int("tokenizer.ggml.bos_token_id"), 1);
        EXPECT_EQ(f.get_int("tokenizer.ggml.eos_token_id"), 2);
        EXPECT_TRUE(f.get_bool("tokenizer.ggml.add_bos_token"));
        for (int b = 0; b < 256; ++b) {
            char want[8];
            std::snprintf(want, sizeof(want), "<0x%02X>", b);
            EXPECT_EQ(tokens[size_t(3 + b)], want);
            EXPECT_EQ(types[size_t(3 + b)], int32_t(TokenType::BYTE));
        }
        const std::unordered_set<std::string> vocab(tokens.begin(), tokens.end());
        for (const char* w : {"\xe2\x96\x81"
                              "the",
                              "\xe2\x96\x81"
                              "a",
                              "\xe2\x96\x81"
                              "and",
                              "e", "\xe2\x96\x81"})
            EXPECT_TRUE(vocab.count(w)) << w;
        // Scores strictly decrease over the normal pieces (merge priority), and every
        // multi-character piece can be built from two shorter pieces (SPM merges bigrams).
        for (size_t i = 260; i < tokens.size(); ++i) EXPECT_LT(scores[i], scores[i - 1]);
        for (size_t i = 259; i < tokens.size(); ++i) {
            const std::string& t = tokens[i];
            if (t.size() <= 3) continue;
            bool split = false;
            for (size_t k = 1; k < t.size() && !split; ++k)
                split = vocab.count(t.substr(0, k)) && vocab.count(t.substr(k));
            EXPECT_TRUE(split) << t;
        }
    }
}

TEST_F(SyntheticTest, BpeVocabulary) {
    for (const char* name : {"tiny-llama3", "tiny-qwen2"}) {
        GgufFile f = GgufFile::open(gen(name, "f32", 1));
        const ArchPreset& p = arch_preset(name);
        check_vocab_common(f, p);
        EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "gpt2");
        EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), p.tokenizer_pre);
        const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
        const auto types = f.get_int_array("tokenizer.ggml.token_type");
        EXPECT_EQ(tokens[0], "!");
        EXPECT_EQ(tokens[93], "~");
        EXPECT_EQ(tokens[94], "\xc2\xa1");        // U+00A1
        EXPECT_EQ(tokens[188], "\xc4\x80");       // byte 0 -> U+0100
        EXPECT_EQ(tokens[188 + 32], "\xc4\xa0");  // space -> U+0120 'Ġ'
        EXPECT_EQ(gpt2_byte_symbol(' '), "\xc4\xa0");
        const std::unordered_set<std::string> vocab(tokens.begin(), tokens.end());
        for (const auto& m : f.get_string_array("tokenizer.ggml.merges")) {
            const size_t sp = m.find(' ');
            ASSERT_NE(sp, std::string::npos) << m;
            const std::string l = m.substr(0, sp), r = m.substr(sp + 1);
            EXPECT_TRUE(vocab.count(l) && vocab.count(r) && vocab.count(l + r)) << m;
        }
        EXPECT_TRUE(vocab.count("\xc4\xa0the"));  // "Ġthe"
        std::vector<std::string> specials;
        for (size_t i = 0; i < tokens.size(); ++i)
            if (types[i] == int32_t(TokenType::CONTROL)) specials.push_back(tokens[i]);
        if (p.tokenizer_pre == "qwen2") {
            EXPECT_EQ(specials, (std::vector<std::string>{"<|endoftext|>", "<|im_start|>", "<|im_end|>"}));
            EXPECT_EQ(tokens[size_t(f.get_int("tokenizer.ggml.eos_token_id"))], "<|im_end|>");
            EXPECT_FALSE(f.get_bool("tokenizer.ggml.add_bos_token"));
        } else {
            EXPECT_EQ(specials, (std::vector<std::string>{"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                                                          "<|end_header_id|>", "<|eot_id|>"}));
            EXPECT_EQ(tokens[size_t(f.get_int("tokenizer.ggml.bos_token_id"))], "<|begin_of_text|>");
            EXPECT_EQ(tokens[size_t(f.get_int("tokenizer.ggml.eos_token_id"))], "<|eot_id|>");
            EXPECT_TRUE(f.get_bool("tokenizer.ggml.add_bos_token"));
        }
    }
}

TEST_F(SyntheticTest, ChatTemplatesAreTheFamiliesOwn) {
    EXPECT_NE(chat_template_text("llama-2").find("<<SYS>>"), std::string::npos);
    EXPECT_NE(chat_template_text("llama-3").find("<|start_header_id|>"), std::string::npos);
    EXPECT_NE(chat_template_text("chatml").find("<|im_start|>"), std::string::npos);
    EXPECT_NE(chat_template_text("mistral").find("[INST]"), std::string::npos);
    EXPECT_EQ(chat_template_text("mistral").find("<<SYS>>"), std::string::npos);
    try {
        chat_template_text("vicuna");
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "unknown chat template family 'vicuna' (known: chatml, llama-2, llama-3, mistral)");
    }
}

}  // namespace
}  // namespace duet::model

namespace duet::model {
namespace {

TEST(SyntheticVocab, EveryPresetHasExactlyNVocabDistinctTokens) {
    for (const ArchPreset& p : arch_presets()) {
        SCOPED_TRACE(p.name);
        const SyntheticVocab v = build_synthetic_vocab(p);
        ASSERT_EQ(int64_t(v.tokens.size()), p.hparams.n_vocab);
        ASSERT_EQ(v.token_types.size(), v.tokens.size());
        EXPECT_EQ(std::unordered_set<std::string>(v.tokens.begin(), v.tokens.end()).size(), v.tokens.size());
        EXPECT_EQ(v.tokens[size_t(v.bos_id)].front(), '<');
        EXPECT_EQ(v.token_types[size_t(v.eos_id)], int32_t(TokenType::CONTROL));
        if (p.tokenizer == TokenizerKind::BPE) {
            EXPECT_FALSE(v.merges.empty());
        } else {
            EXPECT_EQ(v.scores.size(), v.tokens.size());
        }
    }
}

}  // namespace
}  // namespace duet::model
