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
    // Point-to-point between pipeline stages (graph/shard_pipeline_parallel.h): n = features
    // per row (n_embd), k = the peer stage. SEND reads the stage's last residual; RECV writes
    // the next stage's first one.
    SEND,
    RECV,
};

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
};

enum class Phase { PREFILL, DECODE };

const char* op_kind_name(OpKind k);
const char* weight_role_name(WeightRole r);
const char* phase_name(Phase p);

}  // namespace duet::graph
