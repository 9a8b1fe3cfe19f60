#include "graph/moe_builder.h"

namespace duet::graph {
namespace {

// One grouped expert matmul: per-expert weight [n][k]; the output holds k_used rows of n per token.
int32_t moe_matmul(BlockBuilder& b, int32_t layer, WeightRole role, int32_t x, int64_t n, int64_t k,
                   const char* what) {
    const int32_t y = b.tensor(layer, what, b.s.n_expert_used * n);
    b.g.add_node({OpKind::MOE_MATMUL, role, layer, {x}, {y}, n, k, b.s.weight_dtype});
    return y;
}

}  // namespace

int32_t add_moe_ffn(BlockBuilder& b, int32_t l, int32_t xn) {
    const ModelShape& s = b.s;
    Graph& g = b.g;
    const int64_t E = s.n_embd, K = s.n_expert_used, F = s.n_ff_exp;

    const int32_t logits = b.matmul(l, WeightRole::FFN_GATE_INP, xn, s.n_expert, "router");
    const int32_t w = b.tensor(l, "expert_w", K);
    g.add_node({OpKind::MOE_ROUTE, WeightRole::NONE, l, {logits}, {w}, s.n_expert, K, DType::F32});

    const int32_t gate = moe_matmul(b, l, WeightRole::FFN_GATE_EXPS, xn, F, E, "exp_gate");
    const int32_t up = moe_matmul(b, l, WeightRole::FFN_UP_EXPS, xn, F, E, "exp_up");
    const int32_t act = b.tensor(l, "exp_act", K * F);
    g.add_node({OpKind::SWIGLU, WeightRole::NONE, l, {gate, up}, {act}, K * F, 0, DType::F32});
    const int32_t down = moe_matmul(b, l, WeightRole::FFN_DOWN_EXPS, act, E, F, "exp_out");

    std::vector<int32_t> parts = {down, w};
    if (s.n_ff_shexp > 0) {
        parts.push_back(b.swiglu_ffn(l, xn, s.n_ff_shexp, WeightRole::FFN_GATE_SHEXP, WeightRole::FFN_UP_SHEXP,
                                     WeightRole::FFN_DOWN_SHEXP, "shexp_"));
        if (s.shared_expert_gate) parts.push_back(b.matmul(l, WeightRole::FFN_GATE_INP_SHEXP, xn, 1, "shexp_gate"));
    }
    const int32_t out = b.tensor(l, "moe_out", E);
    g.add_node({OpKind::MOE_COMBINE, WeightRole::NONE, l, parts, {out}, E, K, DType::F32});
    return out;
}

}  // namespace duet::graph
