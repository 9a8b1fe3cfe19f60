#pragma once
// The vocabulary shared by the model graph, the engine's op records and the simulator:
// operator kinds, weight roles and forward phases. Names are the lower-case tokens used in
// reports, traces and CSV files.
namespace duet::graph {

enum class OpKind {
    EMBED,      // token embedding lookup
    RMSNORM,
    MATMUL,     // x[m][k] · W[n][k]^T (weight `role`, e.g. ATTN_Q)
    ROPE,
    KV_WRITE,   // new K/V rows into the cache
    ROPE_KV_WRITE,  // ROPE + KV_WRITE fused (graph/fuse_rope_kv.h): q rotated, k rotated as it is stored
    ATTENTION,  // q against the cached context (scores, softmax, weighted V)
    SWIGLU,
    ADD,        // residual
    OUTPUT,     // final norm + lm-head are recorded as RMSNORM + MATMUL(OUTPUT); this marks sampling
    // Collectives over the ranks of a tensor-parallel group (graph/shard_tensor_parallel.h):
    // n = features per row, k = group size; in place on the row-parallel matmul's partial sums.
    ALL_REDUCE,      // sum over ranks, every rank gets the whole result
    REDUCE_SCATTER,  // sum over ranks, rank r gets its share of the rows (flashcomm)
    ALL_GATHER,      // every rank gets every rank's share (flashcomm, after REDUCE_SCATTER)
    // Expert parallelism (graph/shard_expert_parallel.h): token dispatch before a rank's routed
    // experts and combine after them; n = n_embd, k = the EP group size.
    ALL_TO_ALL,
    // Point-to-point between pipeline stages (graph/shard_pipeline_parallel.h): n = features
    // per row (n_embd), k = the peer stage. SEND reads the stage's last residual; RECV writes
    // the next stage's first one.
    SEND,
    RECV,
    // Mixture-of-Experts FFN (graph/moe_builder.h). R = routed rows = T * n_expert_used.
    MOE_ROUTE,    // router logits [T][n_expert] -> top-k expert ids and weights [T][n_expert_used]
    MOE_MATMUL,   // grouped expert matmul: each routed row times its expert's W[n][k]; n, k per expert
    MOE_COMBINE,  // out[t] = sum of the token's k expert rows, weighted (+ the shared experts' output)
    // Multi-head Latent Attention (graph/mla_builder.h).
    HEAD_MATMUL,    // per-head matmul: x[T][n_head][k] · W[n_head][n][k]^T (absorbed W_UK / W_UV)
    MLA_ATTENTION,  // absorbed attention over the cached latent: n_head query heads of
                    // kv_lora_rank + qk_rope_head_dim against one shared latent key; values the latent
};

// A matrix product whose weight is a graph weight (placement and layout treat them alike).
inline bool is_matmul_kind(OpKind k) {
    return k == OpKind::MATMUL || k == OpKind::MOE_MATMUL || k == OpKind::HEAD_MATMUL;
}

// Which weight an operator reads. Matrices first (the values records carry), then the fused
// matrices a graph pass creates, then the vectors/tables only the graph names (norm weights
// and the embedding table: records of those ops keep role NONE). Each role's tensors (GGUF
// name, shape, split, fusion) are its rows of the tensor catalogue (graph/tensor_catalogue.h).
enum class WeightRole {
    NONE,
    ATTN_Q,
    ATTN_K,
    ATTN_V,
    ATTN_OUT,
    FFN_GATE,
    FFN_UP,
    FFN_DOWN,
    LM_HEAD,
    ATTN_QKV,     // fused [q rows | k rows | v rows] (graph/fuse_matmuls.h)
    FFN_GATE_UP,  // fused [gate rows | up rows]
    TOKEN_EMBD,   // embedding table
    ATTN_NORM,    // per-layer RMSNorm weights
    FFN_NORM,
    OUTPUT_NORM,
    ROPE_FREQS,   // Llama-3.1 RoPE frequency factors
    // Mixture-of-Experts matrices (llama.cpp names: blk.N.ffn_gate_inp, ffn_{gate,up,down}_exps
    // [n_expert][n][k], ffn_{gate,up,down}_shexp, ffn_gate_inp_shexp).
    FFN_GATE_INP,
    FFN_GATE_EXPS,
    FFN_UP_EXPS,
    FFN_DOWN_EXPS,
    FFN_GATE_SHEXP,
    FFN_UP_SHEXP,
    FFN_DOWN_SHEXP,
    FFN_GATE_INP_SHEXP,
    // Latent-attention matrices (llama.cpp deepseek2: attn_q_a, attn_q_b, attn_kv_a_mqa, attn_k_b,
    // attn_v_b) and their norm vectors (attn_q_a_norm, attn_kv_a_norm).
    ATTN_Q_A,
    ATTN_Q_B,
    ATTN_KV_A_MQA,
    ATTN_K_B,
    ATTN_V_B,
    ATTN_Q_A_NORM,
    ATTN_KV_A_NORM,
    // Qwen3's per-head query/key norms (attn_q_norm, attn_k_norm: [head_dim] each).
    ATTN_Q_NORM,
    ATTN_K_NORM,
    // deepseek2 as older llama.cpp conversions store it: W_kv_b unsplit (attn_kv_b), and the
    // router's selection-only expert bias (exp_probs_b, DeepSeek-V3's e_score_correction_bias).
    ATTN_KV_B,
    FFN_EXP_PROBS_B,
};

enum class Phase { PREFILL, DECODE };

const char* op_kind_name(OpKind k);
const char* weight_role_name(WeightRole r);
const char* phase_name(Phase p);

}  // namespace duet::graph
