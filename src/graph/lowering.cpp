#include "graph/lowering.h"

#include <algorithm>

namespace duet::graph {

OpRecord lower(const Graph& g, const Node& nd, const Batch& b) {
    const auto rows = [&](int32_t tensor) { return g.tensors[size_t(tensor)].rows == Rows::TOKENS ? b.n_tok : b.n_out; };
    const ModelShape& s = g.shape;
    OpRecord r;
    r.kind = nd.kind;
    r.phase = b.phase;
    r.layer = nd.layer;
    r.n_seq = b.n_seq();
    r.n = nd.n;
    r.weight_dtype = DType::F32;
    r.sibling_of_prev = nd.sibling_of_prev;
    // OUTPUT marks the sampling of one token per sequence, whatever rows the logits have
    const int64_t m = nd.kind == OpKind::OUTPUT ? b.n_seq() : nd.out.empty() ? rows(nd.in[0]) : rows(nd.out[0]);
    r.m = m;
    const uint64_t mn = uint64_t(m * nd.n);
    switch (nd.kind) {
        case OpKind::EMBED:
            r.weight_dtype = nd.dtype;
            r.weight_bytes = uint64_t(m) * row_bytes(nd.dtype, nd.n);
            r.in_bytes = 4 * uint64_t(m);
            r.out_bytes = 4 * mn;
            break;
        case OpKind::RMSNORM:  // k > 0: one weight vector of k for every k-slice of the row (per head)
            r.weight_bytes = 4 * uint64_t(nd.k > 0 ? nd.k : nd.n);
            r.in_bytes = r.out_bytes = 4 * mn;
            r.flops = 4.0 * double(mn);
            break;
        case OpKind::MATMUL:
            r.role = nd.role;
            r.k = nd.k;
            r.weight_dtype = nd.dtype;
            r.weight_bytes = uint64_t(nd.n) * row_bytes(nd.dtype, nd.k);
            r.in_bytes = 4 * uint64_t(m * nd.k);
            r.out_bytes = 4 * mn;
            r.flops = 2.0 * double(mn) * double(nd.k);
            if (nd.norm != WeightRole::NONE) {  // RMSNORM's record joined, less xn's write and read
                r.rmsnorm_fused = true;
                r.weight_bytes += 4 * uint64_t(nd.k);
                r.flops += 4.0 * double(m) * double(nd.k);
            }
            break;
        case OpKind::ROPE:
            r.k = nd.k;
            r.n_head = s.n_head;
            r.n_head_kv = s.n_head_kv;
            r.in_bytes = r.out_bytes = 4 * mn;
            r.flops = 3.0 * double(mn);
            break;
        case OpKind::ROPE_KV_WRITE: {
            // ROPE's record plus KV_WRITE's, less k_rope's f32 write and its read (graph/fuse_rope_kv.h):
            // reads q, k, v; writes q_rope and the cache rows.
            const uint64_t kv = uint64_t(m * s.n_head_kv * nd.k);
            r.k = nd.k;
            r.n_head = s.n_head;
            r.n_head_kv = s.n_head_kv;
            r.weight_dtype = nd.dtype;
            r.in_bytes = 4 * (mn + kv);
            r.out_bytes = 4 * (mn - kv) + uint64_t(m) * 2 * row_bytes(nd.dtype, s.n_head_kv * nd.k);
            r.flops = 3.0 * double(mn);
            break;
        }
        case OpKind::KV_WRITE:
            r.weight_dtype = nd.dtype;
            r.in_bytes = 4 * mn;
            r.out_bytes = s.is_mla() ? uint64_t(m) * row_bytes(nd.dtype, nd.n)  // the latent row
                                     : uint64_t(m) * 2 * row_bytes(nd.dtype, nd.n / 2);
            break;
        case OpKind::MOE_ROUTE:
        case OpKind::MOE_MATMUL:
        case OpKind::MOE_COMBINE:
        case OpKind::HEAD_MATMUL:
        case OpKind::MLA_ATTENTION: lower_moe_mla(g, nd, b, r); break;
        case OpKind::ATTENTION: {
            // every sequence reads its whole context from the cache and scores its new tokens
            // against it (causal: n_q*n_past + n_q*(n_q+1)/2 query-key pairs)
            const size_t kv_row = row_bytes(nd.dtype, s.n_head_kv * nd.k);
            double pairs = 0;
            r.n = 0;
            for (const SeqSpan& q : b.seqs) {
                const int64_t ctx = q.n_past + q.n_new;
                r.n = std::max(r.n, ctx);
                r.weight_bytes += 2 * uint64_t(ctx) * kv_row;
                pairs += double(q.n_new) * double(q.n_past) + double(q.n_new) * double(q.n_new + 1) / 2.0;
            }
            r.k = nd.k;
            r.n_head = s.n_head;
            r.n_head_kv = s.n_head_kv;
            r.context_ranks = g.tp.context_ranks;
            r.weight_dtype = nd.dtype;
            r.in_bytes = r.out_bytes = 4 * mn;
            r.flops = 4.0 * double(s.n_head) * double(nd.k) * pairs;
            break;
        }
        case OpKind::SWIGLU:
            r.in_bytes = 8 * mn;
            r.out_bytes = 4 * mn;
            r.flops = 4.0 * double(mn);
            break;
        case OpKind::ADD:
            r.in_bytes = 8 * mn;
            r.out_bytes = 4 * mn;
            r.flops = double(mn);
            break;
        case OpKind::OUTPUT:
            r.in_bytes = 4 * mn;
            r.out_bytes = 4 * uint64_t(m);
            r.flops = double(mn);
            break;
        case OpKind::ALL_REDUCE:
        case OpKind::REDUCE_SCATTER:
        case OpKind::ALL_GATHER:
            // k = group size; the bytes are the local tensor's (the link model prices the transfer).
            r.k = nd.k;
            r.in_bytes = r.out_bytes = 4 * mn;
            r.flops = nd.kind == OpKind::ALL_GATHER ? 0.0 : double(mn);
            break;
        case OpKind::ALL_TO_ALL:
            // m = ep x the rows of the largest message one rank sends one peer; uniform routing:
            // the rank's routed rows T*K (each peer gets 1/ep of them). sim/expert_load.h rewrites
            // it for skewed routing.
            r.k = nd.k;
            r.m = m * s.n_expert_used;
            r.in_bytes = r.out_bytes = 4 * uint64_t(r.m * nd.n);
            break;
        case OpKind::SEND:
        case OpKind::RECV:
            // k = the peer stage; the boundary activations cross the link (the link model prices them).
            r.k = nd.k;
            r.in_bytes = r.out_bytes = 4 * mn;
            break;
    }
    return r;
}


}  // namespace duet::graph
