#include "graph/mla_builder.h"

namespace duet::graph {

int32_t add_mla_attention(BlockBuilder& b, int32_t l, int32_t xn) {
    const ModelShape& s = b.s;
    Graph& g = b.g;
    const int64_t H = s.n_head, C = s.kv_lora_rank, R = s.qk_rope_head_dim, N = s.qk_nope_head_dim,
                  V = s.v_head_dim;

    int32_t q;
    if (s.q_lora_rank > 0) {
        const int32_t qa = b.matmul(l, WeightRole::ATTN_Q_A, xn, s.q_lora_rank, "q_a");
        const int32_t qan = b.norm(l, WeightRole::ATTN_Q_A_NORM, qa, b.tensor(l, "q_a_n", s.q_lora_rank));
        q = b.matmul(l, WeightRole::ATTN_Q_B, qan, H * (N + R), "q");
    } else {
        q = b.matmul(l, WeightRole::ATTN_Q, xn, H * (N + R), "q");
    }
    const int32_t kv_a = b.matmul(l, WeightRole::ATTN_KV_A_MQA, xn, C + R, "kv_a");
    const int32_t c_kv_raw = g.view(kv_a, b.name(l, "c_kv_raw"), 0, C);
    const int32_t k_pe = g.view(kv_a, b.name(l, "k_pe"), C, R);
    const int32_t c_kv = b.norm(l, WeightRole::ATTN_KV_A_NORM, c_kv_raw, b.tensor(l, "c_kv", C));

    // q keeps llama.cpp's layout, each head [N no-RoPE | R RoPE] (q_nope and q_pe are per-head
    // column ranges, not one view each): ROPE rotates the R part of every head of q in place and
    // the shared key k_pe; HEAD_MATMUL(attn_k_b) reads each head's N part, MLA_ATTENTION its R part.
    const int32_t qr = g.alias(q, b.name(l, "q_rope")), kr = g.alias(k_pe, b.name(l, "k_pe_rope"));
    g.add_node({OpKind::ROPE, WeightRole::NONE, l, {q, k_pe}, {qr, kr}, (H + 1) * R, R, DType::F32});
    g.add_node({OpKind::KV_WRITE, WeightRole::NONE, l, {c_kv, kr}, {}, C + R, 0, s.kv_dtype});

    const int32_t q_lat = b.tensor(l, "q_lat", H * C);
    g.add_node({OpKind::HEAD_MATMUL, WeightRole::ATTN_K_B, l, {qr}, {q_lat}, C, N, s.weight_dtype});
    const int32_t o_lat = b.tensor(l, "o_lat", H * C);
    g.add_node({OpKind::MLA_ATTENTION, WeightRole::NONE, l, {q_lat, qr}, {o_lat}, H * C, C + R, s.kv_dtype});
    const int32_t o = b.tensor(l, "attn", H * V);
    g.add_node({OpKind::HEAD_MATMUL, WeightRole::ATTN_V_B, l, {o_lat}, {o}, V, C, s.weight_dtype});
    return o;
}

}  // namespace duet::graph
