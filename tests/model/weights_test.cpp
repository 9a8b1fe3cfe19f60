// Weights binding: zero copy into the mapping, every tensor checked against the hparams, errors
// naming the file and the tensor.
#include "model/weights.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <unistd.h>

#include "core/error.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "model/arch_presets.h"
#include "model/synthetic_writer.h"

using WR = duet::graph::WeightRole;

using namespace duet;
using namespace duet::model;

namespace {

std::filesystem::path temp_dir() {
    return std::filesystem::temp_directory_path() / ("duet_weights_test_" + std::to_string(::getpid()));
}
// Removes the temp folder when the test program ends.
struct TempCleanup {
    ~TempCleanup() {
        std::error_code ec;
        std::filesystem::remove_all(temp_dir(), ec);
    }
} cleanup;

std::string temp_path(const std::string& name) {
    std::filesystem::create_directories(temp_dir());
    return (temp_dir() / name).string();
}

std::string write_preset(const std::string& preset, const std::string& dtype) {
    const std::string path = temp_path(preset + "-" + dtype + ".gguf");
    SyntheticOptions o;
    o.dtype = dtype;
    o.seed = 3;
    o.n_threads = 1;
    write_synthetic_model(path, arch_preset(preset), o);
    return path;
}

// Copies src to dst; `edit` may change each tensor's name/dtype/shape (returning false drops it).
// Edited tensors get zero bytes of the right size.
struct TensorSpec {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
};
std::string rewrite(const std::string& src, const std::string& dst_name, const std::function<bool(TensorSpec&)>& edit) {
    const std::string dst = temp_path(dst_name);
    auto in = format::GgufFile::open(src);
    format::GgufWriter w(dst);
    for (const auto& [k, v] : in.metadata())
        if (k != "general.alignment") w.set_value(k, v);
    for (const auto& t : in.tensors()) {
        TensorSpec s{t.name, t.dtype, t.shape};
        if (!edit(s)) continue;
        if (s.dtype == t.dtype && s.shape == t.shape) {
            w.add_tensor_bytes(s.name, s.dtype, s.shape, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
        } else {
            int64_t rows = 1;
            for (size_t i = 1; i < s.shape.size(); ++i) rows *= s.shape[i];
            w.add_tensor_bytes(s.name, s.dtype, s.shape,
                               std::vector<uint8_t>(row_bytes(s.dtype, s.shape[0]) * size_t(rows), 0));
        }
    }
    w.write();
    return dst;
}

std::string bind_error(const std::string& path, const Hparams& hp) {
    auto f = format::GgufFile::open(path);
    try {
        bind_weights(f, hp);
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

TEST(Weights, BindsEveryTensorInPlace) {
    const std::string path = write_preset("tiny-llama", "q8_0");
    auto f = format::GgufFile::open(path);
    const Hparams hp = hparams_from_gguf(f);
    const Weights w = bind_weights(f, hp);
    ASSERT_EQ(w.layers.size(), size_t(hp.n_layer));
    EXPECT_EQ(w[WR::TOKEN_EMBD].data, f.tensor("token_embd.weight").data);  // zero copy
    EXPECT_EQ(w.layers[1][WR::FFN_DOWN].data, f.tensor("blk.1.ffn_down.weight").data);
    EXPECT_EQ(w.layers[0][WR::ATTN_Q].rows, hp.n_embd_q());
    EXPECT_EQ(w.layers[0][WR::ATTN_Q].cols, hp.n_embd);
    EXPECT_EQ(w.layers[0][WR::ATTN_K].rows, hp.n_embd_kv());
    EXPECT_EQ(w.layers[0][WR::FFN_DOWN].rows, hp.n_embd);
    EXPECT_EQ(w.layers[0][WR::FFN_DOWN].cols, hp.n_ff);
    EXPECT_EQ(w.layers[0][WR::ATTN_Q].dtype, DType::Q8_0);
    EXPECT_EQ(w.layers[0][WR::ATTN_Q].row_stride_bytes, size_t(hp.n_embd / 32 * 34));
    EXPECT_FALSE(w.layers[0].bias_of(WR::ATTN_Q).present());
    EXPECT_NE(w[WR::LM_HEAD].data, w[WR::TOKEN_EMBD].data);
    uint64_t sum = 0;
    for (const auto& t : f.tensors()) sum += t.n_bytes;
    EXPECT_EQ(w.total_bytes(), sum);
}

TEST(Weights, TiedOutputBiasesAndRopeFreqs) {
    {
        const std::string path = write_preset("tiny-qwen2", "f16");
        auto f = format::GgufFile::open(path);
        const Hparams hp = hparams_from_gguf(f);
        ASSERT_TRUE(hp.tied_output && hp.qkv_bias);
        const Weights w = bind_weights(f, hp);
        EXPECT_EQ(w[WR::LM_HEAD].data, w[WR::TOKEN_EMBD].data);
        EXPECT_EQ(w.layers[1].bias_of(WR::ATTN_K).data, f.tensor("blk.1.attn_k.bias").data);
        EXPECT_EQ(w.layers[1].bias_of(WR::ATTN_K).cols, hp.n_embd_kv());
        uint64_t sum = 0;
        for (const auto& t : f.tensors()) sum += t.n_bytes;
        EXPECT_EQ(w.total_bytes(), sum);  // the tied matrix counted once
    }
    {
        const std::string path = write_preset("tiny-llama3", "f32");
        auto f = format::GgufFile::open(path);
        const Hparams hp = hparams_from_gguf(f);
        ASSERT_TRUE(hp.has_rope_freqs);
        const Weights w = bind_weights(f, hp);
        EXPECT_EQ(w[WR::ROPE_FREQS].cols, hp.n_rot / 2);
        EXPECT_EQ(w[WR::ROPE_FREQS].data, f.tensor("rope_freqs.weight").data);
    }
}

TEST(Weights, ErrorsNameFileAndTensor) {
    const std::string good = write_preset("tiny-llama", "f16");
    const Hparams hp = hparams_from_gguf(format::GgufFile::open(good));

    const std::string missing = rewrite(good, "missing.gguf", [](TensorSpec& s) { return s.name != "blk.1.attn_k.weight"; });
    EXPECT_EQ(bind_error(missing, hp), missing + ": tensor 'blk.1.attn_k.weight' is missing");

    const std::string shape = rewrite(good, "shape.gguf", [&](TensorSpec& s) {
        if (s.name == "blk.0.attn_q.weight") s.shape = {hp.n_embd, hp.n_embd_q() / 2};
        return true;
    });
    EXPECT_EQ(bind_error(shape, hp),
              fmt::format("{}: tensor 'blk.0.attn_q.weight' has shape [{}, {}] but the hparams need [{}, {}] "
                          "(ggml order)",
                          shape, hp.n_embd, hp.n_embd_q() / 2, hp.n_embd, hp.n_embd_q()));

    const std::string dtype = rewrite(good, "dtype.gguf", [](TensorSpec& s) {
        if (s.name == "output_norm.weight") s.dtype = DType::F16;
        return true;
    });
    EXPECT_EQ(bind_error(dtype, hp), dtype + ": tensor 'output_norm.weight' has dtype f16 (allowed: f32)");
}

}  // namespace
