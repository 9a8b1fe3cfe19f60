#include "model/hparams.h"

#include <cmath>

#include "core/error.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "graph/tensor_catalogue.h"
#include "model/hparams_deepseek2.h"

namespace duet::model {

const char* arch_name(Arch a) {
    switch (a) {
        case Arch::LLAMA:
            return "llama";
        case Arch::QWEN2:
            return "qwen2";
        case Arch::QWEN2MOE:
            return "qwen2moe";
        case Arch::QWEN3MOE:
            return "qwen3moe";
        case Arch::DEEPSEEK2:
            return "deepseek2";
    }
    return "?";
}

const char* expert_gating_name(ExpertGating g) { return g == ExpertGating::SIGMOID ? "sigmoid" : "softmax"; }

std::string supported_arch_names() { return "llama, qwen2, qwen2moe, qwen3moe, deepseek2"; }

int64_t Hparams::n_params() const { return graph::count_params(model_shape(*this)); }

graph::ModelShape model_shape(const Hparams& hp, DType weight_dtype, DType kv_dtype, std::string name) {
    graph::ModelShape s;
    s.name = std::move(name);
    s.n_vocab = hp.n_vocab;
    s.n_embd = hp.n_embd;
    s.n_layer = hp.n_layer;
    s.n_head = hp.n_head;
    s.n_head_kv = hp.n_head_kv;
    s.n_ff = hp.n_ff;
    s.head_dim = hp.head_dim;
    s.tied_output = hp.tied_output;
    s.qkv_bias = hp.qkv_bias;
    s.rope_neox = hp.rope_neox;
    s.weight_dtype = weight_dtype;
    s.kv_dtype = kv_dtype;
    s.n_rot = hp.n_rot;
    s.has_rope_freqs = hp.has_rope_freqs;
    s.n_expert = hp.n_expert;
    s.n_expert_used = hp.n_expert_used;
    s.n_ff_exp = hp.n_ff_exp;
    s.n_ff_shexp = hp.n_ff_shexp;
    s.n_layer_dense_lead = hp.n_layer_dense_lead;
    s.shared_expert_gate = hp.shared_expert_gate;
    s.qk_norm = hp.qk_norm;
    s.q_lora_rank = hp.q_lora_rank;
    s.kv_lora_rank = hp.kv_lora_rank;
    s.qk_rope_head_dim = hp.qk_rope_head_dim;
    s.qk_nope_head_dim = hp.qk_nope_head_dim;
    s.v_head_dim = hp.v_head_dim;
    s.mla_kv_b = hp.mla_kv_b;
    s.expert_probs_bias = hp.expert_probs_bias;
    return s;
}

namespace {

void check_range(std::string_view source, const char* name, int64_t v, int64_t lo, int64_t hi) {
    if (v < lo || v > hi) fail("{}: {} = {} is out of range (allowed: {}..{})", source, name, v, lo, hi);
}

}  // namespace

void Hparams::validate(std::string_view source) const {
    check_range(source, "n_vocab", n_vocab, 1, int64_t(1) << 24);
    check_range(source, "n_ctx_train", n_ctx_train, 1, int64_t(1) << 26);
    check_range(source, "n_embd", n_embd, 1, int64_t(1) << 20);
    check_range(source, "n_layer", n_layer, 1, 4096);
    check_range(source, "n_layer_nextn", n_layer_nextn, 0, 4096 - n_layer);
    check_range(source, "n_head", n_head, 1, 4096);
    check_range(source, "n_head_kv", n_head_kv, 1, n_head);
    check_range(source, "n_ff", n_ff, 1, int64_t(1) << 22);
    check_range(source, "head_dim", head_dim, 1, 4096);
    check_range(source, "n_rot", n_rot, 2, head_dim);
    if (n_head % n_head_kv != 0)
        fail("{}: n_head = {} is not a multiple of n_head_kv = {} (grouped-query attention needs whole groups)", source,
             n_head, n_head_kv);
    if (n_rot % 2 != 0) fail("{}: n_rot = {} must be even (RoPE rotates pairs)", source, n_rot);
    if (!(norm_eps > 0.0f) || !std::isfinite(norm_eps) || norm_eps > 1.0f)
        fail("{}: norm_eps = {} is out of range (allowed: > 0 and <= 1)", source, norm_eps);
    if (!(rope_freq_base > 0.0f) || !std::isfinite(rope_freq_base))
        fail("{}: rope_freq_base = {} must be a positive finite number", source, rope_freq_base);
    if (!(rope_freq_scale > 0.0f) || !std::isfinite(rope_freq_scale))
        fail("{}: rope_freq_scale = {} must be a positive finite number", source, rope_freq_scale);
    if (arch == Arch::QWEN2 && !rope_neox) fail("{}: qwen2 uses NEOX-order RoPE (rope_neox must be true)", source);
    if (is_moe()) {
        check_range(source, "n_expert", n_expert, 1, 4096);
        check_range(source, "n_expert_used", n_expert_used, 1, n_expert);
        check_range(source, "n_ff_exp", n_ff_exp, 1, int64_t(1) << 22);
        check_range(source, "n_expert_shared", n_expert_shared, 0, 4096);
        check_range(source, "n_ff_shexp", n_ff_shexp, n_expert_shared > 0 ? 1 : 0,
                    n_expert_shared > 0 ? int64_t(1) << 22 : 0);
        check_range(source, "n_layer_dense_lead", n_layer_dense_lead, 0, n_layer);
        if (!(expert_weights_scale > 0.0f) || !std::isfinite(expert_weights_scale))
            fail("{}: expert_weights_scale = {} must be a positive finite number", source, expert_weights_scale);
        if (n_expert_groups > 1) {
            check_range(source, "n_expert_groups", n_expert_groups, 2, n_expert / 2);
            check_range(source, "n_expert_groups_used", n_expert_groups_used, 1, n_expert_groups);
            if (n_expert % n_expert_groups != 0)
                fail("{}: n_expert = {} is not a multiple of n_expert_groups = {} (every group has as many experts)",
                     source, n_expert, n_expert_groups);
            if (n_expert_groups_used * (n_expert / n_expert_groups) < n_expert_used)
                fail("{}: n_expert_groups_used = {} groups of {} experts hold fewer than n_expert_used = {}", source,
                     n_expert_groups_used, n_expert / n_expert_groups, n_expert_used);
        }
    } else if (n_expert_used != 0 || n_ff_exp != 0 || n_expert_shared != 0 || n_layer_dense_lead != 0 ||
               n_expert_groups > 1) {
        fail("{}: expert fields are set but n_expert = 0 (a dense model has none)", source);
    }
    if (is_mla()) {
        check_range(source, "kv_lora_rank", kv_lora_rank, 1, int64_t(1) << 16);
        check_range(source, "q_lora_rank", q_lora_rank, 0, int64_t(1) << 16);
        check_range(source, "qk_rope_head_dim", qk_rope_head_dim, 2, 4096);
        check_range(source, "qk_nope_head_dim", qk_nope_head_dim, 1, 4096);
        check_range(source, "v_head_dim", v_head_dim, 1, 4096);
        if (qk_rope_head_dim % 2 != 0)
            fail("{}: qk_rope_head_dim = {} must be even (RoPE rotates pairs)", source, qk_rope_head_dim);
        if (head_dim != qk_nope_head_dim + qk_rope_head_dim || n_rot != qk_rope_head_dim)
            fail("{}: latent attention needs head_dim = qk_nope_head_dim + qk_rope_head_dim ({} + {}) and n_rot = "
                 "qk_rope_head_dim (got head_dim = {}, n_rot = {})",
                 source, qk_nope_head_dim, qk_rope_head_dim, head_dim, n_rot);
    }
}

bool operator==(const Hparams& a, const Hparams& b) {
    return a.arch == b.arch && a.arch_name == b.arch_name && a.n_vocab == b.n_vocab && a.n_ctx_train == b.n_ctx_train &&
           a.n_embd == b.n_embd && a.n_layer == b.n_layer && a.n_head == b.n_head && a.n_head_kv == b.n_head_kv &&
           a.n_ff == b.n_ff && a.head_dim == b.head_dim && a.n_rot == b.n_rot && a.norm_eps == b.norm_eps &&
           a.rope_freq_base == b.rope_freq_base && a.rope_freq_scale == b.rope_freq_scale &&
           a.rope_neox == b.rope_neox && a.qkv_bias == b.qkv_bias && a.tied_output == b.tied_output &&
           a.has_rope_freqs == b.has_rope_freqs && a.n_expert == b.n_expert && a.n_expert_used == b.n_expert_used &&
           a.n_ff_exp == b.n_ff_exp && a.n_expert_shared == b.n_expert_shared && a.n_ff_shexp == b.n_ff_shexp &&
           a.n_layer_dense_lead == b.n_layer_dense_lead && a.expert_gating == b.expert_gating &&
           a.expert_weights_norm == b.expert_weights_norm && a.expert_weights_scale == b.expert_weights_scale &&
           a.shared_expert_gate == b.shared_expert_gate && a.q_lora_rank == b.q_lora_rank &&
           a.kv_lora_rank == b.kv_lora_rank && a.qk_rope_head_dim == b.qk_rope_head_dim &&
           a.qk_nope_head_dim == b.qk_nope_head_dim && a.v_head_dim == b.v_head_dim && a.qk_norm == b.qk_norm &&
           a.expert_probs_bias == b.expert_probs_bias && a.n_expert_groups == b.n_expert_groups &&
           a.n_expert_groups_used == b.n_expert_groups_used && a.n_layer_nextn == b.n_layer_nextn &&
           a.mla_kv_b == b.mla_kv_b && a.rope_yarn == b.rope_yarn &&
           a.rope_yarn_orig_ctx == b.rope_yarn_orig_ctx && a.rope_yarn_log_mul == b.rope_yarn_log_mul &&
           a.rope_yarn_beta_fast == b.rope_yarn_beta_fast && a.rope_yarn_beta_slow == b.rope_yarn_beta_slow;
}

namespace {

// The expert keys of llama.cpp's loader (llama-arch.cpp LLM_KV_EXPERT_*) and each family's
// routing rule as llama.cpp's graphs apply it (src/models/llama.cpp, qwen2moe.cpp, qwen3moe.cpp,
// build_moe_ffn in llama-graph.cpp): softmax over all experts, the top k, then
//   llama (Mixtral): renormalised to sum 1 (norm_w = true); experts n_ff wide
//   qwen2moe: not renormalised; a shared expert of expert_shared_feed_forward_length (default
//             n_ff), scaled by sigmoid(x . ffn_gate_inp_shexp)
//   qwen3moe: renormalised (llama.cpp passes norm_w = true whatever norm_topk_prob said)
// n_ff_exp is expert_feed_forward_length (default n_ff / n_expert_used, as llama.cpp).
void read_experts(const format::GgufFile& f, Hparams& hp) {
    const std::string a = hp.arch_name + ".";
    const bool moe_arch = hp.arch == Arch::QWEN2MOE || hp.arch == Arch::QWEN3MOE;
    const int64_t n_expert = f.find_int(a + "expert_count").value_or(0);
    if (n_expert <= 0) {
        if (moe_arch) fail("{}: metadata key '{}expert_count' is missing or 0 ({} has experts)", f.path(), a, hp.arch_name);
        return;
    }
    if (hp.arch == Arch::QWEN2)
        fail("{}: metadata key '{}expert_count' = {}: a qwen2 file has no experts (qwen2moe does)", f.path(), a,
             n_expert);
    hp.n_expert = n_expert;
    hp.n_expert_used = f.get_int(a + "expert_used_count");
    if (hp.n_expert_used < 1 || hp.n_expert_used > hp.n_expert)
        fail("{}: metadata key '{}expert_used_count' = {} is out of range (allowed: 1..{})", f.path(), a,
             hp.n_expert_used, hp.n_expert);
    const auto ff_exp = f.find_int(a + "expert_feed_forward_length");
    hp.n_ff_exp = hp.arch == Arch::LLAMA ? hp.n_ff : ff_exp.value_or(hp.n_ff / hp.n_expert_used);
    hp.expert_gating = ExpertGating::SOFTMAX;
    hp.expert_weights_norm = hp.arch != Arch::QWEN2MOE;
    hp.expert_weights_scale = float(f.find_float(a + "expert_weights_scale").value_or(1.0));
    if (hp.arch == Arch::QWEN2MOE) {
        hp.n_expert_shared = 1;
        hp.n_ff_shexp = f.find_int(a + "expert_shared_feed_forward_length").value_or(hp.n_ff);
        hp.shared_expert_gate = true;
    }
    hp.qk_norm = hp.arch == Arch::QWEN3MOE;
}

// head_dim, n_rot, RoPE scaling and order of the families with ordinary attention.
void read_attention_shape(const format::GgufFile& f, Hparams& hp) {
    const std::string& path = f.path();
    const std::string a = hp.arch_name + ".";
    if (auto kl = f.find_int(a + "attention.key_length")) {
        hp.head_dim = *kl;
        auto vl = f.find_int(a + "attention.value_length");
        if (vl && *vl != *kl)
            fail("{}: metadata key '{}attention.value_length' = {} differs from key_length = {} (unsupported)", path, a,
                 *vl, *kl);
    } else {
        if (hp.n_embd % hp.n_head != 0)
            fail("{}: {}embedding_length = {} is not a multiple of {}attention.head_count = {}", path, a, hp.n_embd, a,
                 hp.n_head);
        hp.head_dim = hp.n_embd / hp.n_head;
    }
    hp.n_rot = f.find_int(a + "rope.dimension_count").value_or(hp.head_dim);

    // RoPE scaling: "none" and "linear" are plain arithmetic; Llama-3.1's scaling reaches us
    // as the rope_freqs.weight tensor; YaRN and others change the attention itself.
    std::string scaling = f.find_string(a + "rope.scaling.type").value_or("none");
    if (scaling == "linear") {
        double factor = f.get_float(a + "rope.scaling.factor");
        if (!(factor > 0.0) || !std::isfinite(factor))
            fail("{}: metadata key '{}rope.scaling.factor' = {} must be a positive number", path, a, factor);
        hp.rope_freq_scale = float(1.0 / factor);
    } else if (scaling == "none" || scaling.empty()) {
        if (auto old = f.find_float(a + "rope.scale_linear")) hp.rope_freq_scale = float(1.0 / *old);
    } else {
        fail("{}: metadata key '{}rope.scaling.type' = '{}' is not supported (supported: none, linear)", path, a,
             scaling);
    }

    hp.rope_neox = hp.arch == Arch::QWEN2 || hp.arch == Arch::QWEN2MOE || hp.arch == Arch::QWEN3MOE;
}

}  // namespace

Hparams hparams_from_gguf(const format::GgufFile& f) {
    const std::string& path = f.path();
    Hparams hp;
    hp.arch_name = f.get_string("general.architecture");
    if (hp.arch_name == "llama") {
        hp.arch = Arch::LLAMA;
    } else if (hp.arch_name == "qwen2") {
        hp.arch = Arch::QWEN2;
    } else if (hp.arch_name == "qwen2moe") {
        hp.arch = Arch::QWEN2MOE;
    } else if (hp.arch_name == "qwen3moe") {
        hp.arch = Arch::QWEN3MOE;
    } else if (hp.arch_name == "deepseek2") {
        hp.arch = Arch::DEEPSEEK2;
    } else {
        fail("{}: architecture '{}' is not supported (supported: {})", path, hp.arch_name, supported_arch_names());
    }
    const std::string a = hp.arch_name + ".";
    hp.n_ctx_train = f.get_int(a + "context_length");
    hp.n_embd = f.get_int(a + "embedding_length");
    hp.n_layer = f.get_int(a + "block_count");
    hp.n_ff = f.get_int(a + "feed_forward_length");
    hp.n_head = f.get_int(a + "attention.head_count");
    hp.n_head_kv = f.find_int(a + "attention.head_count_kv").value_or(hp.n_head);
    hp.norm_eps = float(f.get_float(a + "attention.layer_norm_rms_epsilon"));
    hp.rope_freq_base = float(f.find_float(a + "rope.freq_base").value_or(10000.0));
    if (hp.n_head <= 0) fail("{}: metadata key '{}attention.head_count' = {} must be positive", path, a, hp.n_head);
    if (hp.arch == Arch::DEEPSEEK2) {
        read_deepseek2(f, hp);
    } else {
        read_attention_shape(f, hp);
        read_experts(f, hp);
    }
    hp.tied_output = f.find_tensor("output.weight") == nullptr;
    hp.has_rope_freqs = f.find_tensor("rope_freqs.weight") != nullptr;
    hp.qkv_bias = f.find_tensor(graph::gguf_name(*graph::bias_spec(graph::WeightRole::ATTN_Q), 0)) != nullptr;

    if (auto nv = f.find_int(a + "vocab_size")) {
        hp.n_vocab = *nv;
    } else if (f.has("tokenizer.ggml.tokens")) {
        const format::GgufValue* v = f.find("tokenizer.ggml.tokens");
        if (v->type != format::GgufType::ARRAY)
            fail("{}: metadata key 'tokenizer.ggml.tokens' holds {}, expected an array of strings", path,
                 format::gguf_type_name(v->type));
        hp.n_vocab = int64_t(std::get<std::shared_ptr<format::GgufArray>>(v->v)->items.size());
    } else if (const auto* te = f.find_tensor("token_embd.weight"); te && te->shape.size() == 2) {
        hp.n_vocab = te->shape[1];
    } else {
        fail("{}: cannot tell the vocabulary size (no '{}vocab_size', 'tokenizer.ggml.tokens' or token_embd.weight)",
             path, a);
    }
    hp.validate(path);
    return hp;
}

void write_hparams(format::GgufWriter& w, const Hparams& hp) {
    const std::string a = hp.arch_name + ".";
    w.set_string("general.architecture", hp.arch_name);
    w.set_u32(a + "vocab_size", uint32_t(hp.n_vocab));
    w.set_u32(a + "context_length", uint32_t(hp.n_ctx_train));
    w.set_u32(a + "embedding_length", uint32_t(hp.n_embd));
    w.set_u32(a + "block_count", uint32_t(hp.n_layer + hp.n_layer_nextn));
    w.set_u32(a + "feed_forward_length", uint32_t(hp.n_ff));
    w.set_u32(a + "attention.head_count", uint32_t(hp.n_head));
    // deepseek2: 1, as llama.cpp's converter writes it (latent attention runs as MQA over the one
    // latent; llama.cpp's graph fails on any other count). The reader gives every head its own K/V.
    w.set_u32(a + "attention.head_count_kv", uint32_t(hp.arch == Arch::DEEPSEEK2 ? 1 : hp.n_head_kv));
    if (hp.arch == Arch::DEEPSEEK2) {
        write_deepseek2(w, hp);
    } else if (hp.head_dim * hp.n_head != hp.n_embd) {
        w.set_u32(a + "attention.key_length", uint32_t(hp.head_dim));
        w.set_u32(a + "attention.value_length", uint32_t(hp.head_dim));
    }
    w.set_f32(a + "attention.layer_norm_rms_epsilon", hp.norm_eps);
    w.set_f32(a + "rope.freq_base", hp.rope_freq_base);
    w.set_u32(a + "rope.dimension_count", uint32_t(hp.n_rot));
    if (hp.rope_freq_scale != 1.0f && !hp.rope_yarn) {
        w.set_string(a + "rope.scaling.type", "linear");
        w.set_f32(a + "rope.scaling.factor", 1.0f / hp.rope_freq_scale);
    }
    if (hp.is_moe() && hp.arch != Arch::DEEPSEEK2) {  // the keys read_experts reads; the routing rule is the family's
        w.set_u32(a + "expert_count", uint32_t(hp.n_expert));
        w.set_u32(a + "expert_used_count", uint32_t(hp.n_expert_used));
        if (hp.arch != Arch::LLAMA) w.set_u32(a + "expert_feed_forward_length", uint32_t(hp.n_ff_exp));
        if (hp.n_ff_shexp > 0) w.set_u32(a + "expert_shared_feed_forward_length", uint32_t(hp.n_ff_shexp));
        if (hp.expert_weights_scale != 1.0f) w.set_f32(a + "expert_weights_scale", hp.expert_weights_scale);
    }
}

}  // namespace duet::model
