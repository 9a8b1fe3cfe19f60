#pragma once
// One record per operator the engine executes (or the trace-only planner predicts). The
// functional path and the timing path see the same list: runtime's single dispatch point
// appends a record for every operator when tracing is on.
#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "graph/op_types.h"

// Field semantics per kind (the planner, sim/planner.h, emits exactly these; the engine's
// dispatch point, runtime/dispatch.h, follows them; tests compare both on generated models).
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
// Order of one forward: the nodes of the model's graph (graph/graph.h, one record per node; the
// llama builder's order is in graph/llama_builder.h). n_seq = sequences in the batch on every record;
// phase = PREFILL when any sequence brings more than one token, else DECODE.
namespace duet::sim {

using graph::OpKind;      // graph/op_types.h
using graph::Phase;
using graph::WeightRole;  // records carry matrix roles only (ATTN_Q … LM_HEAD, ATTN_QKV, FFN_GATE_UP)
using graph::op_kind_name;
using graph::phase_name;
using graph::weight_role_name;

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
    // Reads an input of the record before it and none of its outputs (graph::Node::
    // sibling_of_prev: Q, K, V; gate, up): the timeline may start it together with that one.
    bool sibling_of_prev = false;
    // MATMUL: the RMSNorm of its input ran in the same kernel (graph::Node::norm).
    bool rmsnorm_fused = false;
    bool operator==(const OpRecord&) const = default;
};

using OpTrace = std::vector<OpRecord>;

}  // namespace duet::sim
