#include "sim/planner.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace duet::sim {
namespace {

// One forward's lowering context: rows of a TOKENS tensor (T) and of an OUT_ROWS tensor (n_seq).
struct Lowering {
    const graph::Graph& g;
    int32_t n_seq;
    int64_t n_past, n_new;
    Phase phase;

    int64_t rows(int32_t tensor) const {
        return g.tensors[size_t(tensor)].rows == graph::Rows::TOKENS ? int64_t(n_seq) * n_new : n_seq;
    }
    OpRecord lower(const graph::Node& node) const;
    void lower_moe_mla(const graph::Node& node, OpRecord& r) const;
};

// Expected distinct experts `tokens` tokens choose when each picks k of n uniformly (without
// repetition): n * (1 - (1 - k/n)^tokens), rounded up to whole experts.
int64_t expected_active_experts(int64_t n, int64_t k, int64_t tokens) {
    const double a = double(n) * (1.0 - std::pow(1.0 - double(k) / double(n), double(tokens)));
    return std::clamp<int64_t>(int64_t(std::ceil(a - 1e-9)), std::min(k, n), n);
}

// The records of graph/moe_builder.h and graph/mla_builder.h (sim/op_trace.h has the formulas).
void Lowering::lower_moe_mla(const graph::Node& nd, OpRecord& r) const {
    const graph::ModelShape& s = g.shape;
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
            r.flops = 2.0 * double(m) * double(nd.n) * double(nd.k) + (nd.in.size() > 2 ? 2.0 * double(m) * double(nd.n) : 0.0);
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
            const int64_t C = s.kv_lora_rank, P = s.qk_rope_head_dim;
            r.n = n_past + n_new;
            r.k = nd.k;
            r.n_head = s.n_head;
            r.n_head_kv = 1;
            r.weight_dtype = nd.dtype;
            r.weight_bytes = uint64_t(n_seq) * uint64_t(n_past + n_new) * row_bytes(nd.dtype, C + P);
            r.in_bytes = 4 * m * uint64_t(s.n_head * (C + P));
            r.out_bytes = 4 * m * uint64_t(s.n_head * C);
            const double pairs = double(n_new) * double(n_past) + double(n_new) * double(n_new + 1) / 2;
            r.flops = 2.0 * double(s.n_head) * double(2 * C + P) * double(n_seq) * pairs;
            break;
        }
        default: DUET_CHECK(false, "planner: {} is not a MoE/MLA operator", op_kind_name(nd.kind));
    }
}

OpRecord Lowering::lower(const graph::Node& nd) const {
    const graph::ModelShape& s = g.shape;
    OpRecord r;
    r.kind = nd.kind;
    r.phase = phase;
    r.layer = nd.layer;
    r.n_seq = n_seq;
    r.n = nd.n;
    r.weight_dtype = DType::F32;
    r.sibling_of_prev = nd.sibling_of_prev;
    const int64_t m = nd.out.empty() ? rows(nd.in[0]) : rows(nd.out[0]);
    r.m = m;
    const uint64_t mn = uint64_t(m * nd.n);
    switch (nd.kind) {
        case OpKind::EMBED:
            r.weight_dtype = nd.dtype;
            r.weight_bytes = uint64_t(m) * row_bytes(nd.dtype, nd.n);
            r.in_bytes = 4 * uint64_t(m);
            r.out_bytes = 4 * mn;
            break;
        case OpKind::RMSNORM:  // k > 0: one weight vector of k shared by every k-slice of the row (per head)
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
        case OpKind::MLA_ATTENTION: lower_moe_mla(nd, r); break;
        case OpKind::ATTENTION: {
            r.n = n_past + n_new;
            r.k = nd.k;
            r.n_head = s.n_head;
            r.n_head_kv = s.n_head_kv;
            r.weight_dtype = nd.dtype;
            r.weight_bytes = uint64_t(n_seq) * 2 * uint64_t(n_past + n_new) * row_bytes(nd.dtype, s.n_head_kv * nd.k);
            r.in_bytes = r.out_bytes = 4 * mn;
            const double pairs = double(n_new) * double(n_past) + double(n_new) * double(n_new + 1) / 2;
            r.flops = 4.0 * double(s.n_head) * double(nd.k) * double(n_seq) * pairs;
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
        case OpKind::SEND:
        case OpKind::RECV:
            // k = the peer stage; the boundary activations cross the link (the link model prices them).
            r.k = nd.k;
            r.in_bytes = r.out_bytes = 4 * mn;
            break;
    }
    return r;
}

}  // namespace

void plan_forward(const graph::Graph& g, int32_t n_seq, int64_t n_past, int64_t n_new, Phase phase, OpTrace& out) {
    const Lowering low{g, n_seq, n_past, n_new, phase};
    for (const graph::Node& nd : g.nodes) out.push_back(low.lower(nd));
}

namespace {
void check_lengths(int64_t seq_len, int64_t gen_len, int32_t batch, int64_t n_cached) {
    if (seq_len < 1) fail("--seq-len = {} is not allowed (allowed: 1 or more)", seq_len);
    if (gen_len < 1) fail("--gen-len = {} is not allowed (allowed: 1 or more)", gen_len);
    if (batch < 1) fail("--batch = {} is not allowed (allowed: 1 or more)", batch);
    if (n_cached < 0 || n_cached >= seq_len)
        fail("cached prefix = {} tokens is not allowed for a {}-token prompt (allowed: 0 to {}: at least one token is "
             "computed)", n_cached, seq_len, seq_len - 1);
}
}  // namespace

Plan plan_generation(const graph::Graph& g, int64_t seq_len, int64_t gen_len, int32_t batch, int64_t n_cached) {
    check_lengths(seq_len, gen_len, batch, n_cached);
    Plan p;
    p.graph = std::make_shared<const graph::Graph>(g);
    p.ops.reserve(g.nodes.size() * size_t(gen_len));
    plan_forward(g, batch, n_cached, seq_len - n_cached, Phase::PREFILL, p.ops);
    p.forwards.push_back({Phase::PREFILL, n_cached, seq_len - n_cached, 0, p.ops.size()});
    for (int64_t t = 1; t < gen_len; ++t) {
        const size_t begin = p.ops.size();
        const int64_t n_past = seq_len + t - 1;
        plan_forward(g, batch, n_past, 1, Phase::DECODE, p.ops);
        p.forwards.push_back({Phase::DECODE, n_past, 1, begin, p.ops.size()});
    }
    return p;
}

Plan plan_generation(const ModelShape& s, int64_t seq_len, int64_t gen_len, int32_t batch,
                     const graph::GraphOptions& go, int64_t n_cached) {
    check_lengths(seq_len, gen_len, batch, n_cached);
    return plan_generation(graph::build_graph(s, go), seq_len, gen_len, batch, n_cached);
}

std::vector<ForwardSpan> split_forwards(const OpTrace& ops) {
    std::vector<ForwardSpan> out;
    for (size_t i = 0; i < ops.size(); ++i) {
        if (ops[i].kind == OpKind::EMBED || out.empty()) {
            if (!out.empty()) out.back().end = i;
            ForwardSpan f;
            f.phase = ops[i].phase;
            f.n_new = ops[i].n_seq > 0 ? ops[i].m / ops[i].n_seq : ops[i].m;
            f.begin = i;
            out.push_back(f);
        }
        if (ops[i].kind == OpKind::ATTENTION && ops[i].layer == 0) out.back().n_past = ops[i].n - out.back().n_new;
    }
    if (!out.empty()) out.back().end = ops.size();
    return out;
}

}  // namespace duet::sim
