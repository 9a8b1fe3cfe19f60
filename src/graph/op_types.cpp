#include "graph/op_types.h"

namespace duet::graph {

const char* op_kind_name(OpKind k) {
    switch (k) {
        case OpKind::EMBED: return "embed";
        case OpKind::RMSNORM: return "rmsnorm";
        case OpKind::MATMUL: return "matmul";
        case OpKind::ROPE: return "rope";
        case OpKind::KV_WRITE: return "kv_write";
        case OpKind::ROPE_KV_WRITE: return "rope_kv_write";
        case OpKind::ATTENTION: return "attention";
        case OpKind::SWIGLU: return "swiglu";
        case OpKind::ADD: return "add";
        case OpKind::OUTPUT: return "output";
        case OpKind::ALL_REDUCE: return "all_reduce";
        case OpKind::REDUCE_SCATTER: return "reduce_scatter";
        case OpKind::ALL_GATHER: return "all_gather";
        case OpKind::SEND: return "send";
        case OpKind::RECV: return "recv";
        case OpKind::MOE_ROUTE: return "moe_route";
        case OpKind::MOE_MATMUL: return "moe_matmul";
        case OpKind::MOE_COMBINE: return "moe_combine";
        case OpKind::HEAD_MATMUL: return "head_matmul";
        case OpKind::MLA_ATTENTION: return "mla_attention";
    }
    return "?";
}

const char* weight_role_name(WeightRole r) {
    switch (r) {
        case WeightRole::NONE: return "none";
        case WeightRole::ATTN_Q: return "attn_q";
        case WeightRole::ATTN_K: return "attn_k";
        case WeightRole::ATTN_V: return "attn_v";
        case WeightRole::ATTN_OUT: return "attn_out";
        case WeightRole::FFN_GATE: return "ffn_gate";
        case WeightRole::FFN_UP: return "ffn_up";
        case WeightRole::FFN_DOWN: return "ffn_down";
        case WeightRole::LM_HEAD: return "lm_head";
        case WeightRole::ATTN_QKV: return "attn_qkv";
        case WeightRole::FFN_GATE_UP: return "ffn_gate_up";
        case WeightRole::TOKEN_EMBD: return "token_embd";
        case WeightRole::ATTN_NORM: return "attn_norm";
        case WeightRole::FFN_NORM: return "ffn_norm";
        case WeightRole::OUTPUT_NORM: return "output_norm";
        case WeightRole::FFN_GATE_INP: return "ffn_gate_inp";
        case WeightRole::FFN_GATE_EXPS: return "ffn_gate_exps";
        case WeightRole::FFN_UP_EXPS: return "ffn_up_exps";
        case WeightRole::FFN_DOWN_EXPS: return "ffn_down_exps";
        case WeightRole::FFN_GATE_SHEXP: return "ffn_gate_shexp";
        case WeightRole::FFN_UP_SHEXP: return "ffn_up_shexp";
        case WeightRole::FFN_DOWN_SHEXP: return "ffn_down_shexp";
        case WeightRole::FFN_GATE_INP_SHEXP: return "ffn_gate_inp_shexp";
        case WeightRole::ATTN_Q_A: return "attn_q_a";
        case WeightRole::ATTN_Q_B: return "attn_q_b";
        case WeightRole::ATTN_KV_A_MQA: return "attn_kv_a_mqa";
        case WeightRole::ATTN_K_B: return "attn_k_b";
        case WeightRole::ATTN_V_B: return "attn_v_b";
        case WeightRole::ATTN_Q_A_NORM: return "attn_q_a_norm";
        case WeightRole::ATTN_KV_A_NORM: return "attn_kv_a_norm";
        case WeightRole::ATTN_Q_NORM: return "attn_q_norm";
        case WeightRole::ATTN_K_NORM: return "attn_k_norm";
    }
    return "?";
}

const char* phase_name(Phase p) { return p == Phase::PREFILL ? "prefill" : "decode"; }

}  // namespace duet::graph
