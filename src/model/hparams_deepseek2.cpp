#include "model/hparams_deepseek2.h"

#include <cmath>

#include "core/error.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "graph/tensor_catalogue.h"

namespace duet::model {
namespace {

// llama.cpp's llama_expert_gating_func_type values.
constexpr int64_t kGatingSoftmax = 1, kGatingSigmoid = 2;

void read_mla_heads(const format::GgufFile& f, const std::string& a, Hparams& hp) {
    hp.kv_lora_rank = f.get_int(a + "attention.kv_lora_rank");
    hp.q_lora_rank = f.find_int(a + "attention.q_lora_rank").value_or(0);
    hp.qk_rope_head_dim = f.get_int(a + "rope.dimension_count");
    if (auto k_mla = f.find_int(a + "attention.key_length_mla")) {
        hp.head_dim = *k_mla;
        hp.v_head_dim = f.get_int(a + "attention.value_length_mla");
    } else {
        hp.head_dim = f.get_int(a + "attention.key_length");
        hp.v_head_dim = f.get_int(a + "attention.value_length");
    }
    hp.qk_nope_head_dim = hp.head_dim - hp.qk_rope_head_dim;
    if (hp.qk_nope_head_dim < 1)
        fail(
            "{}: metadata key '{}rope.dimension_count' = {} leaves no un-rotated part of the {}-wide query head "
            "(key_length_mla, or key_length in older files)",
            f.path(), a, hp.qk_rope_head_dim, hp.head_dim);
    hp.n_rot = hp.qk_rope_head_dim;
    hp.n_head_kv = hp.n_head;  // every head has its own K and V, up-projected from the one latent
}

// Group-limited routing (llama.cpp: n_expert_groups, n_group_used; DeepSeek-V3's n_group,
// topk_group). Absent, 0 or 1 group: plain top-k.
void read_groups(const format::GgufFile& f, const std::string& a, Hparams& hp) {
    const int64_t groups = f.find_int(a + "expert_group_count").value_or(0);
    if (groups <= 1) {
        if (groups < 0)
            fail("{}: metadata key '{}expert_group_count' = {} is out of range (allowed: 0 or 1 for no groups, or a "
                 "divisor of 'expert_count' = {} leaving at least 2 experts per group)",
                 f.path(), a, groups, hp.n_expert);
        return;
    }
    if (hp.n_expert % groups != 0 || hp.n_expert / groups < 2)
        fail("{}: metadata key '{}expert_group_count' = {} does not split 'expert_count' = {} into groups of at least "
             "2 experts (allowed: a divisor of expert_count, at most expert_count / 2)",
             f.path(), a, groups, hp.n_expert);
    const int64_t used = f.find_int(a + "expert_group_used_count").value_or(groups);
    if (used < 1 || used > groups)
        fail("{}: metadata key '{}expert_group_used_count' = {} is out of range (allowed: 1..{}, the groups of "
             "'expert_group_count')",
             f.path(), a, used, groups);
    if (used * (hp.n_expert / groups) < hp.n_expert_used)
        fail("{}: metadata key '{}expert_group_used_count' = {} keeps {} experts, fewer than 'expert_used_count' = {} "
             "(allowed: expert_group_used_count x experts per group >= expert_used_count)",
             f.path(), a, used, used * (hp.n_expert / groups), hp.n_expert_used);
    hp.n_expert_groups = groups;
    hp.n_expert_groups_used = used;
}

// Multi-token-prediction blocks: llama.cpp counts them in block_count and skips them at inference.
void read_nextn(const format::GgufFile& f, const std::string& a, Hparams& hp) {
    const int64_t nextn = f.find_int(a + "nextn_predict_layers").value_or(0);
    if (nextn < 0 || nextn >= hp.n_layer)
        fail("{}: metadata key '{}nextn_predict_layers' = {} is out of range (allowed: 0..{}, fewer than "
             "'{}block_count' = {})",
             f.path(), a, nextn, hp.n_layer - 1, a, hp.n_layer);
    hp.n_layer_nextn = nextn;
    hp.n_layer -= nextn;
}

void read_routing(const format::GgufFile& f, const std::string& a, Hparams& hp) {
    hp.n_expert = f.get_int(a + "expert_count");
    hp.n_expert_used = f.get_int(a + "expert_used_count");
    if (hp.n_expert < 1 || hp.n_expert_used < 1 || hp.n_expert_used > hp.n_expert)
        fail(
            "{}: metadata keys '{}expert_count' = {}, 'expert_used_count' = {} are out of range (allowed: 1 <= "
            "used <= count)",
            f.path(), a, hp.n_expert, hp.n_expert_used);
    hp.n_ff_exp = f.get_int(a + "expert_feed_forward_length");
    hp.n_expert_shared = f.find_int(a + "expert_shared_count").value_or(0);
    hp.n_ff_shexp = hp.n_expert_shared * hp.n_ff_exp;
    hp.n_layer_dense_lead = f.find_int(a + "leading_dense_block_count").value_or(0);
    hp.expert_weights_scale = float(f.find_float(a + "expert_weights_scale").value_or(1.0));
    hp.expert_weights_norm = f.find_bool(a + "expert_weights_norm").value_or(false);
    const int64_t gating = f.find_int(a + "expert_gating_func").value_or(kGatingSoftmax);
    if (gating != kGatingSoftmax && gating != kGatingSigmoid)
        fail("{}: metadata key '{}expert_gating_func' = {} is not supported (allowed: 1 = softmax, 2 = sigmoid)",
             f.path(), a, gating);
    hp.expert_gating = gating == kGatingSigmoid ? ExpertGating::SIGMOID : ExpertGating::SOFTMAX;
    read_groups(f, a, hp);
}

// YaRN as llama.cpp applies it to deepseek2: the file's yarn_log_multiplier is 0.1 x DeepSeek's
// mscale_all_dim (the converter's factor, which llama.cpp's loader divides back out).
void read_rope_scaling(const format::GgufFile& f, const std::string& a, Hparams& hp) {
    const std::string scaling = f.find_string(a + "rope.scaling.type").value_or("none");
    if (scaling == "none" || scaling.empty()) return;
    if (scaling != "yarn")
        fail("{}: metadata key '{}rope.scaling.type' = '{}' is not supported for deepseek2 (supported: none, yarn)",
             f.path(), a, scaling);
    const double factor = f.get_float(a + "rope.scaling.factor");
    if (!(factor >= 1.0) || !std::isfinite(factor))
        fail("{}: metadata key '{}rope.scaling.factor' = {} is out of range (allowed: >= 1 with yarn)", f.path(), a,
             factor);
    if (auto af = f.find_float(a + "rope.scaling.attn_factor"); af && *af != 1.0)
        fail("{}: metadata key '{}rope.scaling.attn_factor' = {} is not supported (allowed: 1)", f.path(), a, *af);
    hp.rope_yarn = true;
    hp.rope_freq_scale = float(1.0 / factor);
    hp.rope_yarn_orig_ctx = f.find_int(a + "rope.scaling.original_context_length").value_or(hp.n_ctx_train);
    hp.rope_yarn_log_mul = float(f.find_float(a + "rope.scaling.yarn_log_multiplier").value_or(0.0) / 0.1);
    hp.rope_yarn_beta_fast = float(f.find_float(a + "rope.scaling.yarn_beta_fast").value_or(32.0));
    hp.rope_yarn_beta_slow = float(f.find_float(a + "rope.scaling.yarn_beta_slow").value_or(1.0));
    if (hp.rope_yarn_orig_ctx < 1)
        fail("{}: metadata key '{}rope.scaling.original_context_length' = {} must be positive", f.path(), a,
             hp.rope_yarn_orig_ctx);
}

}  // namespace

void read_deepseek2(const format::GgufFile& f, Hparams& hp) {
    const std::string a = hp.arch_name + ".";
    read_nextn(f, a, hp);
    read_mla_heads(f, a, hp);
    read_routing(f, a, hp);
    read_rope_scaling(f, a, hp);
    hp.rope_neox = false;  // llama.cpp rotates deepseek2's rope part in adjacent pairs (LLAMA_ROPE_TYPE_NORM)
    using graph::WeightRole;
    const auto has = [&](WeightRole r, int64_t layer) {
        return f.find_tensor(graph::gguf_name(graph::weight_spec(r), layer)) != nullptr;
    };
    hp.expert_probs_bias = has(WeightRole::FFN_EXP_PROBS_B, hp.n_layer_dense_lead);  // the first expert layer's
    hp.mla_kv_b = has(WeightRole::ATTN_KV_B, 0);  // W_kv_b whole (the engine splits it at load)
}

void write_deepseek2(format::GgufWriter& w, const Hparams& hp) {
    const std::string a = hp.arch_name + ".";
    w.set_u32(a + "attention.kv_lora_rank", uint32_t(hp.kv_lora_rank));
    if (hp.q_lora_rank > 0) w.set_u32(a + "attention.q_lora_rank", uint32_t(hp.q_lora_rank));
    w.set_u32(a + "attention.key_length", uint32_t(hp.kv_lora_rank + hp.qk_rope_head_dim));
    w.set_u32(a + "attention.value_length", uint32_t(hp.kv_lora_rank));
    w.set_u32(a + "attention.key_length_mla", uint32_t(hp.head_dim));
    w.set_u32(a + "attention.value_length_mla", uint32_t(hp.v_head_dim));
    w.set_u32(a + "expert_count", uint32_t(hp.n_expert));
    w.set_u32(a + "expert_used_count", uint32_t(hp.n_expert_used));
    w.set_u32(a + "expert_feed_forward_length", uint32_t(hp.n_ff_exp));
    w.set_u32(a + "expert_shared_count", uint32_t(hp.n_expert_shared));
    w.set_u32(a + "leading_dense_block_count", uint32_t(hp.n_layer_dense_lead));
    w.set_f32(a + "expert_weights_scale", hp.expert_weights_scale);
    w.set_bool(a + "expert_weights_norm", hp.expert_weights_norm);
    if (hp.n_expert_groups > 1) {
        w.set_u32(a + "expert_group_count", uint32_t(hp.n_expert_groups));
        w.set_u32(a + "expert_group_used_count", uint32_t(hp.n_expert_groups_used));
    }
    if (hp.n_layer_nextn > 0) w.set_u32(a + "nextn_predict_layers", uint32_t(hp.n_layer_nextn));
    if (hp.rope_yarn) {
        w.set_string(a + "rope.scaling.type", "yarn");
        w.set_f32(a + "rope.scaling.factor", 1.0f / hp.rope_freq_scale);
        w.set_u32(a + "rope.scaling.original_context_length", uint32_t(hp.rope_yarn_orig_ctx));
        w.set_f32(a + "rope.scaling.yarn_log_multiplier", 0.1f * hp.rope_yarn_log_mul);
    }
    w.set_u32(a + "expert_gating_func",
              uint32_t(hp.expert_gating == ExpertGating::SIGMOID ? kGatingSigmoid : kGatingSoftmax));
}

}  // namespace duet::model
