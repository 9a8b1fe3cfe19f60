#include "graph/llama_builder.h"

#include "graph/block_builder.h"
#include "graph/mla_builder.h"
#include "graph/moe_builder.h"

namespace duet::graph {

Graph build_llama(const ModelShape& s) {
    Graph g;
    g.shape = s;
    BlockBuilder b{g, s};
    const int64_t E = s.n_embd, q_dim = s.n_head * s.head_dim, kv_dim = s.n_head_kv * s.head_dim;

    g.token_ids = g.add_tensor("tokens", Rows::TOKENS, 1, TensorKind::TOKEN_IDS);
    int32_t x = g.add_tensor("x", Rows::TOKENS, E);
    g.add_node({OpKind::EMBED, WeightRole::TOKEN_EMBD, -1, {g.token_ids}, {x}, E, 0, s.weight_dtype});

    for (int32_t l = 0; l < int32_t(s.n_layer); ++l) {
        const int32_t xn = b.norm(l, WeightRole::ATTN_NORM, x, b.tensor(l, "attn_in", E));
        if (s.is_mla()) {
            x = b.residual(l, x, b.matmul(l, WeightRole::ATTN_OUT, add_mla_attention(b, l, xn), E, "attn_out"));
        } else {
            int32_t q = b.matmul(l, WeightRole::ATTN_Q, xn, q_dim, "q", s.qkv_bias);
            int32_t k = b.matmul(l, WeightRole::ATTN_K, xn, kv_dim, "k", s.qkv_bias);
            const int32_t v = b.matmul(l, WeightRole::ATTN_V, xn, kv_dim, "v", s.qkv_bias);
            if (s.qk_norm) {  // per head, in place: k = head_dim values per norm weight
                q = b.head_norm(l, WeightRole::ATTN_Q_NORM, q, "q_norm");
                k = b.head_norm(l, WeightRole::ATTN_K_NORM, k, "k_norm");
            }
            const int32_t qr = g.alias(q, b.name(l, "q_rope")), kr = g.alias(k, b.name(l, "k_rope"));
            g.add_node({OpKind::ROPE, WeightRole::NONE, l, {q, k}, {qr, kr}, q_dim + kv_dim, s.head_dim, DType::F32});
            g.add_node({OpKind::KV_WRITE, WeightRole::NONE, l, {kr, v}, {}, 2 * kv_dim, 0, s.kv_dtype});
            const int32_t att = b.tensor(l, "attn", q_dim);
            g.add_node({OpKind::ATTENTION, WeightRole::NONE, l, {qr}, {att}, q_dim, s.head_dim, s.kv_dtype});
            x = b.residual(l, x, b.matmul(l, WeightRole::ATTN_OUT, att, E, "attn_out"));
        }

        const int32_t fn = b.norm(l, WeightRole::FFN_NORM, x, b.tensor(l, "ffn_in", E));
        if (s.moe_layer(l)) {
            x = b.residual(l, x, add_moe_ffn(b, l, fn));
            continue;
        }
        const int32_t gate = b.matmul(l, WeightRole::FFN_GATE, fn, s.n_ff, "gate");
        const int32_t up = b.matmul(l, WeightRole::FFN_UP, fn, s.n_ff, "up");
        const int32_t act = b.tensor(l, "ffn_act", s.n_ff);
        g.add_node({OpKind::SWIGLU, WeightRole::NONE, l, {gate, up}, {act}, s.n_ff, 0, DType::F32});
        x = b.residual(l, x, b.matmul(l, WeightRole::FFN_DOWN, act, E, "ffn_out"));
    }
    const int32_t xo = b.norm(-1, WeightRole::OUTPUT_NORM, x, g.add_tensor("out_in", Rows::OUT_ROWS, E));
    g.logits = g.add_tensor("logits", Rows::OUT_ROWS, s.n_vocab, TensorKind::LOGITS);
    g.add_node({OpKind::MATMUL, WeightRole::LM_HEAD, -1, {xo}, {g.logits}, s.n_vocab, E, s.weight_dtype});
    g.add_node({OpKind::OUTPUT, WeightRole::NONE, -1, {g.logits}, {}, s.n_vocab, 0, DType::F32});
    g.finalize();
    return g;
}

}  // namespace duet::graph
