// deepseek2 (DeepSeek-V2/V3) files as llama.cpp writes them: gen-model's tiny-deepseek2 holds the
// tensor names, ggml shapes and metadata keys of llama.cpp's loader (llama-model.cpp,
// LLM_ARCH_DEEPSEEK2; converter DeepseekV2Model), the older key form (key_length = the query head,
// no *_mla keys) reads the same shape, and what the engine does not run is refused naming the key.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "core/error.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "model/arch_presets.h"
#include "model/synthetic_writer.h"
#include "model/weights.h"

using namespace duet;
using namespace duet::model;

namespace {

std::string ds_path(const std::string& name) {
    const auto dir = std::filesystem::temp_directory_path() / ("duet_deepseek2_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    return (dir / name).string();
}

struct Cleanup {
    ~Cleanup() {
        std::error_code ec;
        std::filesystem::remove_all(
            std::filesystem::temp_directory_path() / ("duet_deepseek2_test_" + std::to_string(::getpid())), ec);
    }
} cleanup;

std::vector<int64_t> shape_of(const format::GgufFile& f, const std::string& name) {
    const format::GgufTensorInfo* t = f.find_tensor(name);
    return t ? t->shape : std::vector<int64_t>{};
}

// The tiny preset's metadata with `edit` applied, and the error hparams_from_gguf gives.
std::string error_with(const std::function<void(format::GgufWriter&)>& edit) {
    const std::string path = ds_path("edited.gguf");
    format::GgufWriter w(path);
    write_hparams(w, *find_arch_preset("tiny-deepseek2"));
    w.add_tensor_f32("token_embd.weight", DType::F32, {4}, std::vector<float>(4));
    edit(w);
    w.write();
    try {
        hparams_from_gguf(format::GgufFile::open(path));
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST(Deepseek2Gguf, TinyFileHasLlamaCppNamesShapesAndKeys) {
    const std::string path = ds_path("tiny.gguf");
    SyntheticOptions o;
    o.dtype = "q8_0";
    o.n_threads = 2;
    write_synthetic_model(path, arch_preset("tiny-deepseek2"), o);
    const auto f = format::GgufFile::open(path);
    EXPECT_EQ(f.get_string("general.architecture"), "deepseek2");
    // the absorbed-cache key form: key/value_length are the latent "head", *_mla the real heads
    // MLA as MQA over the latent: llama.cpp's converter writes head_count_kv 1, and its graph aborts
    // (ggml_mul_mat shape assertion) on a file that says n_head
    EXPECT_EQ(f.get_int("deepseek2.attention.head_count_kv"), 1);
    EXPECT_EQ(f.get_int("deepseek2.attention.key_length"), 96);
    EXPECT_EQ(f.get_int("deepseek2.attention.value_length"), 64);
    EXPECT_EQ(f.get_int("deepseek2.attention.key_length_mla"), 64);
    EXPECT_EQ(f.get_int("deepseek2.attention.value_length_mla"), 32);
    EXPECT_EQ(f.get_int("deepseek2.attention.q_lora_rank"), 32);
    EXPECT_EQ(f.get_int("deepseek2.attention.kv_lora_rank"), 64);
    EXPECT_EQ(f.get_int("deepseek2.rope.dimension_count"), 32);
    EXPECT_EQ(f.get_int("deepseek2.expert_gating_func"), 2);
    EXPECT_EQ(f.get_int("deepseek2.leading_dense_block_count"), 1);
    EXPECT_EQ(f.get_int("deepseek2.expert_shared_count"), 1);
    EXPECT_TRUE(f.get_bool("deepseek2.expert_weights_norm"));
    // ggml order {cols, rows, stack}
    EXPECT_EQ(shape_of(f, "blk.0.attn_q_a.weight"), (std::vector<int64_t>{64, 32}));
    EXPECT_EQ(shape_of(f, "blk.0.attn_q_a_norm.weight"), (std::vector<int64_t>{32}));
    EXPECT_EQ(shape_of(f, "blk.0.attn_q_b.weight"), (std::vector<int64_t>{32, 4 * 64}));
    EXPECT_EQ(shape_of(f, "blk.0.attn_kv_a_mqa.weight"), (std::vector<int64_t>{64, 64 + 32}));
    EXPECT_EQ(shape_of(f, "blk.0.attn_kv_a_norm.weight"), (std::vector<int64_t>{64}));
    EXPECT_EQ(shape_of(f, "blk.0.attn_k_b.weight"), (std::vector<int64_t>{32, 64, 4}));
    EXPECT_EQ(shape_of(f, "blk.0.attn_v_b.weight"), (std::vector<int64_t>{64, 32, 4}));
    EXPECT_EQ(shape_of(f, "blk.0.attn_output.weight"), (std::vector<int64_t>{4 * 32, 64}));
    EXPECT_EQ(shape_of(f, "blk.0.ffn_gate.weight"), (std::vector<int64_t>{64, 96}));  // the dense first layer
    EXPECT_EQ(shape_of(f, "blk.1.ffn_gate_inp.weight"), (std::vector<int64_t>{64, 8}));
    EXPECT_EQ(shape_of(f, "blk.1.exp_probs_b.bias"), (std::vector<int64_t>{8}));
    EXPECT_EQ(shape_of(f, "blk.1.ffn_down_exps.weight"), (std::vector<int64_t>{32, 64, 8}));
    EXPECT_EQ(shape_of(f, "blk.1.ffn_up_shexp.weight"), (std::vector<int64_t>{64, 32}));
    EXPECT_EQ(f.tensor("blk.1.ffn_gate_inp.weight").dtype, DType::F32);
    EXPECT_EQ(f.tensor("blk.1.exp_probs_b.bias").dtype, DType::F32);
    EXPECT_EQ(f.tensor("blk.0.attn_k_b.weight").dtype, DType::Q8_0);
    for (const char* absent : {"blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight",
                               "blk.0.attn_kv_b.weight", "blk.0.ffn_gate_inp.weight", "blk.1.ffn_gate.weight"})
        EXPECT_EQ(f.find_tensor(absent), nullptr) << absent;
    const Hparams hp = hparams_from_gguf(f);
    EXPECT_EQ(hp, *find_arch_preset("tiny-deepseek2"));
    const Weights w = bind_weights(f, hp);
    EXPECT_EQ(w.layers[0][graph::WeightRole::ATTN_K_B].n_stack, 4);
    EXPECT_FALSE(w.layers[1][graph::WeightRole::FFN_GATE].present());
    EXPECT_EQ(hp.n_params(), 214024);  // every tensor above, counted from the catalogue
}

TEST(Deepseek2Gguf, OlderKeyFormReadsTheSameHeads) {
    // convert_hf_to_gguf before the absorbed cache: key_length = qk_nope + qk_rope, value_length =
    // v_head_dim, no *_mla keys, no q_lora_rank (DeepSeek-V2-Lite)
    const std::string path = ds_path("older.gguf");
    Hparams want = *find_arch_preset("tiny-deepseek2");
    want.q_lora_rank = 0;
    want.expert_probs_bias = false;  // no exp_probs_b tensor
    want.tied_output = true;         // no output.weight tensor
    const std::string keys = ds_path("keys.gguf");
    {
        format::GgufWriter t(keys);
        write_hparams(t, want);
        t.write();
    }
    const auto newer = format::GgufFile::open(keys);
    format::GgufWriter w(path);
    for (const auto& [k, v] : newer.metadata())
        if (!k.ends_with("_length_mla") && !k.ends_with("key_length") && !k.ends_with("value_length"))
            w.set_value(k, v);
    w.set_u32("deepseek2.attention.key_length", 64);
    w.set_u32("deepseek2.attention.value_length", 32);
    w.add_tensor_f32("token_embd.weight", DType::F32, {4}, std::vector<float>(4));
    w.write();
    const Hparams got = hparams_from_gguf(format::GgufFile::open(path));
    EXPECT_EQ(got.head_dim, 64);
    EXPECT_EQ(got.qk_nope_head_dim, 32);
    EXPECT_EQ(got.v_head_dim, 32);
    EXPECT_EQ(got.q_lora_rank, 0);
    EXPECT_EQ(got.kv_lora_rank, 64);
    EXPECT_EQ(got.n_params(), want.n_params());
    EXPECT_EQ(got, want);
}

TEST(Deepseek2Gguf, UnsupportedGatingAndRopeAreRefusedNamingTheKey) {
    EXPECT_EQ(error_with([](format::GgufWriter&) {}), "(no error)");
    EXPECT_EQ(error_with([](format::GgufWriter& w) {
                  w.set_string("deepseek2.rope.scaling.type", "linear");
                  w.set_f32("deepseek2.rope.scaling.factor", 4.0f);
              }),
              ds_path("edited.gguf") +
                  ": metadata key 'deepseek2.rope.scaling.type' = 'linear' is not supported for "
                  "deepseek2 (supported: none, yarn)");
    EXPECT_EQ(error_with([](format::GgufWriter& w) {
                  w.set_string("deepseek2.rope.scaling.type", "yarn");
                  w.set_f32("deepseek2.rope.scaling.factor", 40.0f);
                  w.set_f32("deepseek2.rope.scaling.attn_factor", 0.5f);
              }),
              ds_path("edited.gguf") +
                  ": metadata key 'deepseek2.rope.scaling.attn_factor' = 0.5 is not supported (allowed: 1)");
    EXPECT_EQ(error_with([](format::GgufWriter& w) { w.set_u32("deepseek2.expert_gating_func", 3); }),
              ds_path("edited.gguf") +
                  ": metadata key 'deepseek2.expert_gating_func' = 3 is not supported (allowed: "
                  "1 = softmax, 2 = sigmoid)");
    EXPECT_EQ(error_with([](format::GgufWriter& w) { w.set_u32("deepseek2.rope.dimension_count", 64); }),
              ds_path("edited.gguf") +
                  ": metadata key 'deepseek2.rope.dimension_count' = 64 leaves no un-rotated "
                  "part of the 64-wide query head (key_length_mla, or key_length in older files)");
}

TEST(Deepseek2Gguf, YarnKeysAsLlamaCppsConverterWritesThem) {
    // DeepSeek-V3's rope_scaling {type yarn, factor 40, original_max_position_embeddings 4096,
    // mscale_all_dim 1}: the converter writes yarn_log_multiplier = 0.1 x mscale_all_dim
    const std::string path = ds_path("yarn.gguf");
    format::GgufWriter w(path);
    write_hparams(w, *find_arch_preset("tiny-deepseek2"));
    w.set_string("deepseek2.rope.scaling.type", "yarn");
    w.set_f32("deepseek2.rope.scaling.factor", 40.0f);
    w.set_u32("deepseek2.rope.scaling.original_context_length", 4096);
    w.set_f32("deepseek2.rope.scaling.yarn_log_multiplier", 0.1f);
    w.add_tensor_f32("token_embd.weight", DType::F32, {4}, std::vector<float>(4));
    w.write();
    const Hparams hp = hparams_from_gguf(format::GgufFile::open(path));
    EXPECT_TRUE(hp.rope_yarn);
    EXPECT_FLOAT_EQ(hp.rope_freq_scale, 1.0f / 40.0f);
    EXPECT_EQ(hp.rope_yarn_orig_ctx, 4096);
    EXPECT_FLOAT_EQ(hp.rope_yarn_log_mul, 1.0f);
    EXPECT_EQ(hp.rope_yarn_beta_fast, 32.0f);
    EXPECT_EQ(hp.rope_yarn_beta_slow, 1.0f);
}

TEST(Deepseek2Gguf, ExpertGroupsAndNextnKeysAreReadAndChecked) {
    const auto groups = [](int64_t count, int64_t used) {
        return [=](format::GgufWriter& w) {
            w.set_u32("deepseek2.expert_group_count", uint32_t(count));
            w.set_u32("deepseek2.expert_group_used_count", uint32_t(used));
        };
    };
    const std::string f = ds_path("edited.gguf");
    EXPECT_EQ(error_with(groups(4, 2)), "(no error)");
    EXPECT_EQ(error_with(groups(4, 4)), "(no error)");  // every group kept: plain top-k
    EXPECT_EQ(error_with(groups(4, 5)), f + ": metadata key 'deepseek2.expert_group_used_count' = 5 is out of range "
                                            "(allowed: 1..4, the groups of 'expert_group_count')");
    EXPECT_EQ(error_with(groups(4, 0)), f + ": metadata key 'deepseek2.expert_group_used_count' = 0 is out of range "
                                            "(allowed: 1..4, the groups of 'expert_group_count')");
    EXPECT_EQ(error_with(groups(3, 1)), f + ": metadata key 'deepseek2.expert_group_count' = 3 does not split "
                                            "'expert_count' = 8 into groups of at least 2 experts (allowed: a divisor "
                                            "of expert_count, at most expert_count / 2)");
    EXPECT_EQ(error_with(groups(8, 2)), f + ": metadata key 'deepseek2.expert_group_count' = 8 does not split "
                                            "'expert_count' = 8 into groups of at least 2 experts (allowed: a divisor "
                                            "of expert_count, at most expert_count / 2)");
    EXPECT_EQ(error_with([&](format::GgufWriter& w) {
                  groups(4, 1)(w);
                  w.set_u32("deepseek2.expert_used_count", 3);
              }),
              f + ": metadata key 'deepseek2.expert_group_used_count' = 1 keeps 2 experts, fewer than "
                  "'expert_used_count' = 3 (allowed: expert_group_used_count x experts per group >= "
                  "expert_used_count)");
    EXPECT_EQ(error_with([](format::GgufWriter& w) { w.set_u32("deepseek2.nextn_predict_layers", 2); }),
              f + ": metadata key 'deepseek2.nextn_predict_layers' = 2 is out of range (allowed: 0..1, fewer than "
                  "'deepseek2.block_count' = 2)");
}

TEST(Deepseek2Gguf, TinyDeepseek3HasGroupsAndATrailingNextnBlock) {
    const std::string path = ds_path("tiny3.gguf");
    SyntheticOptions o;
    o.n_threads = 2;
    write_synthetic_model(path, arch_preset("tiny-deepseek3"), o);
    const auto f = format::GgufFile::open(path);
    // llama.cpp's layout: block_count counts the MTP block, the last one
    EXPECT_EQ(f.get_int("deepseek2.block_count"), 3);
    EXPECT_EQ(f.get_int("deepseek2.nextn_predict_layers"), 1);
    EXPECT_EQ(f.get_int("deepseek2.expert_group_count"), 4);
    EXPECT_EQ(f.get_int("deepseek2.expert_group_used_count"), 2);
    EXPECT_EQ(shape_of(f, "blk.2.nextn.eh_proj.weight"), (std::vector<int64_t>{128, 64}));
    EXPECT_EQ(shape_of(f, "blk.2.nextn.enorm.weight"), (std::vector<int64_t>{64}));
    EXPECT_EQ(shape_of(f, "blk.2.nextn.hnorm.weight"), (std::vector<int64_t>{64}));
    EXPECT_EQ(shape_of(f, "blk.2.nextn.embed_tokens.weight"), (std::vector<int64_t>{64, 448}));
    EXPECT_EQ(shape_of(f, "blk.2.nextn.shared_head_head.weight"), (std::vector<int64_t>{64, 448}));
    EXPECT_EQ(shape_of(f, "blk.2.nextn.shared_head_norm.weight"), (std::vector<int64_t>{64}));
    EXPECT_EQ(shape_of(f, "blk.2.ffn_down_exps.weight"), (std::vector<int64_t>{32, 64, 8}));  // a whole MoE block
    EXPECT_EQ(shape_of(f, "blk.2.exp_probs_b.bias"), (std::vector<int64_t>{8}));
    const Hparams hp = hparams_from_gguf(f);
    EXPECT_EQ(hp, *find_arch_preset("tiny-deepseek3"));
    EXPECT_EQ(hp.n_layer, 2);  // the main blocks only
    EXPECT_EQ(hp.n_layer_nextn, 1);
    EXPECT_TRUE(hp.group_limited());
    const Weights w = bind_weights(f, hp);
    EXPECT_EQ(w.layers.size(), 2u);
    ASSERT_EQ(w.nextn_layers.size(), 1u);
    EXPECT_EQ(w.nextn_layers[0][graph::WeightRole::FFN_EXP_PROBS_B].name, "blk.2.exp_probs_b.bias");
    EXPECT_EQ(w.nextn_tensors.size(), 6u);
    // the MTP block is bound but not among the weights the engine reads
    uint64_t bytes = 0;
    w.for_each([&](const TensorRef& t) {
        EXPECT_FALSE(t.name.starts_with("blk.2.")) << t.name;
        bytes += t.n_bytes();
    });
    EXPECT_EQ(bytes, w.total_bytes());
}

TEST(Deepseek2Gguf, NextnBlockWithoutItsTensorsIsRefusedNamingTheTensor) {
    // tiny-deepseek2's two blocks read as one main block and one MTP block: block 1 has every
    // block tensor but no nextn ones
    const std::string src = ds_path("two.gguf"), path = ds_path("nextn_missing.gguf");
    SyntheticOptions o;
    o.n_threads = 2;
    write_synthetic_model(src, arch_preset("tiny-deepseek2"), o);
    const auto in = format::GgufFile::open(src);
    {
        format::GgufWriter w(path);
        for (const auto& [k, v] : in.metadata()) w.set_value(k, v);
        w.set_u32("deepseek2.nextn_predict_layers", 1);
        w.set_u32("deepseek2.leading_dense_block_count", 0);
        for (const format::GgufTensorInfo& t : in.tensors())
            if (!t.name.starts_with("blk.0.ffn_") && !t.name.starts_with("blk.0.exp_probs_b"))
                w.add_tensor_bytes(t.name, t.dtype, t.shape, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
        for (const format::GgufTensorInfo& t : in.tensors())  // block 0 as a MoE block: block 1's FFN
            if (t.name.starts_with("blk.1.ffn_") || t.name.starts_with("blk.1.exp_probs_b"))
                w.add_tensor_bytes("blk.0." + t.name.substr(6), t.dtype, t.shape,
                                   std::vector<uint8_t>(t.data, t.data + t.n_bytes));
        w.write();
    }
    const auto f = format::GgufFile::open(path);
    const Hparams hp = hparams_from_gguf(f);
    EXPECT_EQ(hp.n_layer, 1);
    try {
        bind_weights(f, hp);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), path + ": tensor 'blk.1.nextn.eh_proj.weight' is missing");
    }
}
