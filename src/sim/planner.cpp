#include "sim/planner.h"

#include "core/error.h"

namespace duet::sim {
namespace {

struct Emitter {
    const ModelShape& s;
    int32_t n_seq;
    Phase phase;
    OpTrace& out;

    OpRecord base(OpKind kind, int32_t layer, int64_t m, int64_t n) const {
        OpRecord r;
        r.kind = kind;
        r.phase = phase;
        r.layer = layer;
        r.n_seq = n_seq;
        r.m = m;
        r.n = n;
        r.weight_dtype = s.weight_dtype;
        return r;
    }
    void norm(int32_t layer, int64_t m) {
        OpRecord r = base(OpKind::RMSNORM, layer, m, s.n_embd);
        r.weight_dtype = DType::F32;
        r.weight_bytes = 4 * uint64_t(s.n_embd);
        r.in_bytes = r.out_bytes = 4 * uint64_t(m * s.n_embd);
        r.flops = 4.0 * double(m) * double(s.n_embd);
        out.push_back(r);
    }
    void matmul(int32_t layer, WeightRole role, int64_t m, int64_t n, int64_t k) {
        OpRecord r = base(OpKind::MATMUL, layer, m, n);
        r.role = role;
        r.k = k;
        r.weight_bytes = uint64_t(n) * row_bytes(s.weight_dtype, k);
        r.in_bytes = 4 * uint64_t(m * k);
        r.out_bytes = 4 * uint64_t(m * n);
        r.flops = 2.0 * double(m) * double(n) * double(k);
        out.push_back(r);
    }
    void elementwise(OpKind kind, int32_t layer, int64_t m, int64_t n, int in_operands, double flops_per_elem) {
        OpRecord r = base(kind, layer, m, n);
        r.weight_dtype = DType::F32;
        r.in_bytes = 4 * uint64_t(in_operands) * uint64_t(m * n);
        r.out_bytes = 4 * uint64_t(m * n);
        r.flops = flops_per_elem * double(m) * double(n);
        out.push_back(r);
    }
};

}  // namespace

void plan_forward(const ModelShape& s, int32_t n_seq, int64_t n_past, int64_t n_new, Phase phase, OpTrace& out) {
    Emitter e{s, n_seq, phase, out};
    const int64_t T = int64_t(n_seq) * n_new;
    const int64_t E = s.n_embd, q_dim = s.n_head * s.head_dim, kv_dim = s.n_head_kv * s.head_dim;
    const uint64_t kv_row = row_bytes(s.kv_dtype, kv_dim);

    OpRecord emb = e.base(OpKind::EMBED, -1, T, E);
    emb.weight_bytes = uint64_t(T) * row_bytes(s.weight_dtype, E);
    emb.in_bytes = 4 * uint64_t(T);
    emb.out_bytes = 4 * uint64_t(T * E);
    out.push_back(emb);

    for (int32_t l = 0; l < int32_t(s.n_layer); ++l) {
        e.norm(l, T);
        e.matmul(l, WeightRole::ATTN_Q, T, q_dim, E);
        e.matmul(l, WeightRole::ATTN_K, T, kv_dim, E);
        e.matmul(l, WeightRole::ATTN_V, T, kv_dim, E);
        OpRecord rope = e.base(OpKind::ROPE, l, T, q_dim + kv_dim);
        rope.weight_dtype = DType::F32;
        rope.k = s.head_dim;
        rope.n_head = s.n_head;
        rope.n_head_kv = s.n_head_kv;
        rope.in_bytes = rope.out_bytes = 4 * uint64_t(T * (q_dim + kv_dim));
        rope.flops = 3.0 * double(T) * double(q_dim + kv_dim);
        out.push_back(rope);
        OpRecord kv = e.base(OpKind::KV_WRITE, l, T, 2 * kv_dim);
        kv.weight_dtype = s.kv_dtype;
        kv.in_bytes = 4 * uint64_t(T * 2 * kv_dim);
        kv.out_bytes = uint64_t(T) * 2 * kv_row;
        out.push_back(kv);
        OpRecord at = e.base(OpKind::ATTENTION, l, T, n_past + n_new);
        at.k = s.head_dim;
        at.n_head = s.n_head;
        at.n_head_kv = s.n_head_kv;
        at.weight_dtype = s.kv_dtype;
        at.weight_bytes = uint64_t(n_seq) * 2 * uint64_t(n_past + n_new) * kv_row;
        at.in_bytes = at.out_bytes = 4 * uint64_t(T * q_dim);
        const double pairs = double(n_new) * double(n_past) + double(n_new) * double(n_new + 1) / 2;
        at.flops = 4.0 * double(s.n_head) * double(s.head_dim) * double(n_seq) * pairs;
        out.push_back(at);
        e.matmul(l, WeightRole::ATTN_OUT, T, E, q_dim);
        e.elementwise(OpKind::ADD, l, T, E, 2, 1);
        e.norm(l, T);
        e.matmul(l, WeightRole::FFN_GATE, T, s.n_ff, E);
        e.matmul(l, WeightRole::FFN_UP, T, s.n_ff, E);
        e.elementwise(OpKind::SWIGLU, l, T, s.n_ff, 2, 4);
        e.matmul(l, WeightRole::FFN_DOWN, T, E, s.n_ff);
        e.elementwise(OpKind::ADD, l, T, E, 2, 1);
    }
    e.norm(-1, n_seq);
    e.matmul(-1, WeightRole::LM_HEAD, n_seq, s.n_vocab, E);
    OpRecord o = e.base(OpKind::OUTPUT, -1, n_seq, s.n_vocab);
    o.weight_dtype = DType::F32;
    o.in_bytes = 4 * uint64_t(n_seq * s.n_vocab);
    o.out_bytes = 4 * uint64_t(n_seq);
    o.flops = double(n_seq) * double(s.n_vocab);
    out.push_back(o);
}

Plan plan_generation(const ModelShape& s, int64_t seq_len, int64_t gen_len, int32_t batch) {
    if (seq_len < 1) fail("--seq-len = {} is not allowed (allowed: 1 or more)", seq_len);
    if (gen_len < 1) fail("--gen-len = {} is not allowed (allowed: 1 or more)", gen_len);
    if (batch < 1) fail("--batch = {} is not allowed (allowed: 1 or more)", batch);
    if (s.n_layer < 1 || s.n_embd < 1 || s.n_head < 1 || s.n_head_kv < 1 || s.head_dim < 1 || s.n_ff < 1 ||
        s.n_vocab < 1)
        fail("model shape '{}' is incomplete (n_layer {}, n_embd {}, n_head {}, n_head_kv {}, head_dim {}, n_ff {}, "
             "n_vocab {})",
             s.name, s.n_layer, s.n_embd, s.n_head, s.n_head_kv, s.head_dim, s.n_ff, s.n_vocab);
    Plan p;
    const size_t per_forward = 4 + 15 * size_t(s.n_layer);
    p.ops.reserve(per_forward * size_t(gen_len));
    plan_forward(s, batch, 0, seq_len, Phase::PREFILL, p.ops);
    p.forwards.push_back({Phase::PREFILL, 0, seq_len, 0, p.ops.size()});
    for (int64_t t = 1; t < gen_len; ++t) {
        const size_t begin = p.ops.size();
        const int64_t n_past = seq_len + t - 1;
        plan_forward(s, batch, n_past, 1, Phase::DECODE, p.ops);
        p.forwards.push_back({Phase::DECODE, n_past, 1, begin, p.ops.size()});
    }
    return p;
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
