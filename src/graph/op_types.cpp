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
    }
    return "?";
}

const char* phase_name(Phase p) { return p == Phase::PREFILL ? "prefill" : "decode"; }

}  // namespace duet::graph
