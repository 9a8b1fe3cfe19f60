#include "model/arch_presets.h"

#include "core/error.h"
#include "model/hf_config.h"

namespace duet::model {
namespace {

struct Shape {
    int64_t n_vocab, n_ctx_train, n_embd, n_layer, n_head, n_head_kv, n_ff, head_dim;
    float norm_eps, rope_freq_base;
};

Hparams make(Arch arch, const Shape& s, bool tied, bool rope_freqs) {
    Hparams hp;
    hp.arch = arch;
    hp.arch_name = arch_name(arch);
    hp.n_vocab = s.n_vocab;
    hp.n_ctx_train = s.n_ctx_train;
    hp.n_embd = s.n_embd;
    hp.n_layer = s.n_layer;
    hp.n_head = s.n_head;
    hp.n_head_kv = s.n_head_kv;
    hp.n_ff = s.n_ff;
    hp.head_dim = s.head_dim;
    hp.n_rot = s.head_dim;
    hp.norm_eps = s.norm_eps;
    hp.rope_freq_base = s.rope_freq_base;
    hp.rope_freq_scale = 1.0f;
    hp.rope_neox = arch == Arch::QWEN2;
    hp.qkv_bias = arch == Arch::QWEN2;
    hp.tied_output = tied;
    hp.has_rope_freqs = rope_freqs;
    return hp;
}

// The experts of a tiny preset, with its family's routing rule (as hparams_from_gguf sets it).
Hparams moe(Hparams hp, int64_t n_expert, int64_t n_used, int64_t n_ff_exp, int64_t n_ff_shexp) {
    hp.n_expert = n_expert;
    hp.n_expert_used = n_used;
    hp.n_ff_exp = n_ff_exp;
    hp.expert_weights_norm = hp.arch != Arch::QWEN2MOE;
    if (n_ff_shexp > 0) {
        hp.n_expert_shared = 1;
        hp.n_ff_shexp = n_ff_shexp;
        hp.shared_expert_gate = hp.arch == Arch::QWEN2MOE;
    }
    hp.rope_neox = hp.arch != Arch::LLAMA;
    hp.qkv_bias = hp.arch == Arch::QWEN2MOE;
    hp.qk_norm = hp.arch == Arch::QWEN3MOE;
    return hp;
}

// DeepSeek-V2/V3's block at test size (as hparams_from_gguf reads a deepseek2 file): a low-rank
// query, the latent KV (kv_lora_rank 64 + a 32-wide RoPE key: rows of 96, whole int8 KV blocks),
// 8 experts top-2 with sigmoid gating, a selection bias, renormalised and scaled by 2.5, one shared
// expert, the first layer dense. Widths are multiples of 32 so every 32-block dtype applies.
Hparams deepseek2_tiny() {
    Hparams hp = make(Arch::DEEPSEEK2, {448, 1024, 64, 2, 4, 4, 96, 64, 1e-6f, 10000.0f}, false, false);
    hp.q_lora_rank = 32;
    hp.kv_lora_rank = 64;
    hp.qk_rope_head_dim = 32;
    hp.qk_nope_head_dim = 32;
    hp.v_head_dim = 32;
    hp.n_rot = 32;
    hp.n_expert = 8;
    hp.n_expert_used = 2;
    hp.n_ff_exp = 32;
    hp.n_expert_shared = 1;
    hp.n_ff_shexp = 32;
    hp.n_layer_dense_lead = 1;
    hp.expert_gating = ExpertGating::SIGMOID;
    hp.expert_weights_norm = true;
    hp.expert_weights_scale = 2.5f;
    hp.expert_probs_bias = true;
    return hp;
}

// tiny-deepseek2 with YaRN as DeepSeek-V3's files carry it (factor 4 over an original context of
// 256, mscale_all_dim 1): the rotation of its 16 RoPE pairs ramps from extrapolated (pair 0) to
// interpolated (pairs 7 and up), and the attention scale gains (1 + 0.1 ln 4)^2.
Hparams deepseek2_tiny_yarn() {
    Hparams hp = deepseek2_tiny();
    hp.rope_yarn = true;
    hp.rope_freq_scale = 0.25f;
    hp.rope_yarn_orig_ctx = 256;
    hp.rope_yarn_log_mul = 1.0f;
    return hp;
}

// DeepSeek-V3's structure at test size: tiny-deepseek2 with group-limited routing (the 8 experts
// in 4 groups of 2, the best 2 groups kept, top-2 among their 4 experts) and one multi-token-
// prediction block after its 2 layers (block_count 3, nextn_predict_layers 1).
Hparams deepseek3_tiny() {
    Hparams hp = deepseek2_tiny();
    hp.n_expert_groups = 4;
    hp.n_expert_groups_used = 2;
    hp.n_layer_nextn = 1;
    return hp;
}

// Mixture-of-Experts and latent-attention models of real shapes: each is its public
// config.json (the fields that shape the model, values as published) read by the same reader
// as `--model config.json` (model/hf_config.h), so a preset and its file cannot disagree.
struct HfPreset {
    const char* name;
    const char* description;
    const char* config_json;
    TokenizerKind tokenizer;
    const char* tokenizer_pre;
    const char* chat_template;
};

constexpr HfPreset kHfPresets[] = {
    {"mixtral-8x7b",
     "Mixtral-8x7B (https://huggingface.co/mistralai/Mixtral-8x7B-v0.1/blob/main/config.json): 8 experts, top-2",
     R"({"architectures": ["MixtralForCausalLM"], "hidden_act": "silu", "hidden_size": 4096,
         "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mixtral",
         "num_attention_heads": 32, "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8,
         "num_local_experts": 8, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "sliding_window": null,
         "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 32000})",
     TokenizerKind::SPM, "", "mistral"},
    {"qwen3-30b-a3b",
     "Qwen3-30B-A3B (https://huggingface.co/Qwen/Qwen3-30B-A3B/blob/main/config.json): 128 experts, top-8",
     R"({"architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false, "decoder_sparse_step": 1,
         "head_dim": 128, "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 6144,
         "max_position_embeddings": 40960, "max_window_layers": 48, "mlp_only_layers": [], "model_type": "qwen3_moe",
         "moe_intermediate_size": 768, "norm_topk_prob": true, "num_attention_heads": 32, "num_experts": 128,
         "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4, "rms_norm_eps": 1e-06,
         "rope_scaling": null, "rope_theta": 1000000.0, "sliding_window": null, "tie_word_embeddings": false,
         "torch_dtype": "bfloat16", "use_sliding_window": false, "vocab_size": 151936})",
     TokenizerKind::BPE, "qwen2", "chatml"},
    {"qwen3-235b-a22b",
     "Qwen3-235B-A22B (https://huggingface.co/Qwen/Qwen3-235B-A22B/blob/main/config.json): 128 experts, top-8",
     R"({"architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false, "decoder_sparse_step": 1,
         "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 12288,
         "max_position_embeddings": 40960, "max_window_layers": 94, "mlp_only_layers": [], "model_type": "qwen3_moe",
         "moe_intermediate_size": 1536, "norm_topk_prob": true, "num_attention_heads": 64, "num_experts": 128,
         "num_experts_per_tok": 8, "num_hidden_layers": 94, "num_key_value_heads": 4, "rms_norm_eps": 1e-06,
         "rope_scaling": null, "rope_theta": 1000000.0, "sliding_window": null, "tie_word_embeddings": false,
         "torch_dtype": "bfloat16", "use_sliding_window": false, "vocab_size": 151936})",
     TokenizerKind::BPE, "qwen2", "chatml"},
    {"deepseek-v3",
     "DeepSeek-V3 671B (https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json): MLA, 256 experts "
     "top-8 + 1 shared, 3 dense-first layers",
     R"({"architectures": ["DeepseekV3ForCausalLM"], "attention_bias": false, "first_k_dense_replace": 3,
         "hidden_act": "silu", "hidden_size": 7168, "intermediate_size": 18432, "kv_lora_rank": 512,
         "max_position_embeddings": 163840, "model_type": "deepseek_v3", "moe_intermediate_size": 2048,
         "moe_layer_freq": 1, "n_group": 8, "n_routed_experts": 256, "n_shared_experts": 1, "norm_topk_prob": true,
         "num_attention_heads": 128, "num_experts_per_tok": 8, "num_hidden_layers": 61, "num_key_value_heads": 128,
         "num_nextn_predict_layers": 1, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
         "rms_norm_eps": 1e-06, "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
         "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096, "type": "yarn"}, "rope_theta": 10000,
         "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "tie_word_embeddings": false, "topk_group": 4,
         "topk_method": "noaux_tc", "torch_dtype": "bfloat16", "v_head_dim": 128, "vocab_size": 129280})",
     TokenizerKind::BPE, "", "chatml"},
};

