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
    s.weight_dtype = weight_dtype;
    s.kv_dtype = kv_dtype;
    return s;
}

}  // namespace duet::runtime
