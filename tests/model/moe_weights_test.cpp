// Mixture-of-Experts files as llama.cpp writes them: gen-model's tiny-mixtral / tiny-qwen2moe /
// tiny-qwen3moe hold the tensor names, 3-D expert stacks and F32 routers of llama.cpp's loaders
// (src/models/llama.cpp, qwen2moe.cpp, qwen3moe.cpp), and bind_weights binds them per expert.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "core/error.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "model/arch_presets.h"
#include "model/synthetic_writer.h"
#include "model/weights.h"

using WR = duet::graph::WeightRole;
using namespace duet;
using namespace duet::model;

namespace {

std::string moe_path(const std::string& name) {
    const auto dir = std::filesystem::temp_directory_path() / ("duet_moe_weights_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    return (dir / name).string();
}

struct Cleanup {
    ~Cleanup() {
        std::error_code ec;
        std::filesystem::remove_all(std::filesystem::temp_directory_path() /
                                        ("duet_moe_weights_test_" + std::to_string(::getpid())),
                                    ec);
    }
} cleanup;

std::string write(const std::string& preset, const std::string& dtype) {
    const std::string path = moe_path(preset + "-" + dtype + ".gguf");
    SyntheticOptions o;
    o.dtype = dtype;
    o.seed = 5;
    o.n_threads = 2;
    write_synthetic_model(path, arch_preset(preset), o);
    return path;
}

const format::GgufTensorInfo& tensor(const format::GgufFile& f, const std::string& name) {
    const format::GgufTensorInfo* t = f.find_tensor(name);
    if (!t) throw std::runtime_error("no tensor " + name);
    return *t;
}

}  // namespace

TEST(MoeWeights, MixtralFileHasLlamaCppNamesShapesAndKeys) {
    const auto f = format::GgufFile::open(write("tiny-mixtral", "q8_0"));
    EXPECT_EQ(f.get_string("general.architecture"), "llama");
    EXPECT_EQ(f.get_int("llama.expert_count"), 4);
    EXPECT_EQ(f.get_int("llama.expert_used_count"), 2);
    // ggml order {cols, rows, n_expert}: experts n_ff (96) wide on n_embd (64)
    EXPECT_EQ(tensor(f, "blk.1.ffn_gate_exps.weight").shape, (std::vector<int64_t>{64, 96, 4}));
    EXPECT_EQ(tensor(f, "blk.1.ffn_up_exps.weight").shape, (std::vector<int64_t>{64, 96, 4}));
    EXPECT_EQ(tensor(f, "blk.1.ffn_down_exps.weight").shape, (std::vector<int64_t>{96, 64, 4}));
    EXPECT_EQ(tensor(f, "blk.1.ffn_down_exps.weight").dtype, DType::Q8_0);
    EXPECT_EQ(tensor(f, "blk.0.ffn_gate_inp.weight").shape, (std::vector<int64_t>{64, 4}));
    EXPECT_EQ(tensor(f, "blk.0.ffn_gate_inp.weight").dtype, DType::F32);  // routers stay F32, as llama.cpp's tools
    EXPECT_EQ(f.find_tensor("blk.0.ffn_gate.weight"), nullptr);          // no dense FFN in an expert layer
    EXPECT_EQ(f.find_tensor("blk.0.ffn_gate_shexp.weight"), nullptr);
}

TEST(MoeWeights, Qwen2MoeHasTheGatedSharedExpert) {
    const auto f = format::GgufFile::open(write("tiny-qwen2moe", "f16"));
    EXPECT_EQ(f.get_int("qwen2moe.expert_feed_forward_length"), 64);
    EXPECT_EQ(f.get_int("qwen2moe.expert_shared_feed_forward_length"), 128);
    EXPECT_EQ(tensor(f, "blk.0.ffn_gate_exps.weight").shape, (std::vector<int64_t>{64, 64, 4}));
    EXPECT_EQ(tensor(f, "blk.0.ffn_gate_shexp.weight").shape, (std::vector<int64_t>{64, 128}));
    EXPECT_EQ(tensor(f, "blk.0.ffn_down_shexp.weight").shape, (std::vector<int64_t>{128, 64}));
    const auto& g = tensor(f, "blk.0.ffn_gate_inp_shexp.weight");
    EXPECT_EQ(g.shape, (std::vector<int64_t>{64}));  // {n_embd} in llama.cpp's loader
    EXPECT_EQ(g.dtype, DType::F32);
    EXPECT_NE(f.find_tensor("blk.0.attn_q.bias"), nullptr);
    const Hparams hp = hparams_from_gguf(f);
    EXPECT_EQ(hp, *find_arch_preset("tiny-qwen2moe"));
    EXPECT_FALSE(hp.expert_weights_norm);
    EXPECT_TRUE(hp.shared_expert_gate);
}

TEST(MoeWeights, Qwen3MoeHasQkNormsAndNoSharedExpert) {
    const auto f = format::GgufFile::open(write("tiny-qwen3moe", "bf16"));
    EXPECT_EQ(tensor(f, "blk.1.attn_q_norm.weight").shape, (std::vector<int64_t>{32}));
    EXPECT_EQ(tensor(f, "blk.1.attn_k_norm.weight").shape, (std::vector<int64_t>{32}));
    EXPECT_EQ(tensor(f, "blk.1.attn_q.weight").shape, (std::vector<int64_t>{64, 128}));
    EXPECT_EQ(tensor(f, "blk.1.ffn_up_exps.weight").shape, (std::vector<int64_t>{64, 32, 8}));
    EXPECT_EQ(f.find_tensor("blk.0.ffn_gate_shexp.weight"), nullptr);
    EXPECT_EQ(f.find_tensor("output.weight"), nullptr);  // tied
    const Hparams hp = hparams_from_gguf(f);
    EXPECT_EQ(hp, *find_arch_preset("tiny-qwen3moe"));
    EXPECT_TRUE(hp.qk_norm);
    EXPECT_TRUE(hp.expert_weights_norm);
}

TEST(MoeWeights, ExpertSlicesPointIntoTheStack) {
    const auto f = format::GgufFile::open(write("tiny-mixtral", "q4_0"));
    const Weights w = bind_weights(f, hparams_from_gguf(f));
    const TensorRef& up = w.at(WR::FFN_UP_EXPS, 1);
    EXPECT_EQ(up.n_stack, 4);
    EXPECT_EQ(up.rows, 96);
    EXPECT_EQ(up.cols, 64);
    EXPECT_EQ(up.dtype, DType::Q4_0);
    EXPECT_EQ(up.n_bytes(), tensor(f, "blk.1.ffn_up_exps.weight").n_bytes);
    const TensorRef e2 = up.expert(2);
    EXPECT_EQ(e2.n_stack, 1);
    EXPECT_EQ(static_cast<const uint8_t*>(e2.data) - static_cast<const uint8_t*>(up.data),
              2 * 96 * int64_t(row_bytes(DType::Q4_0, 64)));
    EXPECT_FALSE(w.at(WR::FFN_GATE, 0).present());
    EXPECT_TRUE(w.at(WR::FFN_GATE_INP, 0).present());
    EXPECT_EQ(w.at(WR::FFN_GATE_INP, 0).dtype, DType::F32);
    // every distinct tensor counted once, the stacks whole
    uint64_t file_bytes = 0;
    for (const auto& t : f.tensors()) file_bytes += t.n_bytes;
    EXPECT_EQ(w.total_bytes(), file_bytes);
}

TEST(MoeWeights, AStackOfTheWrongExpertCountIsNamed) {
    const std::string src = write("tiny-mixtral", "f32");
    const auto f = format::GgufFile::open(src);
    Hparams hp = hparams_from_gguf(f);
    hp.n_expert = 8;  // the metadata says 8, the tensors hold 4
    try {
        bind_weights(f, hp);
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), src + ": tensor 'blk.0.ffn_gate_inp.weight' has shape [64, 4] but the hparams "
                                               "need [64, 8] (ggml order)");
    }
    hp.n_expert = 4;
    hp.n_ff_exp = 64;
    try {
        bind_weights(f, hp);
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), src + ": tensor 'blk.0.ffn_gate_exps.weight' has shape [64, 96, 4] but the "
                                               "hparams need [64, 64, 4] (ggml order)");
    }
}

TEST(MoeWeights, AMoeArchWithoutExpertsIsRefused) {
    const std::string path = moe_path("noexp.gguf");
    format::GgufWriter w(path);
    Hparams hp = *find_arch_preset("tiny-qwen3moe");
    hp.n_expert = 0;
    write_hparams(w, hp);
    w.add_tensor_f32("token_embd.weight", DType::F32, {4}, std::vector<float>(4));
    w.write();
    try {
        hparams_from_gguf(format::GgufFile::open(path));
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()),
                  path + ": metadata key 'qwen3moe.expert_count' is missing or 0 (qwen3moe has experts)");
    }
}
