// hparams_from_gguf on files written by the GGUF writer and on real files; its errors.
#include "model/hparams.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "core/error.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "model/arch_presets.h"

namespace duet::model {
namespace {

namespace fs = std::filesystem;
using format::GgufFile;
using format::GgufWriter;

std::string temp_path(const std::string& name) {
    return (fs::temp_directory_path() / ("duet_hparams_" + std::to_string(::getpid()) + "_" + name)).string();
}

// Writes the metadata of hp plus the marker tensors that tell tied/bias/rope_freqs, applies
// `edit` to the writer, and reads the hparams back (or the error).
std::string write_file(const Hparams& hp, const std::function<void(GgufWriter&)>& edit = nullptr) {
    const std::string path = temp_path(hp.arch_name + ".gguf");
    GgufWriter w(path);
    write_hparams(w, hp);
    w.add_tensor_f32("token_embd.weight", DType::F32, {4}, std::vector<float>(4));
    if (!hp.tied_output) w.add_tensor_f32("output.weight", DType::F32, {4}, std::vector<float>(4));
    if (hp.has_rope_freqs)
        w.add_tensor_f32("rope_freqs.weight", DType::F32, {hp.n_rot / 2}, std::vector<float>(hp.n_rot / 2, 1.0f));
    if (hp.qkv_bias) w.add_tensor_f32("blk.0.attn_q.bias", DType::F32, {4}, std::vector<float>(4));
    if (hp.expert_probs_bias)  // deepseek2's selection bias, in its first expert layer
        w.add_tensor_f32("blk." + std::to_string(hp.n_layer_dense_lead) + ".exp_probs_b.bias", DType::F32,
                         {hp.n_expert}, std::vector<float>(size_t(hp.n_expert)));
    if (edit) edit(w);
    w.write();
    return path;
}

Hparams read_back(const std::string& path) {
    Hparams hp = hparams_from_gguf(GgufFile::open(path));
    fs::remove(path);
    return hp;
}

std::string error_of(const std::string& path) {
    std::string msg = "(no error)";
    try {
        hparams_from_gguf(GgufFile::open(path));
    } catch (const Error& e) {
        msg = e.what();
    }
    fs::remove(path);
    return msg;
}

TEST(Hparams, EveryPresetRoundTripsThroughGguf) {
    for (const ArchPreset& p : arch_presets()) {
        SCOPED_TRACE(p.name);
        EXPECT_EQ(read_back(write_file(p.hparams)), p.hparams);
    }
}

TEST(Hparams, TensorsDecideTiedBiasAndRopeFreqs) {
    const Hparams& q = *find_arch_preset("tiny-qwen2");
    Hparams hp = read_back(write_file(q));
    EXPECT_TRUE(hp.tied_output);
    EXPECT_TRUE(hp.qkv_bias);
    EXPECT_TRUE(hp.rope_neox);
    EXPECT_FALSE(hp.has_rope_freqs);
    Hparams l3 = read_back(write_file(*find_arch_preset("tiny-llama3")));
    EXPECT_TRUE(l3.has_rope_freqs);
    EXPECT_FALSE(l3.rope_neox);
    EXPECT_FALSE(l3.tied_output);
    EXPECT_EQ(l3.rope_freq_base, 500000.0f);
}

TEST(Hparams, LinearRopeScalingAndDefaults) {
    Hparams base = *find_arch_preset("tiny-llama");
    Hparams hp = read_back(write_file(base, [](GgufWriter& w) {
        w.set_string("llama.rope.scaling.type", "linear");
        w.set_f32("llama.rope.scaling.factor", 4.0f);
    }));
    EXPECT_EQ(hp.rope_freq_scale, 0.25f);
    // Optional keys missing: head_count_kv defaults to head_count, freq_base to 10000, n_rot to head_dim.
    const std::string path = temp_path("minimal.gguf");
    GgufWriter w(path);
    w.set_string("general.architecture", "llama");
    w.set_u32("llama.context_length", 128);
    w.set_u32("llama.embedding_length", 32);
    w.set_u32("llama.block_count", 1);
    w.set_u32("llama.feed_forward_length", 64);
    w.set_u32("llama.attention.head_count", 2);
    w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-6f);
    w.add_tensor_f32("token_embd.weight", DType::F32, {32, 3}, std::vector<float>(96));
    w.write();
    Hparams m = read_back(path);
    EXPECT_EQ(m.n_head_kv, 2);
    EXPECT_EQ(m.head_dim, 16);
    EXPECT_EQ(m.n_rot, 16);
    EXPECT_EQ(m.rope_freq_base, 10000.0f);
    EXPECT_EQ(m.n_vocab, 3);  // from token_embd.weight
    EXPECT_TRUE(m.tied_output);
}

TEST(Hparams, Errors) {
    const Hparams base = *find_arch_preset("tiny-llama");
    std::string p = write_file(base, [](GgufWriter& w) { w.set_string("general.architecture", "mamba"); });
    EXPECT_EQ(error_of(p),
              p + ": architecture 'mamba' is not supported (supported: llama, qwen2, qwen2moe, qwen3moe, deepseek2)");

    p = temp_path("noarch.gguf");
    GgufWriter(p).write();
    EXPECT_EQ(error_of(p), p + ": metadata key 'general.architecture' is missing");

    Hparams h = base;
    p = write_file(h, [](GgufWriter& w) { w.set_string("llama.block_count", "two"); });
    EXPECT_EQ(error_of(p), p + ": metadata key 'llama.block_count' holds string, expected an integer");

    h = base;
    h.n_head = 5;  // 64 is not a multiple of 5
    h.n_head_kv = 5;
    p = write_file(h, [](GgufWriter& w) {
        EXPECT_TRUE(w.remove("llama.attention.key_length"));
        EXPECT_TRUE(w.remove("llama.attention.value_length"));
    });
    EXPECT_EQ(error_of(p), p + ": llama.embedding_length = 64 is not a multiple of llama.attention.head_count = 5");

    h = base;
    h.n_head_kv = 3;
    p = write_file(h);
    EXPECT_EQ(error_of(p),
              p + ": n_head = 4 is not a multiple of n_head_kv = 3 (grouped-query attention needs whole groups)");

    h = base;
    h.n_head_kv = 8;
    p = write_file(h);
    EXPECT_EQ(error_of(p), p + ": n_head_kv = 8 is out of range (allowed: 1..4)");

    h = base;
    h.n_layer = 0;
    p = write_file(h);
    EXPECT_EQ(error_of(p), p + ": n_layer = 0 is out of range (allowed: 1..4096)");

    h = base;
    h.n_rot = 15;
    p = write_file(h);
    EXPECT_EQ(error_of(p), p + ": n_rot = 15 must be even (RoPE rotates pairs)");

    p = write_file(base, [](GgufWriter& w) {
        w.set_string("llama.rope.scaling.type", "yarn");
        w.set_f32("llama.rope.scaling.factor", 4.0f);
    });
    EXPECT_EQ(error_of(p),
              p + ": metadata key 'llama.rope.scaling.type' = 'yarn' is not supported (supported: none, linear)");

    p = write_file(base, [](GgufWriter& w) { w.set_f32("llama.attention.layer_norm_rms_epsilon", 0.0f); });
    EXPECT_EQ(error_of(p), p + ": norm_eps = 0 is out of range (allowed: > 0 and <= 1)");
}

TEST(Hparams, Stories260K) {
    const std::string path = std::string(DUET_SHARED_DIR) + "/models/stories260K.gguf";
    if (!fs::exists(path)) GTEST_SKIP() << path << " not present";
    Hparams hp = hparams_from_gguf(GgufFile::open(path));
    EXPECT_EQ(hp.arch, Arch::LLAMA);
    EXPECT_EQ(hp.arch_name, "llama");
    EXPECT_EQ(hp.n_layer, 5);
    EXPECT_EQ(hp.n_embd, 64);
    EXPECT_EQ(hp.n_head, 8);
    EXPECT_EQ(hp.n_head_kv, 4);
    EXPECT_EQ(hp.n_vocab, 512);
    EXPECT_EQ(hp.n_ff, 172);
    EXPECT_EQ(hp.head_dim, 8);
    EXPECT_EQ(hp.n_rot, 8);
    EXPECT_EQ(hp.n_ctx_train, 2048);
    EXPECT_FLOAT_EQ(hp.norm_eps, 1e-5f);
    EXPECT_FALSE(hp.tied_output);
    EXPECT_FALSE(hp.qkv_bias);
    EXPECT_FALSE(hp.rope_neox);
}

}  // namespace
}  // namespace duet::model