std::vector<ArchPreset> build_table() {
    const auto L = Arch::LLAMA, Q = Arch::QWEN2;
    const auto SPM = TokenizerKind::SPM, BPE = TokenizerKind::BPE;
    std::vector<ArchPreset> t;
    // --- tiny test sizes: every variant, odd-ish sizes to exercise kernel tails ---
    t.push_back({"tiny-llama", "Llama-2 style test model: SPM vocab, MHA, separate output matrix",
                 make(L, {512, 512, 64, 2, 4, 4, 192, 16, 1e-5f, 10000.0f}, false, false), SPM, "", "llama-2", true});
    t.push_back({"tiny-llama3",
                 "Llama-3.1 style test model: byte-level BPE (llama-bpe), GQA 2:1, rope_freqs tensor, base 500000",
                 make(L, {512, 1024, 128, 2, 4, 2, 352, 32, 1e-5f, 500000.0f}, false, true), BPE, "llama-bpe",
                 "llama-3", true});
    t.push_back({"tiny-mistral", "Mistral style test model (arch llama): SPM vocab, GQA 4:1",
                 make(L, {384, 1024, 128, 2, 8, 2, 320, 16, 1e-5f, 10000.0f}, false, false), SPM, "", "mistral", true});
    t.push_back(
        {"tiny-qwen2", "Qwen2 style test model: byte-level BPE (qwen2), GQA 3:1, QKV bias, tied embeddings, NEOX RoPE",
         make(Q, {448, 1024, 96, 2, 6, 2, 256, 16, 1e-6f, 1000000.0f}, true, false), BPE, "qwen2", "chatml", true});
    t.push_back({"small-llama", "Llama-2 style test model with rows of 256 (k-quants apply): SPM vocab, GQA 2:1",
                 make(L, {512, 512, 256, 2, 4, 2, 768, 64, 1e-5f, 10000.0f}, false, false), SPM, "", "llama-2", true});
    // Mixture-of-Experts test models of the families the engine runs, as llama.cpp's loaders
    // read them (model/hparams.h read_experts): Mixtral (arch llama, experts n_ff wide, top-k
    // renormalised), qwen2moe (a sigmoid-gated shared expert, top-k not renormalised, QKV bias),
    // qwen3moe (per-head q/k norms, head_dim * n_head != n_embd, top-k renormalised).
    t.push_back({"tiny-mixtral", "Mixtral style test model (arch llama): 4 experts, top-2, GQA 2:1, SPM vocab",
                 moe(make(L, {512, 1024, 64, 2, 4, 2, 96, 16, 1e-5f, 1000000.0f}, false, false), 4, 2, 96, 0),
                 SPM, "", "mistral", true});
    t.push_back({"tiny-qwen2moe",
                 "Qwen2-MoE style test model: 4 experts, top-2, gated shared expert, QKV bias, NEOX RoPE",
                 moe(make(Arch::QWEN2MOE, {448, 1024, 64, 2, 4, 2, 128, 16, 1e-6f, 1000000.0f}, false, false), 4, 2,
                     64, 128),
                 BPE, "qwen2", "chatml", true});
    t.push_back({"tiny-qwen3moe",
                 "Qwen3-MoE style test model: 8 experts, top-2, q/k norms, head_dim 32 (q width 128 > n_embd 64), "
                 "tied embeddings",
                 moe(make(Arch::QWEN3MOE, {448, 1024, 64, 2, 4, 2, 192, 32, 1e-6f, 1000000.0f}, true, false), 8, 2,
                     32, 0),
                 BPE, "qwen2", "chatml", true});
    t.push_back({"tiny-deepseek2",
                 "DeepSeek-V3 style test model (arch deepseek2): latent attention (q_lora_rank 32, kv_lora_rank 64, "
                 "RoPE part 32), 8 experts top-2 with sigmoid gating and a selection bias, 1 shared expert, first "
                 "layer dense",
                 deepseek2_tiny(), BPE, "qwen2", "chatml", true});
    t.push_back({"tiny-deepseek3",
                 "DeepSeek-V3 structure test model (arch deepseek2): tiny-deepseek2 with group-limited "
                 "routing (8 experts in 4 groups, 2 groups kept, top-2) and one multi-token-prediction block",
                 deepseek3_tiny(), BPE, "qwen2", "chatml", true});
    t.push_back({"tiny-deepseek2-yarn", "tiny-deepseek2 with YaRN RoPE scaling (factor 4, original context 256)",
                 deepseek2_tiny_yarn(), BPE, "qwen2", "chatml", true});
    // --- real shapes (Hugging Face config.json of each model) ---
    t.push_back({"llama2-7b", "Llama-2-7B (meta-llama/Llama-2-7b-hf config.json)",
                 make(L, {32000, 4096, 4096, 32, 32, 32, 11008, 128, 1e-5f, 10000.0f}, false, false), SPM, "",
                 "llama-2", false});
    t.push_back({"llama2-13b", "Llama-2-13B (meta-llama/Llama-2-13b-hf config.json)",
                 make(L, {32000, 4096, 5120, 40, 40, 40, 13824, 128, 1e-5f, 10000.0f}, false, false), SPM, "",
                 "llama-2", false});
    t.push_back({"llama2-70b", "Llama-2-70B (meta-llama/Llama-2-70b-hf config.json): GQA 8:1",
                 make(L, {32000, 4096, 8192, 80, 64, 8, 28672, 128, 1e-5f, 10000.0f}, false, false), SPM, "",
                 "llama-2", false});
    t.push_back({"llama3-8b", "Llama-3-8B (meta-llama/Meta-Llama-3-8B config.json)",
                 make(L, {128256, 8192, 4096, 32, 32, 8, 14336, 128, 1e-5f, 500000.0f}, false, false), BPE, "llama-bpe",
                 "llama-3", false});
    t.push_back({"llama3-70b", "Llama-3-70B (meta-llama/Meta-Llama-3-70B config.json): GQA 8:1",
                 make(L, {128256, 8192, 8192, 80, 64, 8, 28672, 128, 1e-5f, 500000.0f}, false, false), BPE,
                 "llama-bpe", "llama-3", false});
    t.push_back({"mistral-7b", "Mistral-7B-v0.1 (mistralai/Mistral-7B-v0.1 config.json; sliding window not modelled)",
                 make(L, {32000, 32768, 4096, 32, 32, 8, 14336, 128, 1e-5f, 10000.0f}, false, false), SPM, "",
                 "mistral", false});
    t.push_back({"qwen2.5-0.5b", "Qwen2.5-0.5B (Qwen/Qwen2.5-0.5B-Instruct config.json)",
                 make(Q, {151936, 32768, 896, 24, 14, 2, 4864, 64, 1e-6f, 1000000.0f}, true, false), BPE, "qwen2",
                 "chatml", false});
    t.push_back({"qwen2.5-7b", "Qwen2.5-7B (Qwen/Qwen2.5-7B-Instruct config.json)",
                 make(Q, {152064, 32768, 3584, 28, 28, 4, 18944, 128, 1e-6f, 1000000.0f}, false, false), BPE, "qwen2",
                 "chatml", false});
    t.push_back({"qwen2.5-72b", "Qwen2.5-72B (Qwen/Qwen2.5-72B-Instruct config.json): GQA 8:1, QKV bias",
                 make(Q, {152064, 32768, 8192, 80, 64, 8, 29568, 128, 1e-6f, 1000000.0f}, false, false), BPE, "qwen2",
                 "chatml", false});
    t.push_back({"bench-1b", "1.1B llama-shaped benchmark model (TinyLlama/TinyLlama-1.1B config.json)",
                 make(L, {32000, 2048, 2048, 22, 32, 4, 5632, 64, 1e-5f, 10000.0f}, false, false), SPM, "", "llama-2",
                 false});
    for (const HfPreset& h : kHfPresets)
        t.push_back({h.name, h.description, parse_hf_config(h.config_json, std::string("architecture preset ") + h.name).hparams,
                     h.tokenizer, h.tokenizer_pre, h.chat_template, false});
    for (const auto& p : t) p.hparams.validate("architecture preset " + p.name);
    return t;
}

}  // namespace

const std::vector<ArchPreset>& arch_presets() {
    static const std::vector<ArchPreset> table = build_table();
    return table;
}

const ArchPreset* find_arch_preset_info(std::string_view name) {
    for (const auto& p : arch_presets())
        if (p.name == name) return &p;
    return nullptr;
}

const Hparams* find_arch_preset(std::string_view name) {
    const ArchPreset* p = find_arch_preset_info(name);
    return p ? &p->hparams : nullptr;
}

std::vector<std::string> arch_preset_names() {
    std::vector<std::string> names;
    for (const auto& p : arch_presets()) names.push_back(p.name);
    return names;
}

std::string arch_preset_list(bool /*gen_model_only*/) {
    std::string s;
    for (const auto& p : arch_presets()) {
        if (!s.empty()) s += ", ";
        s += p.name;
    }
    return s;
}

const ArchPreset& arch_preset(std::string_view name, std::string_view what) {
    if (const ArchPreset* p = find_arch_preset_info(name)) return *p;
    fail("unknown {} '{}' (known: {})", what, name, arch_preset_list());
}

}  // namespace duet::model
