#pragma once
// The toy Mixture-of-Experts + latent-attention shape of the simulator's MoE/MLA tests and the
// lookup of one planner record.
#include <stdexcept>

#include "graph/model_shape.h"
#include "sim/planner.h"

namespace duet::test {

// DeepSeek-style toy: MLA with a compressed query, 1 dense-first layer, 8 experts top-2 + 1 shared.
inline graph::ModelShape mla_moe_shape() {
    graph::ModelShape s;
    s.name = "toy-deepseek";
    s.n_vocab = 512;
    s.n_embd = 64;
    s.n_layer = 3;
    s.n_head = 4;
    s.n_head_kv = 4;
    s.n_ff = 192;
    s.head_dim = 24;  // qk_nope 16 + qk_rope 8
    s.n_expert = 8;
    s.n_expert_used = 2;
    s.n_ff_exp = 24;
    s.n_ff_shexp = 24;
    s.n_layer_dense_lead = 1;
    s.q_lora_rank = 48;
    s.kv_lora_rank = 32;
    s.qk_rope_head_dim = 8;
    s.qk_nope_head_dim = 16;
    s.v_head_dim = 16;
    return s;
}

// The toy with grouped-query attention in place of the latent (Qwen3-MoE's and Mixtral's block).
inline graph::ModelShape gqa_moe_shape() {
    graph::ModelShape s = mla_moe_shape();
    s.name = "toy-moe";
    s.n_head_kv = 2;
    s.head_dim = 16;
    s.q_lora_rank = s.kv_lora_rank = s.qk_rope_head_dim = s.qk_nope_head_dim = s.v_head_dim = 0;
    return s;
}

// The first record of `kind` (and weight `role`) of `layer` in phase `ph`; throws when none.
inline const sim::OpRecord& find(const sim::Plan& p, sim::Phase ph, int32_t layer, graph::OpKind kind,
                                 graph::WeightRole role = graph::WeightRole::NONE) {
    for (const sim::OpRecord& r : p.ops)
        if (r.phase == ph && r.layer == layer && r.kind == kind && r.role == role) return r;
    throw std::runtime_error("record not found");
}

}  // namespace duet::test
