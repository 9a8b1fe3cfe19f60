#pragma once
// One record per operator the engine executes (or the trace-only planner predicts), and the
// one place its bytes and FLOPs are computed: graph::lower (graph/lowering.h) turns a graph
// node and a batch into its record. The planner (sim/planner.h) lowers every node of a
// generation; the engine's dispatch point (runtime/dispatch.h) lowers the node it executes and
// appends that record when tracing is on. The functional path and the timing path therefore
// see the same list.
#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "graph/op_types.h"

// Field semantics per kind (graph::lower computes exactly these; tests compare the planner's
// and the engine's records on generated models).
// T = tokens in the forward (sum over sequences), E = n_embd, f32 activations on the host
// (4 bytes), wb(n) = row bytes of n elements in weight_dtype, kvb(n) the same in the KV dtype.
//   EMBED     layer -1; m=T, n=E; weight_bytes = T*wb(E) (rows gathered); in = 4*T (ids); out = 4*T*E
//   RMSNORM   m=T (n_seq rows for the final norm, layer -1), n=E; weight_bytes = 4*E;
//             in = out = 4*m*E; flops = 4*m*E
//   MATMUL    m rows, n = output features, k = input features; weight_bytes = whole matrix;
//             in = 4*m*k; out = 4*m*n; flops = 2*m*n*k. LM_HEAD (layer -1) has m = n_seq
//             (logits of the last token of each sequence). A q/k/v bias is the matmul's
//             epilogue, not a record. With the RMSNorm fused into its input quantisation
//             (rmsnorm_fused, graph/fuse_rmsnorm_matmul.h): the RMSNORM record joins it, less
//             the normed tensor's write and read: weight_bytes += 4*k (norm weights); in = 4*m*k
//             (the norm's input); flops += 4*m*k
//   ROPE      q and k together: m=T, n=(n_head+n_head_kv)*head_dim, k=head_dim, heads set;
//             in = out = 4*m*n; flops = 3*m*n
//   KV_WRITE  m=T, n=2*n_head_kv*head_dim (K and V), weight_dtype = KV dtype; in = 4*m*n;
//             out = m*2*kvb(n_head_kv*head_dim); weight_bytes = 0
//   ATTENTION one record for the batch: m=T, n = longest context after this forward, k=head_dim,
//             heads set; weight_dtype = KV dtype; weight_bytes = KV read = sum over sequences
//             of 2*ctx*kvb(n_head_kv*head_dim); in = out = 4*T*n_head*head_dim;
//             flops = 4*n_head*head_dim*sum over sequences of (n_q*pos0 + n_q*(n_q+1)/2)
//   SWIGLU    m=T, n=n_ff; in = 8*m*n; out = 4*m*n; flops = 4*m*n
//   ADD       residual: m=T, n=E; in = 8*m*n; out = 4*m*n; flops = m*n
//   OUTPUT    layer -1, marks sampling (done by the caller); m=n_seq, n=n_vocab; in = 4*m*n;
//             out = 4*m; flops = m*n
//   ROPE_KV_WRITE  ROPE's record plus KV_WRITE's, less k_rope's f32 write and read
//             (graph/fuse_rope_kv.h); weight_dtype = KV dtype
//   ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER  m rows of n = n_embd, k = group size; in = out =
//             4*m*n; flops = m*n (the sums; 0 for ALL_GATHER)
//   SEND, RECV  m rows of n = n_embd, k = the peer stage; in = out = 4*m*n
// Mixture-of-Experts and latent attention (graph/moe_builder.h, graph/mla_builder.h).
// K = n_expert_used, R = routed rows = T*K, H = n_head, C = kv_lora_rank, P = qk_rope_head_dim:
//   RMSNORM     Qwen3's per-head q/k norms: n = the q or k row, weight_bytes = 4*head_dim
//   MOE_ROUTE   m=T, n=n_expert, k=K; in = 4*m*n (logits); out = 8*m*k (f32 weights, i32 ids);
//               flops = 4*m*n (gating and top-k selection: about 4 operations per logit, an
//               estimate without a measured source)
//   MOE_MATMUL  m=R, n, k per expert, role *_EXPS; n_expert_active = A = the experts whose weights
//               the forward reads, the expected number of distinct experts T tokens choose under
//               uniform routing, E*(1 - (1 - K/E)^T), rounded up to whole experts; weight_bytes =
//               A*n*wb(k) (each expert's weights read once per forward, its rows grouped);
//               in = 4*m*k; out = 4*m*n; flops = 2*m*n*k. The simulator re-prices them from a
//               routing distribution and per expert-parallel rank (sim/expert_load.h)
//   ALL_TO_ALL  expert parallelism's dispatch and combine (graph/shard_expert_parallel.h): m = ep x
//               the rows of the largest message one rank sends one peer (uniform routing: T*K),
//               n = E, k = ep; in = out = 4*m*n
//   MOE_COMBINE m=T, n=E, k=K; in = 4*(bytes of its inputs); out = 4*m*n;
//               flops = 2*m*n*k (+ 2*m*n with shared experts)
//   HEAD_MATMUL m=T, n, k per head, n_head=H; weight_bytes = H*n*wb(k); in = 4*m*H*k;
//               out = 4*m*H*n; flops = 2*m*H*n*k
//   KV_WRITE    with MLA: n = C+P; out = m*kvb(C+P) (the latent row, not K and V)
//   MLA_ATTENTION one record for the batch: m=T, n = longest context, k = C+P, n_head=H,
//               n_head_kv=1 (every head reads the same latent rows); weight_bytes = KV read = sum
//               over sequences of ctx*kvb(C+P); in = 4*T*H*(C+P); out = 4*T*H*C;
//               flops = 2*H*(2C+P)*sum over sequences of (n_q*pos0 + n_q*(n_q+1)/2)
// Order of one forward: the nodes of the model's graph (graph/graph.h, one record per node; the
// llama builder's order is in graph/llama_builder.h). n_seq = sequences in the batch on every record;
// phase = PREFILL when any sequence brings more than one token, else DECODE.
namespace duet::graph {

// Records carry matrix roles only (MATMUL); the other ops keep role NONE.

// Which of a MOE_MATMUL's experts a record covers: all of them (the planner's and the engine's
// records), or, after sim/expert_load.h split it by modelled time, the group placed on the NPU
// or the group placed on PIM (the placement honours it).
enum class ExpertGroup : uint8_t { ALL, NPU, PIM };

struct OpRecord {
    OpKind kind = OpKind::ADD;
    WeightRole role = WeightRole::NONE;
    Phase phase = Phase::PREFILL;
    int32_t layer = -1;     // -1 for ops outside the transformer blocks
    int32_t n_seq = 1;      // sequences in the batch this op serves
    // ATTENTION: devices whose memories share each sequence's context positions (graph/parallel.h
    // TpShard::context_ranks; 1 but under TpPartition::CENT), q.K^T running over one of them.
    // Beside n_seq, where the record has room, so a record stays 120 bytes.
    int32_t context_ranks = 1;
    int64_t m = 0;          // tokens (rows of activations)
    int64_t n = 0;          // output features (MATMUL) / context tokens (ATTENTION)
    int64_t k = 0;          // input features (MATMUL) / head_dim (ATTENTION)
    int64_t n_head = 0, n_head_kv = 0;
    int64_t n_expert_active = 0;      // MOE_MATMUL: experts whose weights are read (see above)
    DType weight_dtype = DType::F32;  // dtype of the weight or KV operand
    uint64_t weight_bytes = 0;        // bytes of weights / KV read
    uint64_t in_bytes = 0;            // activation bytes read (f32 on the host)
    uint64_t out_bytes = 0;           // bytes written
    double flops = 0;                 // 2 per multiply-add
    // Reads an input of the record before it and none of its outputs (graph::Node::
    // sibling_of_prev: Q, K, V; gate, up): the timeline may start it together with that one.
    bool sibling_of_prev = false;
    // MATMUL: the RMSNorm of its input ran in the same kernel (graph::Node::norm).
    bool rmsnorm_fused = false;
    ExpertGroup expert_group = ExpertGroup::ALL;  // MOE_MATMUL: see ExpertGroup
    bool operator==(const OpRecord&) const = default;
};

using OpTrace = std::vector<OpRecord>;

// Rows of the weight operand a matrix record reads, as one matrix of k columns: the active
// experts' rows (MOE_MATMUL), every head's (HEAD_MATMUL), else n.
inline int64_t weight_rows(const OpRecord& r) {
    if (r.kind == OpKind::MOE_MATMUL) return r.n * r.n_expert_active;
    if (r.kind == OpKind::HEAD_MATMUL) return r.n * r.n_head;
    return r.n;
}

}  // namespace duet::graph
