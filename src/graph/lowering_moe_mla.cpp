#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "graph/lowering.h"

namespace duet::graph {

int64_t expected_active_experts(int64_t n, int64_t k, int64_t tokens) {
    const double a = double(n) * (1.0 - std::pow(1.0 - double(k) / double(n), double(tokens)));
    return std::clamp<int64_t>(int64_t(std::ceil(a - 1e-9)), std::min(k, n), n);
}

// The records of graph/moe_builder.h and graph/mla_builder.h (graph/op_record.h has the formulas).
void lower_moe_mla(const Graph& g, const Node& nd, const Batch& b, OpRecord& r) {
    const ModelShape& s = g.shape;
    const uint64_t m = uint64_t(r.m);
    switch (nd.kind) {
        case OpKind::MOE_ROUTE:
            r.k = nd.k;
            r.in_bytes = 4 * m * uint64_t(nd.n);
            r.out_bytes = 8 * m * uint64_t(nd.k);
            r.flops = 4.0 * double(m) * double(nd.n);
            break;
        case OpKind::MOE_MATMUL: {
            const uint64_t routed = m * uint64_t(s.n_expert_used);
            r.m = int64_t(routed);
            r.role = nd.role;
            r.k = nd.k;
            r.weight_dtype = nd.dtype;
            r.n_expert_active = expected_active_experts(s.n_expert, s.n_expert_used, int64_t(m));
            r.weight_bytes = uint64_t(r.n_expert_active) * uint64_t(nd.n) * row_bytes(nd.dtype, nd.k);
            r.in_bytes = 4 * routed * uint64_t(nd.k);
            r.out_bytes = 4 * routed * uint64_t(nd.n);
            r.flops = 2.0 * double(routed) * double(nd.n) * double(nd.k);
            break;
        }
        case OpKind::MOE_COMBINE:
            r.k = nd.k;
            for (int32_t t : nd.in) r.in_bytes += 4 * m * uint64_t(g.tensors[size_t(t)].width);
            r.out_bytes = 4 * m * uint64_t(nd.n);
            r.flops = 2.0 * double(m) * double(nd.n) * double(nd.k) +
                      (nd.in.size() > 2 ? 2.0 * double(m) * double(nd.n) : 0.0);  // + the shared experts
            break;
        case OpKind::HEAD_MATMUL: {
            const uint64_t heads = uint64_t(s.n_head);
            r.role = nd.role;
            r.k = nd.k;
            r.n_head = s.n_head;
            r.weight_dtype = nd.dtype;
            r.weight_bytes = heads * uint64_t(nd.n) * row_bytes(nd.dtype, nd.k);
            r.in_bytes = 4 * m * heads * uint64_t(nd.k);
            r.out_bytes = 4 * m * heads * uint64_t(nd.n);
            r.flops = 2.0 * double(m) * double(heads) * double(nd.n) * double(nd.k);
            break;
        }
        case OpKind::MLA_ATTENTION: {
            // every head scores its queries against the sequence's cached latent rows (one read)
            const int64_t C = s.kv_lora_rank, P = s.qk_rope_head_dim;
            const size_t row = row_bytes(nd.dtype, C + P);
            double pairs = 0;
            r.n = 0;
            for (const SeqSpan& q : b.seqs) {
                const int64_t ctx = q.n_past + q.n_new;
                r.n = std::max(r.n, ctx);
                r.weight_bytes += uint64_t(ctx) * row;
                pairs += double(q.n_new) * double(q.n_past) + double(q.n_new) * double(q.n_new + 1) / 2.0;
            }
            r.k = nd.k;
            r.n_head = s.n_head;
            r.n_head_kv = 1;
            r.weight_dtype = nd.dtype;
            r.in_bytes = 4 * m * uint64_t(s.n_head * (C + P));
            r.out_bytes = 4 * m * uint64_t(s.n_head * C);
            r.flops = 2.0 * double(s.n_head) * double(2 * C + P) * pairs;
            break;
        }
        default: DUET_CHECK(false, "lowering: {} is not a MoE/MLA operator", op_kind_name(nd.kind));
    }
}

}  // namespace duet::graph
