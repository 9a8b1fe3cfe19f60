// Hugging Face config.json as the model (model/hf_config.h): the families' fields, the presets
// written from the public configs, and the exact errors and warnings for what is not modelled.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "model/arch_presets.h"
#include "model/hf_config.h"
#include "model/synthetic_writer.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"

using namespace duet;
using namespace duet::model;

namespace {

std::string data(const std::string& name) { return std::string(DUET_SOURCE_DIR) + "/tests/model/data/hf/" + name; }

std::string error_of(const std::string& json) {
    try {
        parse_hf_config(json, "c.json");
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

// The smallest valid llama config plus `extra` fields.
std::string llama(const std::string& extra = "") {
    return R"({"model_type": "llama", "vocab_size": 100, "max_position_embeddings": 256, "hidden_size": 32,
               "num_hidden_layers": 2, "intermediate_size": 64, "num_attention_heads": 4)" +
           extra + "}";
}

}  // namespace

TEST(HfConfig, MixtralIsLlamaWithExperts) {
    const HfConfig c = read_hf_config(data("tiny-mixtral"));  // the directory form
    const Hparams& h = c.hparams;
    EXPECT_EQ(c.file, data("tiny-mixtral") + "/config.json");
    EXPECT_EQ(h.arch, Arch::LLAMA);
    EXPECT_EQ(h.n_expert, 4);
    EXPECT_EQ(h.n_expert_used, 2);
    EXPECT_EQ(h.n_ff_exp, 96);  // Mixtral's experts are intermediate_size wide
    EXPECT_TRUE(h.expert_weights_norm);
    EXPECT_EQ(h.expert_gating, ExpertGating::SOFTMAX);
    EXPECT_EQ(h.n_head_kv, 2);
    EXPECT_EQ(h.head_dim, 16);
    EXPECT_EQ(h.rope_freq_base, 1000000.0f);
    EXPECT_FALSE(h.rope_neox);
    EXPECT_EQ(c.torch_dtype, "bfloat16");
    EXPECT_TRUE(c.warnings.empty()) << c.warnings[0];
}

TEST(HfConfig, Qwen2MoeHasAGatedSharedExpertAndSlidingWindowOff) {
    const HfConfig c = read_hf_config(data("tiny-qwen2-moe/config.json"));
    const Hparams& h = c.hparams;
    EXPECT_EQ(h.arch, Arch::QWEN2MOE);
    EXPECT_EQ(h.arch_name, "qwen2moe");
    EXPECT_EQ(h.n_expert, 8);
    EXPECT_EQ(h.n_expert_used, 4);
    EXPECT_EQ(h.n_ff_exp, 32);
    EXPECT_EQ(h.n_expert_shared, 1);
    EXPECT_EQ(h.n_ff_shexp, 128);
    EXPECT_TRUE(h.shared_expert_gate);
    EXPECT_FALSE(h.expert_weights_norm);
    EXPECT_TRUE(h.qkv_bias);
    EXPECT_TRUE(h.rope_neox);
    EXPECT_EQ(h.n_layer_dense_lead, 0);
}

TEST(HfConfig, DeepSeekV3IsLatentAttentionWithSigmoidExperts) {
    const HfConfig c = read_hf_config(data("tiny-deepseek-v3/config.json"));
    const Hparams& h = c.hparams;
    EXPECT_EQ(h.arch, Arch::DEEPSEEK2);
    EXPECT_EQ(h.q_lora_rank, 48);
    EXPECT_EQ(h.kv_lora_rank, 32);
    EXPECT_EQ(h.qk_rope_head_dim, 8);
    EXPECT_EQ(h.qk_nope_head_dim, 16);
    EXPECT_EQ(h.v_head_dim, 16);
    EXPECT_EQ(h.head_dim, 24);
    EXPECT_EQ(h.n_rot, 8);
    EXPECT_EQ(h.n_expert, 8);
    EXPECT_EQ(h.n_expert_shared, 1);
    EXPECT_EQ(h.n_ff_shexp, 24);
    EXPECT_EQ(h.n_layer_dense_lead, 1);
    EXPECT_EQ(h.expert_gating, ExpertGating::SIGMOID);
    EXPECT_TRUE(h.expert_weights_norm);
    EXPECT_EQ(h.expert_weights_scale, 2.5f);
    EXPECT_FALSE(h.qkv_bias);
    EXPECT_FALSE(h.moe_layer(0));
    EXPECT_TRUE(h.moe_layer(1));
    // n_group 2, topk_group 1: group-limited routing; the MTP block is not one of the 3 layers.
    EXPECT_EQ(h.n_expert_groups, 2);
    EXPECT_EQ(h.n_expert_groups_used, 1);
    EXPECT_TRUE(h.group_limited());
    EXPECT_EQ(h.n_layer, 3);
    EXPECT_EQ(h.n_layer_nextn, 1);
    // Each field that changes no modelled cost is named once, with its reason.
    const std::string f = data("tiny-deepseek-v3/config.json");
    EXPECT_EQ(c.warnings,
              (std::vector<std::string>{
                  f + ": field 'rope_scaling' (type \"yarn\") is not modelled (RoPE frequency scaling changes the "
                      "numbers, not the cost)",
                  f + ": field 'topk_method' is not modelled (routing is modelled as uniform over the experts)"}));
}

TEST(HfConfig, DeepSeekV2LiteHasNoQueryCompression) {
    const Hparams h = read_hf_config(data("tiny-deepseek-v2-lite/config.json")).hparams;
    EXPECT_EQ(h.q_lora_rank, 0);  // null
    EXPECT_EQ(h.expert_gating, ExpertGating::SOFTMAX);
    EXPECT_EQ(h.n_expert_shared, 2);
    EXPECT_EQ(h.n_ff_shexp, 48);  // 2 shared experts of moe_intermediate_size
    EXPECT_FALSE(h.expert_weights_norm);
}

TEST(HfConfig, DenseLlamaMatchesItsShape) {
    const Hparams h = read_hf_config(data("tiny-llama/config.json")).hparams;
    EXPECT_EQ(h.arch, Arch::LLAMA);
    EXPECT_FALSE(h.is_moe());
    EXPECT_FALSE(h.is_mla());
    EXPECT_EQ(h.n_head_kv, 4);  // num_key_value_heads absent: MHA
    EXPECT_EQ(h.head_dim, 16);
    EXPECT_TRUE(h.tied_output);
    EXPECT_EQ(h.n_params(), 512 * 64 + 2 * (2 * 64 + 4 * 64 * 64 + 3 * 64 * 192) + 64);
}

TEST(HfConfig, PathForms) {
    EXPECT_TRUE(is_hf_config_path(data("tiny-llama")));
    EXPECT_TRUE(is_hf_config_path("somewhere/config.json"));
    EXPECT_FALSE(is_hf_config_path("model.gguf"));
    EXPECT_FALSE(is_hf_config_path(data("")));  // a directory without config.json
    EXPECT_TRUE(is_trace_only_model("deepseek-v3"));
    EXPECT_TRUE(is_trace_only_model(data("tiny-llama")));
    EXPECT_FALSE(is_trace_only_model("model.gguf"));
}

TEST(HfConfig, ErrorsNameTheFileAndField) {
    EXPECT_EQ(error_of(R"({"model_type": "gpt2"})"),
              "c.json: field 'model_type' = \"gpt2\" is not supported (supported: llama, mistral, qwen2, mixtral, "
              "qwen2_moe, qwen3_moe, deepseek_v2, deepseek_v3)");
    EXPECT_EQ(error_of(R"({"architectures": ["FalconForCausalLM"]})"),
              "c.json: field 'architectures' = [\"FalconForCausalLM\"] is not supported (supported model_type: llama, "
              "mistral, qwen2, mixtral, qwen2_moe, qwen3_moe, deepseek_v2, deepseek_v3)");
    EXPECT_EQ(error_of("{}"),
              "c.json: neither 'model_type' nor 'architectures' tells the model family (supported model_type: llama, "
              "mistral, qwen2, mixtral, qwen2_moe, qwen3_moe, deepseek_v2, deepseek_v3)");
    EXPECT_EQ(error_of("[1]"), "c.json: holds array, not a JSON object (a Hugging Face config.json)");
    EXPECT_EQ(error_of("{"), "c.json: not valid JSON (a Hugging Face config.json is one JSON object)");
    EXPECT_EQ(error_of(R"({"model_type": "llama", "vocab_size": 100})"),
              "c.json: field 'max_position_embeddings' is missing (an integer 1..67108864 is required)");
    EXPECT_EQ(error_of(llama(R"(, "num_key_value_heads": "4")")),
              "c.json: field 'num_key_value_heads' = \"4\" must be an integer (allowed: 1..4)");
    EXPECT_EQ(error_of(llama(R"(, "num_key_value_heads": 8)")),
              "c.json: field 'num_key_value_heads' = 8 is out of range (allowed: 1..4)");
    EXPECT_EQ(error_of(llama(R"(, "sliding_window": 128)")),
              "c.json: field 'sliding_window' = 128 is not modelled: it changes the attention cost beyond 128 tokens "
              "(allowed: null, or at least max_position_embeddings = 256)");
    EXPECT_EQ(error_of(llama(R"(, "partial_rotary_factor": 0.5)")),
              "c.json: field 'partial_rotary_factor' = 0.5 is not modelled (allowed: 1.0)");
    EXPECT_EQ(error_of(llama(R"(, "tie_word_embeddings": 1)")),
              "c.json: field 'tie_word_embeddings' = 1 must be true or false");
}

TEST(HfConfig, ExpertFieldErrors) {
    const std::string qwen3 = R"({"model_type": "qwen3_moe", "vocab_size": 100, "max_position_embeddings": 256,
        "hidden_size": 32, "num_hidden_layers": 2, "intermediate_size": 64, "num_attention_heads": 4,
        "moe_intermediate_size": 16, "num_experts": 8, "num_experts_per_tok": 2)";
    EXPECT_EQ(parse_hf_config(qwen3 + "}", "c.json").hparams.n_expert, 8);
    EXPECT_EQ(error_of(qwen3 + R"(, "decoder_sparse_step": 2})"),
              "c.json: field 'decoder_sparse_step' = 2 is not modelled (allowed: 1, every layer has experts)");
    EXPECT_EQ(error_of(qwen3 + R"(, "mlp_only_layers": [0]})"),
              "c.json: field 'mlp_only_layers' = [0] is not modelled (allowed: [], every layer has experts)");
    EXPECT_EQ(error_of(R"({"model_type": "qwen3_moe", "vocab_size": 100, "max_position_embeddings": 256,
        "hidden_size": 32, "num_hidden_layers": 2, "intermediate_size": 64, "num_attention_heads": 4,
        "moe_intermediate_size": 16, "num_experts": 8, "num_experts_per_tok": 9})"),
              "c.json: field 'num_experts_per_tok' = 9 is out of range (allowed: 1..8)");
    const std::string ds = R"({"model_type": "deepseek_v3", "vocab_size": 100, "max_position_embeddings": 256,
        "hidden_size": 32, "num_hidden_layers": 2, "intermediate_size": 64, "num_attention_heads": 4,
        "moe_intermediate_size": 16, "n_routed_experts": 8, "num_experts_per_tok": 2, "kv_lora_rank": 16,
        "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 8)";
    EXPECT_EQ(parse_hf_config(ds + "}", "c.json").hparams.kv_lora_rank, 16);
    EXPECT_EQ(error_of(ds + R"(, "scoring_func": "relu"})"),
              "c.json: field 'scoring_func' = \"relu\" is not supported (allowed: softmax, sigmoid)");
    EXPECT_EQ(error_of(ds + R"(, "moe_layer_freq": 2})"),
              "c.json: field 'moe_layer_freq' = 2 is not modelled (allowed: 1, every layer after the dense ones)");
    EXPECT_EQ(error_of(R"({"model_type": "deepseek_v3", "vocab_size": 100, "max_position_embeddings": 256,
        "hidden_size": 32, "num_hidden_layers": 2, "intermediate_size": 64, "num_attention_heads": 4,
        "moe_intermediate_size": 16, "n_routed_experts": 8, "num_experts_per_tok": 2})"),
              "c.json: field 'kv_lora_rank' is missing (an integer 1..65536 is required)");
}

