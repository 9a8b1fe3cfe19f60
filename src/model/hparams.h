#pragma once
// Model hyper-parameters: the shape of a decoder-only transformer, read from GGUF metadata
// (hparams_from_gguf) or taken from the preset table (model/arch_presets.h).
//
// Supported architectures (general.architecture): `llama` (Llama 1/2/3/3.1, and Mistral,
// whose GGUF files use arch `llama`; with `llama.expert_count`, Mixtral), `qwen2`, `qwen2moe`,
// `qwen3moe` and `deepseek2` (DeepSeek-V2/V3: latent attention and experts). Anything else is a duet::Error that lists the supported ones.
//
// Conventions shared with the engine:
//  - RoPE rotates the first n_rot dimensions of each head. rope_neox = false is the
//    interleaved order of llama (pairs (2i, 2i+1)); true is the NEOX / HF order of qwen2
//    (pairs (i, i + n_rot/2)). Position p, pair i: theta = p * rope_freq_scale *
//    rope_freq_base^(-2i/n_rot) / rope_freqs[i] where rope_freqs is the optional F32 tensor
//    `rope_freqs.weight` of n_rot/2 elements (Llama-3.1 scaling, as llama.cpp's converter
//    writes it; has_rope_freqs says it exists). rope_freq_scale = 1 / rope.scaling.factor
//    for linear scaling, else 1.
//  - Attention: n_head query heads of head_dim each, n_head_kv key/value heads (GQA when
//    n_head_kv < n_head); query head h uses kv head h / (n_head / n_head_kv).
//  - FFN is SwiGLU: down(silu(gate(x)) * up(x)); norms are RMSNorm with norm_eps.
//  - tied_output: the output projection reuses token_embd.weight (no output.weight tensor).
//  - qkv_bias: attn_q/k/v carry F32 biases (qwen2).
//
// Thread safety: plain value type.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/dtype.h"
#include "graph/model_shape.h"

namespace duet::format {
class GgufFile;
class GgufWriter;
}  // namespace duet::format

namespace duet::model {

// Every Arch runs for real from GGUF and is modelled from a preset or a Hugging Face config.json
// (model/hf_config.h); the names are llama.cpp's general.architecture values.
enum class Arch { LLAMA, QWEN2, QWEN2MOE, QWEN3MOE, DEEPSEEK2 };

const char* arch_name(Arch a);       // "llama", "qwen2", "qwen2moe", "qwen3moe", "deepseek2"
// The GGUF architectures the engine runs: "llama, qwen2, qwen2moe, qwen3moe, deepseek2".
std::string supported_arch_names();

// How a Mixture-of-Experts router turns its logits into expert weights (llama.cpp's
// expert_gating_func): SOFTMAX over all experts (Mixtral, Qwen-MoE, DeepSeek-V2) or an
// independent SIGMOID per expert (DeepSeek-V3).
enum class ExpertGating { SOFTMAX, SIGMOID };
const char* expert_gating_name(ExpertGating g);  // "softmax", "sigmoid"

struct Hparams {
    Arch arch = Arch::LLAMA;
    std::string arch_name = "llama";  // general.architecture as written in GGUF

    int64_t n_vocab = 0;
    int64_t n_ctx_train = 0;  // context length the model was trained for
    int64_t n_embd = 0;
    int64_t n_layer = 0;
    int64_t n_head = 0;
    int64_t n_head_kv = 0;
    int64_t n_ff = 0;
    int64_t head_dim = 0;  // per-head size of q, k and v
    int64_t n_rot = 0;     // rotated dimensions per head (head_dim, but qk_rope_head_dim with latent attention)

    float norm_eps = 1e-5f;
    float rope_freq_base = 10000.0f;
    float rope_freq_scale = 1.0f;

    bool rope_neox = false;  // qwen2: true
    bool qkv_bias = false;   // qwen2: true
    bool tied_output = false;
    bool has_rope_freqs = false;
    // YaRN RoPE scaling (deepseek2 with rope.scaling.type = yarn; model/hparams_deepseek2.h has the
    // formulas): rope_freq_scale = 1 / factor; the rotation angles of the pairs between the
    // beta_fast and beta_slow correction dimensions of rope_yarn_orig_ctx blend interpolation and
    // extrapolation; the attention scale gains (1 + 0.1 * rope_yarn_log_mul * ln factor)^2.
    bool rope_yarn = false;
    int64_t rope_yarn_orig_ctx = 0;
    float rope_yarn_log_mul = 0.0f;  // DeepSeek's mscale_all_dim: the file's yarn_log_multiplier / 0.1, as llama.cpp
    float rope_yarn_beta_fast = 32.0f, rope_yarn_beta_slow = 1.0f;
    bool qk_norm = false;  // qwen3: q and k RMS-normed per head (weights [head_dim] each) before RoPE

