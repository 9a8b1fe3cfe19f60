#include "graph/tensor_catalogue.h"

#include <array>
#include <cstdio>
#include <vector>

#include "core/error.h"

namespace duet::graph {
namespace {

using R = WeightRole;
using P = Part;
using B = Binding;
using K = WeightKind;
using D = Dim;

// The dense decoder of the llama family (llama, mistral, qwen2), in llama.cpp's GGUF names
// (gguf-py/gguf/constants.py, MODEL_TENSOR / TENSOR_NAMES). Field order as TensorSpec:
// role, part, name, gguf, binding, kind, rows, cols, stack, when, tp, fused, residual, q4km,
// expert, falls_back_to, title, keep_f32.
constexpr TensorSpec kRows[] = {
    {R::TOKEN_EMBD, P::WEIGHT, "token_embd", "token_embd.weight", B::INPUT, K::TABLE, D::N_VOCAB, D::N_EMBD},
    {R::ROPE_FREQS, P::WEIGHT, "rope_freqs", "rope_freqs.weight", B::SHARED, K::VECTOR, D::ONE, D::ROT_HALF, D::ONE,
     When::ROPE_FREQS},

    {R::ATTN_NORM, P::WEIGHT, "attn_norm", "blk.%d.attn_norm.weight", B::BLOCK, K::VECTOR, D::ONE, D::N_EMBD},
    {R::ATTN_Q, P::WEIGHT, "attn_q", "blk.%d.attn_q.weight", B::BLOCK, K::MATRIX, D::Q_DIM, D::N_EMBD, D::ONE,
     When::Q_FULL, TpSplit::ROWS, R::ATTN_QKV},
    {R::ATTN_K, P::WEIGHT, "attn_k", "blk.%d.attn_k.weight", B::BLOCK, K::MATRIX, D::KV_DIM, D::N_EMBD, D::ONE,
     When::KV_DENSE, TpSplit::ROWS, R::ATTN_QKV},
    {R::ATTN_V, P::WEIGHT, "attn_v", "blk.%d.attn_v.weight", B::BLOCK, K::MATRIX, D::KV_DIM, D::N_EMBD, D::ONE,
     When::KV_DENSE, TpSplit::ROWS, R::ATTN_QKV, false, Q4kmMix::MORE_BITS_LAYERS},
    {R::ATTN_Q, P::BIAS, "attn_q", "blk.%d.attn_q.bias", B::BLOCK, K::VECTOR, D::ONE, D::Q_DIM, D::ONE,
     When::QKV_BIAS, TpSplit::ROWS},
    {R::ATTN_K, P::BIAS, "attn_k", "blk.%d.attn_k.bias", B::BLOCK, K::VECTOR, D::ONE, D::KV_DIM, D::ONE,
     When::QKV_BIAS, TpSplit::ROWS},
    {R::ATTN_V, P::BIAS, "attn_v", "blk.%d.attn_v.bias", B::BLOCK, K::VECTOR, D::ONE, D::KV_DIM, D::ONE,
     When::QKV_BIAS, TpSplit::ROWS},
    {R::ATTN_OUT, P::WEIGHT, "attn_out", "blk.%d.attn_output.weight", B::BLOCK, K::MATRIX, D::N_EMBD, D::O_DIM,
     D::ONE, When::ALWAYS, TpSplit::COLS, R::NONE, true, Q4kmMix::BASE, Expert::NONE, R::NONE, "attention-output"},
    {R::FFN_NORM, P::WEIGHT, "ffn_norm", "blk.%d.ffn_norm.weight", B::BLOCK, K::VECTOR, D::ONE, D::N_EMBD},
    {R::FFN_GATE, P::WEIGHT, "ffn_gate", "blk.%d.ffn_gate.weight", B::BLOCK, K::MATRIX, D::N_FF, D::N_EMBD, D::ONE,
     When::DENSE_FFN, TpSplit::ROWS, R::FFN_GATE_UP},
    {R::FFN_UP, P::WEIGHT, "ffn_up", "blk.%d.ffn_up.weight", B::BLOCK, K::MATRIX, D::N_FF, D::N_EMBD, D::ONE,
     When::DENSE_FFN, TpSplit::ROWS, R::FFN_GATE_UP},
    {R::FFN_DOWN, P::WEIGHT, "ffn_down", "blk.%d.ffn_down.weight", B::BLOCK, K::MATRIX, D::N_EMBD, D::N_FF, D::ONE,
     When::DENSE_FFN, TpSplit::COLS, R::NONE, true, Q4kmMix::MORE_BITS_LAYERS, Expert::NONE, R::NONE, "FFN-down"},

    {R::OUTPUT_NORM, P::WEIGHT, "output_norm", "output_norm.weight", B::OUTPUT, K::VECTOR, D::ONE, D::N_EMBD},
    {R::LM_HEAD, P::WEIGHT, "lm_head", "output.weight", B::OUTPUT, K::MATRIX, D::N_VOCAB, D::N_EMBD, D::ONE,
     When::UNTIED_OUTPUT, TpSplit::REPLICATED, R::NONE, false, Q4kmMix::Q6_K, Expert::NONE, R::TOKEN_EMBD},

    // Mixture-of-Experts FFN (graph/moe_builder.h), as llama.cpp names and shapes them (llama-arch.cpp
    // LLM_TENSOR_FFN_GATE_INP, _FFN_{GATE,UP,DOWN}_EXPS, _FFN_{GATE,UP,DOWN}_SHEXP, _FFN_GATE_INP_SHEXP;
    // loaders src/models/llama.cpp, qwen2moe.cpp, qwen3moe.cpp): routed experts are stacks of n_expert
    // matrices in one 3-D tensor, ggml shape {cols, rows, n_expert}; the router is kept F32 by
    // llama.cpp's tools; qwen2moe's shared-expert gate is an F32 vector {n_embd}.
    {R::FFN_GATE_INP, P::WEIGHT, "ffn_gate_inp", "blk.%d.ffn_gate_inp.weight", B::BLOCK, K::MATRIX, D::N_EXPERT,
     D::N_EMBD, D::ONE, When::MOE, TpSplit::REPLICATED, R::NONE, false, Q4kmMix::BASE, Expert::NONE, R::NONE, nullptr,
     true},
    {R::FFN_GATE_EXPS, P::WEIGHT, "ffn_gate_exps", "blk.%d.ffn_gate_exps.weight", B::BLOCK, K::MATRIX, D::N_FF_EXP,
     D::N_EMBD, D::N_EXPERT, When::MOE, TpSplit::ROWS, R::NONE, false, Q4kmMix::BASE, Expert::ROUTED},
    {R::FFN_UP_EXPS, P::WEIGHT, "ffn_up_exps", "blk.%d.ffn_up_exps.weight", B::BLOCK, K::MATRIX, D::N_FF_EXP,
     D::N_EMBD, D::N_EXPERT, When::MOE, TpSplit::ROWS, R::NONE, false, Q4kmMix::BASE, Expert::ROUTED},
    {R::FFN_DOWN_EXPS, P::WEIGHT, "ffn_down_exps", "blk.%d.ffn_down_exps.weight", B::BLOCK, K::MATRIX, D::N_EMBD,
     D::N_FF_EXP, D::N_EXPERT, When::MOE, TpSplit::COLS, R::NONE, true, Q4kmMix::BASE, Expert::ROUTED, R::NONE,
     "expert FFN-down"},
    {R::FFN_GATE_SHEXP, P::WEIGHT, "ffn_gate_shexp", "blk.%d.ffn_gate_shexp.weight", B::BLOCK, K::MATRIX,
     D::N_FF_SHEXP, D::N_EMBD, D::ONE, When::MOE_SHEXP, TpSplit::ROWS, R::NONE, false, Q4kmMix::BASE,
     Expert::SHARED},
    {R::FFN_UP_SHEXP, P::WEIGHT, "ffn_up_shexp", "blk.%d.ffn_up_shexp.weight", B::BLOCK, K::MATRIX, D::N_FF_SHEXP,
     D::N_EMBD, D::ONE, When::MOE_SHEXP, TpSplit::ROWS, R::NONE, false, Q4kmMix::BASE, Expert::SHARED},
    {R::FFN_DOWN_SHEXP, P::WEIGHT, "ffn_down_shexp", "blk.%d.ffn_down_shexp.weight", B::BLOCK, K::MATRIX, D::N_EMBD,
     D::N_FF_SHEXP, D::ONE, When::MOE_SHEXP, TpSplit::COLS, R::NONE, true, Q4kmMix::BASE, Expert::SHARED, R::NONE,
     "shared-expert FFN-down"},
    {R::FFN_GATE_INP_SHEXP, P::WEIGHT, "ffn_gate_inp_shexp", "blk.%d.ffn_gate_inp_shexp.weight", B::BLOCK,
     K::MATRIX, D::ONE, D::N_EMBD, D::ONE, When::MOE_SHEXP_GATE, TpSplit::REPLICATED, R::NONE, false, Q4kmMix::BASE,
     Expert::SHARED, R::NONE, nullptr, true},
    // The router's selection-only bias of DeepSeek-V3 (llama.cpp LLM_TENSOR_FFN_EXP_PROBS_B, named
    // "blk.N.exp_probs_b.bias", {n_expert} F32): added to the scores to choose the experts, not to
    // their weights.
    {R::FFN_EXP_PROBS_B, P::WEIGHT, "exp_probs_b", "blk.%d.exp_probs_b.bias", B::BLOCK, K::VECTOR, D::ONE,
     D::N_EXPERT, D::ONE, When::MOE_PROBS_BIAS},
    // Multi-head Latent Attention (graph/mla_builder.h; llama.cpp deepseek2, its llama-model.cpp
    // shapes): attn_k_b {qk_nope, kv_lora_rank, n_head} / attn_v_b {kv_lora_rank, v_head, n_head} are
    // the two halves of W_kv_b, one matrix per head (attn_k_b transposed by the converter), or, in
    // older conversions, attn_kv_b {kv_lora_rank, n_head * (qk_nope + v_head)} unsplit. attn_q
    // ([n_head*head_dim] rows) is the query when q_lora_rank is 0; attn_output reads n_head *
    // v_head_dim features (O_DIM).
    {R::ATTN_Q_A, P::WEIGHT, "attn_q_a", "blk.%d.attn_q_a.weight", B::BLOCK, K::MATRIX, D::Q_LORA, D::N_EMBD, D::ONE,
     When::MLA_Q_LORA},
    {R::ATTN_Q_A_NORM, P::WEIGHT, "attn_q_a_norm", "blk.%d.attn_q_a_norm.weight", B::BLOCK, K::VECTOR, D::ONE,
     D::Q_LORA, D::ONE, When::MLA_Q_LORA},
    {R::ATTN_Q_B, P::WEIGHT, "attn_q_b", "blk.%d.attn_q_b.weight", B::BLOCK, K::MATRIX, D::Q_DIM, D::Q_LORA, D::ONE,
     When::MLA_Q_LORA, TpSplit::ROWS},
    {R::ATTN_KV_A_MQA, P::WEIGHT, "attn_kv_a_mqa", "blk.%d.attn_kv_a_mqa.weight", B::BLOCK, K::MATRIX, D::KV_A,
     D::N_EMBD, D::ONE, When::MLA},
    {R::ATTN_KV_A_NORM, P::WEIGHT, "attn_kv_a_norm", "blk.%d.attn_kv_a_norm.weight", B::BLOCK, K::VECTOR, D::ONE,
     D::KV_LORA, D::ONE, When::MLA},
    {R::ATTN_KV_B, P::WEIGHT, "attn_kv_b", "blk.%d.attn_kv_b.weight", B::BLOCK, K::MATRIX, D::KV_B, D::KV_LORA,
     D::ONE, When::MLA_KV_B, TpSplit::ROWS},
    {R::ATTN_K_B, P::WEIGHT, "attn_k_b", "blk.%d.attn_k_b.weight", B::BLOCK, K::MATRIX, D::KV_LORA, D::QK_NOPE,
     D::N_HEAD, When::MLA_KV_SPLIT, TpSplit::STACK},
    {R::ATTN_V_B, P::WEIGHT, "attn_v_b", "blk.%d.attn_v_b.weight", B::BLOCK, K::MATRIX, D::V_HEAD, D::KV_LORA,
     D::N_HEAD, When::MLA_KV_SPLIT, TpSplit::STACK},
    // Qwen3's per-head q/k norms (llama.cpp LLM_TENSOR_ATTN_Q_NORM / ATTN_K_NORM).
    {R::ATTN_Q_NORM, P::WEIGHT, "attn_q_norm", "blk.%d.attn_q_norm.weight", B::BLOCK, K::VECTOR, D::ONE, D::HEAD_DIM,
     D::ONE, When::QK_NORM},
    {R::ATTN_K_NORM, P::WEIGHT, "attn_k_norm", "blk.%d.attn_k_norm.weight", B::BLOCK, K::VECTOR, D::ONE, D::HEAD_DIM,
     D::ONE, When::QK_NORM},

    // Built by graph/fuse_matmuls.h from the rows that name them in `fused`.
    {R::ATTN_QKV, P::WEIGHT, "attn_qkv", nullptr, B::BLOCK, K::FUSED, D::SUM_OF_PARTS, D::N_EMBD},
    {R::FFN_GATE_UP, P::WEIGHT, "ffn_gate_up", nullptr, B::BLOCK, K::FUSED, D::SUM_OF_PARTS, D::N_EMBD},
};

// Per-role lookups built once from kRows.
struct Index {
    std::array<const TensorSpec*, kWeightRoleCount> weight{}, bias{};
    std::array<std::vector<WeightRole>, kWeightRoleCount> parts;
    std::array<WeightRole, kWeightRoleCount> fused_into{};