TEST(HfConfig, AnotherActivationWarns) {
    EXPECT_EQ(parse_hf_config(llama(R"(, "hidden_act": "gelu")"), "c.json").warnings,
              (std::vector<std::string>{"c.json: field 'hidden_act' = \"gelu\" is not modelled (every activation "
                                        "costs as SwiGLU's silu)"}));
}

TEST(HfConfig, UnknownFieldsWarn) {
    const HfConfig c = parse_hf_config(llama(R"(, "bos_token_id": 1, "initializer_range": 0.02, "fancy_new_thing": 3)"),
                                       "c.json");
    EXPECT_EQ(c.warnings,
              (std::vector<std::string>{"c.json: field 'fancy_new_thing' is not modelled (duet does not know it; ignored)"}));
}

TEST(HfConfig, MissingFile) {
    try {
        read_hf_config(data("nope/config.json"));
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), data("nope/config.json") +
                                             ": cannot open the Hugging Face config (expected a config.json file or a "
                                             "directory holding one)");
    }
}

// The presets are their public configs: shapes and parameter counts against the published totals
// (Mixtral 46.7B, Qwen3-30B-A3B 30.5B, Qwen3-235B-A22B 235B, DeepSeek-V3 671B without its MTP layer).
TEST(HfPresets, ShapesAndParameterCounts) {
    const Hparams& mx = *find_arch_preset("mixtral-8x7b");
    EXPECT_EQ(mx.n_expert, 8);
    EXPECT_EQ(mx.n_expert_used, 2);
    EXPECT_EQ(mx.n_ff_exp, 14336);
    EXPECT_NEAR(double(mx.n_params()) / 1e9, 46.70, 0.01);

    const Hparams& q30 = *find_arch_preset("qwen3-30b-a3b");
    EXPECT_EQ(q30.n_expert, 128);
    EXPECT_EQ(q30.n_expert_used, 8);
    EXPECT_EQ(q30.n_ff_exp, 768);
    EXPECT_EQ(q30.head_dim, 128);
    EXPECT_EQ(q30.n_embd, 2048);
    EXPECT_TRUE(q30.qk_norm);
    EXPECT_FALSE(mx.qk_norm);
    EXPECT_NEAR(double(q30.n_params()) / 1e9, 30.53, 0.01);

    const Hparams& q235 = *find_arch_preset("qwen3-235b-a22b");
    EXPECT_EQ(q235.n_layer, 94);
    EXPECT_EQ(q235.n_ff_exp, 1536);
    EXPECT_NEAR(double(q235.n_params()) / 1e9, 235.09, 0.01);

    const Hparams& ds = *find_arch_preset("deepseek-v3");
    EXPECT_EQ(ds.n_layer, 61);
    EXPECT_EQ(ds.n_layer_dense_lead, 3);
    EXPECT_EQ(ds.n_expert, 256);
    EXPECT_EQ(ds.n_ff_shexp, 2048);
    EXPECT_EQ(ds.kv_lora_rank, 512);
    EXPECT_EQ(ds.q_lora_rank, 1536);
    EXPECT_EQ(ds.expert_gating, ExpertGating::SIGMOID);
    EXPECT_NEAR(double(ds.n_params()) / 1e9, 671.03, 0.01);  // the main model, without the MTP block
    EXPECT_EQ(ds.n_expert_groups, 8);
    EXPECT_EQ(ds.n_expert_groups_used, 4);
    EXPECT_EQ(ds.n_layer_nextn, 1);
    EXPECT_EQ(model_shape(ds).n_layer, 61);  // the modelled graph's decode layers: not the MTP block
}

// A Mixtral GGUF as llama.cpp writes it (arch llama with llama.expert_count) is read as experts
// n_ff wide, softmax top-k renormalised (llama.cpp's src/models/llama.cpp), not as a dense llama.
TEST(HfPresets, MixtralGgufIsReadAsExperts) {
    const std::string path = std::string(DUET_BINARY_DIR) + "/hf_config_test_mixtral.gguf";
    format::GgufWriter w(path);
    write_hparams(w, *find_arch_preset("tiny-llama"));
    w.set_u32("llama.expert_count", 8);
    w.set_u32("llama.expert_used_count", 2);
    w.add_tensor_f32("token_embd.weight", DType::F32, {4}, std::vector<float>(4));
    w.write();
    const Hparams h = hparams_from_gguf(format::GgufFile::open(path));
    EXPECT_EQ(h.n_expert, 8);
    EXPECT_EQ(h.n_expert_used, 2);
    EXPECT_EQ(h.n_ff_exp, h.n_ff);
    EXPECT_TRUE(h.expert_weights_norm);
    EXPECT_EQ(h.expert_gating, ExpertGating::SOFTMAX);
    EXPECT_EQ(h.n_ff_shexp, 0);
}
