#pragma once
// One record per operator the engine executes (or the trace-only planner predicts). The
// functional path and the timing path see the same list: runtime's single dispatch point
// appends a record for every operator when tracing is on.
#include <cstdint>
#include <vector>

#include "core/dtype.h"

// Field semantics per kind: the closed forms in runtime/dispatch.h (the engine's single
// dispatch point) are normative; the trace-only planner (sim/planner.h) emits exactly them and
// a test compares both on a generated model. In short (T tokens in the forward, f32 host
// activations): EMBED/RMSNORM/MATMUL/ADD/SWIGLU carry m = rows, n = features; ROPE is recorded
// twice per layer (q with n_head, then k with n_head_kv); KV_WRITE has n = n_embd_kv and
// counts K and V; ATTENTION is one record per sequence (n_seq = 1, m = its new tokens,
// n = its context, phase DECODE when m == 1); the final RMSNORM and the LM_HEAD MATMUL
// (layer -1) cover only the rows whose logits are wanted. Sampling is not recorded.
// Order of one forward: EMBED; per layer RMSNORM, MATMUL Q, K, V, [ADD bias q, k, v],
// ROPE q, ROPE k, KV_WRITE, ATTENTION per sequence, MATMUL ATTN_OUT, ADD, RMSNORM,
// MATMUL FFN_GATE, FFN_UP, SWIGLU, MATMUL FFN_DOWN, ADD; then RMSNORM, MATMUL LM_HEAD.
namespace duet::sim {

enum class OpKind {
    EMBED,      // token embedding lookup
    RMSNORM,
    MATMUL,     // x[m][k] · W[n][k]^T (weight `role`, e.g. ATTN_Q)
    ROPE,
    KV_WRITE,   // new K/V rows into the cache
    ATTENTION,  // q against the cached context (scores, softmax, weighted V)
    SWIGLU,
    ADD,        // residual
    OUTPUT,     // final norm + lm-head are recorded as RMSNORM + MATMUL(OUTPUT); this marks sampling
};

enum class WeightRole { NONE, ATTN_Q, ATTN_K, ATTN_V, ATTN_OUT, FFN_GATE, FFN_UP, FFN_DOWN, LM_HEAD };

enum class Phase { PREFILL, DECODE };

struct OpRecord {
    OpKind kind = OpKind::ADD;
    WeightRole role = WeightRole::NONE;
    Phase phase = Phase::PREFILL;
    int32_t layer = -1;     // -1 for ops outside the transformer blocks
    int32_t n_seq = 1;      // sequences in the batch this op serves
    int64_t m = 0;          // tokens (rows of activations)
    int64_t n = 0;          // output features (MATMUL) / context tokens (ATTENTION)
    int64_t k = 0;          // input features (MATMUL) / head_dim (ATTENTION)
    int64_t n_head = 0, n_head_kv = 0;
    DType weight_dtype = DType::F32;  // dtype of the weight or KV operand
    uint64_t weight_bytes = 0;        // bytes of weights / KV read
    uint64_t in_bytes = 0;            // activation bytes read (f32 on the host)
    uint64_t out_bytes = 0;           // bytes written
    double flops = 0;                 // 2 per multiply-add
};

using OpTrace = std::vector<OpRecord>;

const char* op_kind_name(OpKind k);
const char* weight_role_name(WeightRole r);
const char* phase_name(Phase p);

}  // namespace duet::sim
