#include "runtime/model_shape.h"

namespace duet::runtime {

sim::ModelShape model_shape(const model::Hparams& hp, DType weight_dtype, DType kv_dtype, std::string name) {
    sim::ModelShape s;
    s.name = std::move(name);
    s.n_vocab = hp.n_vocab;
    s.n_embd = hp.n_embd;
    s.n_layer = hp.n_layer;
    s.n_head = hp.n_head;
    s.n_head_kv = hp.n_head_kv;
    s.n_ff = hp.n_ff;
    s.head_dim = hp.head_dim;
    s.tied_output = hp.tied_output;
    s.qkv_bias = hp.qkv_bias;
    s.rope_neox = hp.rope_neox;
    s.n_expert = hp.n_expert;
    s.n_expert_used = hp.n_expert_used;
    s.n_ff_exp = hp.n_ff_exp;
    s.n_ff_shexp = hp.n_ff_shexp;
    s.n_layer_dense_lead = hp.n_layer_dense_lead;
    s.shared_expert_gate = hp.shared_expert_gate;
    s.qk_norm = hp.qk_norm;
    s.q_lora_rank = hp.q_lora_rank;
    s.kv_lora_rank = hp.kv_lora_rank;
    s.qk_rope_head_dim = hp.qk_rope_head_dim;
    s.qk_nope_head_dim = hp.qk_nope_head_dim;
    s.v_head_dim = hp.v_head_dim;
    s.weight_dtype = weight_dtype;
    s.kv_dtype = kv_dtype;
    return s;
}

}  // namespace duet::runtime