    Index() {
        fused_into.fill(R::NONE);
        for (const TensorSpec& t : kRows) {
            auto& slot = (t.part == P::WEIGHT ? weight : bias)[size_t(t.role)];
            DUET_CHECK(slot == nullptr, "tensor catalogue: two {} rows for role {}",
                       t.part == P::WEIGHT ? "weight" : "bias", t.name);
            slot = &t;
            if (t.part == P::WEIGHT && t.fused != R::NONE) {
                parts[size_t(t.fused)].push_back(t.role);
                fused_into[size_t(t.role)] = t.fused;
            }
        }
    }
};

const Index& index() {
    static const Index idx;
    return idx;
}

}  // namespace

std::span<const TensorSpec> tensor_catalogue() { return kRows; }

const TensorSpec& weight_spec(WeightRole role) {
    const TensorSpec* t = index().weight[size_t(role)];
    DUET_CHECK(t != nullptr, "tensor catalogue: no row for weight role {}", int(role));
    return *t;
}

const TensorSpec* bias_spec(WeightRole role) { return index().bias[size_t(role)]; }

int64_t dim_value(Dim d, const ModelShape& s) {
    switch (d) {
        case D::ONE: return 1;
        case D::N_VOCAB: return s.n_vocab;
        case D::N_EMBD: return s.n_embd;
        case D::Q_DIM: return s.n_head * s.head_dim;
        case D::KV_DIM: return s.n_head_kv * s.head_dim;
        case D::N_FF: return s.n_ff;
        case D::ROT_HALF: return (s.n_rot ? s.n_rot : s.head_dim) / 2;
        case D::SUM_OF_PARTS: break;
        case D::HEAD_DIM: return s.head_dim;
        case D::N_HEAD: return s.n_head;
        case D::N_EXPERT: return s.n_expert;
        case D::N_FF_EXP: return s.n_ff_exp;
        case D::N_FF_SHEXP: return s.n_ff_shexp;
        case D::Q_LORA: return s.q_lora_rank;
        case D::KV_LORA: return s.kv_lora_rank;
        case D::KV_A: return s.kv_lora_rank + s.qk_rope_head_dim;
        case D::QK_NOPE: return s.qk_nope_head_dim;
        case D::V_HEAD: return s.v_head_dim;
        case D::MLA_OUT: return s.n_head * s.v_head_dim;
        case D::O_DIM: return s.is_mla() ? s.n_head * s.v_head_dim : s.n_head * s.head_dim;
        case D::KV_B: return s.n_head * (s.qk_nope_head_dim + s.v_head_dim);
    }
    DUET_CHECK(false, "tensor catalogue: dim {} has no single value", int(d));
    __builtin_unreachable();
}

int64_t spec_rows(const TensorSpec& t, const ModelShape& s) {
    if (t.rows != D::SUM_OF_PARTS) return dim_value(t.rows, s);
    int64_t n = 0;
    for (WeightRole p : fused_parts(t.role)) n += spec_rows(weight_spec(p), s);
    return n;
}

int64_t spec_cols(const TensorSpec& t, const ModelShape& s) { return dim_value(t.cols, s); }

int64_t spec_elems(const TensorSpec& t, const ModelShape& s) {
    return spec_rows(t, s) * spec_cols(t, s) * dim_value(t.stack, s);
}

bool present(const TensorSpec& t, const ModelShape& s, int64_t layer) {
    if (t.kind == K::FUSED) return false;
    switch (t.when) {
        case When::ALWAYS: return true;
        case When::DENSE_FFN: return !s.moe_layer(layer);
        case When::MOE: return s.moe_layer(layer);
        case When::MOE_SHEXP: return s.moe_layer(layer) && s.n_ff_shexp > 0;
        case When::MOE_SHEXP_GATE: return s.moe_layer(layer) && s.n_ff_shexp > 0 && s.shared_expert_gate;
        case When::QK_NORM: return s.qk_norm;
        case When::QKV_BIAS: return s.qkv_bias;
        case When::UNTIED_OUTPUT: return !s.tied_output;
        case When::ROPE_FREQS: return s.has_rope_freqs;
        case When::MOE_PROBS_BIAS: return s.moe_layer(layer) && s.expert_probs_bias;
        case When::Q_FULL: return !s.is_mla() || s.q_lora_rank == 0;
        case When::KV_DENSE: return !s.is_mla();
        case When::MLA: return s.is_mla();
        case When::MLA_Q_LORA: return s.is_mla() && s.q_lora_rank > 0;
        case When::MLA_KV_SPLIT: return s.is_mla() && !s.mla_kv_b;
        case When::MLA_KV_B: return s.is_mla() && s.mla_kv_b;
    }
    return false;
}

std::string gguf_name(const TensorSpec& t, int64_t layer) {
    DUET_CHECK(t.gguf != nullptr, "tensor catalogue: role {} has no GGUF tensor", t.name);
    if (t.binding != B::BLOCK) return t.gguf;
    char buf[128];
    std::snprintf(buf, sizeof buf, t.gguf, int(layer));
    return buf;
}

int64_t count_params(const ModelShape& s) {
    int64_t n = 0;
    for (const TensorSpec& t : kRows) {
        if (t.binding != B::BLOCK) {
            if (present(t, s)) n += spec_elems(t, s);
            continue;
        }
        for (int64_t l = 0; l < s.n_layer; ++l)
            if (present(t, s, l)) n += spec_elems(t, s);
    }
    return n;
}

std::span<const WeightRole> fused_parts(WeightRole fused) { return index().parts[size_t(fused)]; }

WeightRole fused_role_of(WeightRole role) { return index().fused_into[size_t(role)]; }

bool ffn_input_matmul(WeightRole role) {
    return role == R::FFN_GATE_UP || fused_role_of(role) == R::FFN_GATE_UP;
}

Dim tp_split_dim(const TensorSpec& t) {
    if (t.tp == TpSplit::STACK) return t.stack;
    return t.tp == TpSplit::ROWS && t.kind != K::VECTOR ? t.rows : t.cols;
}

namespace {

// The features of a range of heads, `width` each.
Range per_head(const Range& heads, int64_t width) { return {heads.begin * width, heads.count * width}; }

}  // namespace

Range tp_range(Dim d, const TpShard& sh, const ModelShape& full) {
    switch (d) {
        case D::Q_DIM: return per_head(sh.q_heads, full.head_dim);
        case D::O_DIM: return per_head(sh.q_heads, full.is_mla() ? full.v_head_dim : full.head_dim);
        case D::MLA_OUT: return per_head(sh.q_heads, full.v_head_dim);
        case D::KV_B: return per_head(sh.q_heads, full.qk_nope_head_dim + full.v_head_dim);
        case D::N_HEAD: return sh.q_heads;
        case D::KV_DIM: return per_head(sh.kv_heads, full.head_dim);
        case D::N_FF: return sh.ff;
        case D::N_FF_EXP: return sh.ff_exp;
        case D::N_FF_SHEXP: return sh.ff_shexp;
        default: return {0, dim_value(d, full)};
    }
}

}  // namespace duet::graph
