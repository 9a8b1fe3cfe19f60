#include "graph/op_types.h"

#include "graph/tensor_catalogue.h"

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
        case OpKind::ALL_TO_ALL: return "all_to_all";
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

const char* weight_role_name(WeightRole r) { return r == WeightRole::NONE ? "none" : weight_spec(r).name; }

const char* phase_name(Phase p) { return p == Phase::PREFILL ? "prefill" : "decode"; }

}  // namespace duet::graph