    // --- Mixture-of-Experts FFN (n_expert == 0: every layer has the dense SwiGLU FFN of n_ff) ---
    // Layers [n_layer_dense_lead, n_layer) replace the dense FFN by: router logits = x · W_gate_inp
    // [n_expert][n_embd]; weights of the top n_expert_used experts (gating, then optional
    // normalisation to sum 1, then * expert_weights_scale); each chosen expert is a SwiGLU FFN of
    // n_ff_exp; shared experts (n_ff_shexp wide in total) see every token.
    int64_t n_expert = 0;            // routed experts per MoE layer
    int64_t n_expert_used = 0;       // experts per token (top-k)
    int64_t n_ff_exp = 0;            // intermediate size of one routed expert
    int64_t n_expert_shared = 0;     // shared experts (0: none)
    int64_t n_ff_shexp = 0;          // intermediate size of all shared experts together
    int64_t n_layer_dense_lead = 0;  // leading layers that keep the dense FFN (DeepSeek first_k_dense_replace)
    ExpertGating expert_gating = ExpertGating::SOFTMAX;
    bool expert_weights_norm = false;   // top-k weights renormalised to sum 1
    float expert_weights_scale = 1.0f;  // routed output scale (DeepSeek routed_scaling_factor)
    bool shared_expert_gate = false;    // qwen2moe: the shared expert is scaled by sigmoid(x · w[n_embd])
    // deepseek2 (DeepSeek-V3): a per-expert bias [n_expert] added to the gating scores
    // to choose the top k; the weights are the unbiased scores of the chosen experts.
    bool expert_probs_bias = false;
    // Group-limited routing (DeepSeek-V3's n_group / topk_group; 0 or 1 group: none): the experts
    // are n_expert_groups groups of consecutive ids; a group scores the sum of its two largest
    // selection scores (score + bias), the n_expert_groups_used best groups are kept, and the
    // top k are chosen among their experts only (runtime/moe_router.h).
    int64_t n_expert_groups = 0;
    int64_t n_expert_groups_used = 0;
    bool group_limited() const { return n_expert_groups > 1 && n_expert_groups_used < n_expert_groups; }

    // Multi-token-prediction blocks (DeepSeek-V3's num_nextn_predict_layers): trailing blocks of
    // the file (block_count = n_layer + n_layer_nextn, as llama.cpp counts them) that serve
    // speculative decoding only. n_layer counts the main blocks, the ones a forward pass runs.
    int64_t n_layer_nextn = 0;

    // --- Multi-head Latent Attention (kv_lora_rank == 0: standard attention) ---
    // q = W_q_b · norm(W_q_a · x) (or W_q · x when q_lora_rank == 0), n_head heads of
    // qk_nope_head_dim + qk_rope_head_dim; [c_kv | k_pe] = W_kv_a · x with c_kv kv_lora_rank wide
    // and k_pe qk_rope_head_dim wide (one RoPE key shared by all heads). The cache holds
    // norm(c_kv) and rope(k_pe): kv_lora_rank + qk_rope_head_dim values per token and layer.
    // K_nope and V are c_kv up-projected per head (W_k_b, W_v_b: halves of W_kv_b); V heads are
    // v_head_dim wide. head_dim/n_rot above are the query/key head size and qk_rope_head_dim.
    int64_t q_lora_rank = 0;
    int64_t kv_lora_rank = 0;
    int64_t qk_rope_head_dim = 0;
    int64_t qk_nope_head_dim = 0;
    int64_t v_head_dim = 0;
    bool mla_kv_b = false;  // the file stores W_kv_b unsplit (older llama.cpp conversions), not its halves

    bool is_moe() const { return n_expert > 0; }
    bool is_mla() const { return kv_lora_rank > 0; }
    // Does layer il use the expert FFN?
    bool moe_layer(int64_t il) const { return is_moe() && il >= n_layer_dense_lead; }

    int64_t n_gqa() const { return n_head / n_head_kv; }        // query heads per kv head
    int64_t n_embd_q() const { return n_head * head_dim; }      // query features (the catalogue's Q_DIM)
    int64_t n_embd_kv() const { return n_head_kv * head_dim; }  // key or value features (KV_DIM)
    // Parameters in the weights: every tensor of the catalogue the model has (graph/tensor_catalogue.h).
    int64_t n_params() const;

    // Throws duet::Error "<source>: <problem>" when the numbers are inconsistent or out of
    // range (n_embd % n_head, n_head % n_head_kv, n_rot even and <= head_dim, ...).
    void validate(std::string_view source) const;
};

bool operator==(const Hparams& a, const Hparams& b);

// The shape the graph, the tensor catalogue and the simulator work from: these hparams plus
// the dtypes of the matrices and of the KV cache (graph does not depend on model; this is
// the one translation).
graph::ModelShape model_shape(const Hparams& hp, DType weight_dtype = DType::F16, DType kv_dtype = DType::F16,
                              std::string name = "");

// Reads general.architecture and the <arch>.* keys (context_length, embedding_length,
// block_count, feed_forward_length, attention.head_count, attention.head_count_kv,
// attention.layer_norm_rms_epsilon, attention.key_length, rope.freq_base,
// rope.dimension_count, rope.scaling.type / .factor), n_vocab from <arch>.vocab_size or the
// tokenizer's token list or token_embd.weight, and the tensor-dependent flags (output.weight,
// rope_freqs.weight, blk.0.attn_q.bias), and the experts (<arch>.expert_count,
// expert_used_count, expert_feed_forward_length, expert_shared_feed_forward_length,
// expert_weights_scale) with each family's routing rule as llama.cpp's graphs apply it
// (hparams.cpp read_experts). Validates; errors name the file and key.
Hparams hparams_from_gguf(const format::GgufFile& f);

// Writes general.architecture and the <arch>.* keys above (the inverse of hparams_from_gguf
// for the metadata side; tied_output, qkv_bias and has_rope_freqs are told by the tensors).
void write_hparams(format::GgufWriter& w, const Hparams& hp);

}  // namespace duet::model
