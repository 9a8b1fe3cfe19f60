#pragma once
// Small helpers the architecture builders share, so a block reads like the model's equations
// (graph/llama_builder.cpp, graph/moe_builder.cpp, graph/mla_builder.cpp). Each appends nodes
// and tensors to `g`; tensors are named "l<layer>.<what>".
// Thread safety: a BlockBuilder writes its graph; one per build.
#include <string>

#include <fmt/format.h>

#include "graph/graph.h"

namespace duet::graph {

struct BlockBuilder {
    Graph& g;
    const ModelShape& s;

    std::string name(int32_t layer, const char* what) const { return fmt::format("l{}.{}", layer, what); }
    int32_t tensor(int32_t layer, const char* what, int64_t width, Rows rows = Rows::TOKENS) {
        return g.add_tensor(name(layer, what), rows, width);
    }
    int32_t norm(int32_t layer, WeightRole role, int32_t x, int32_t out) {
        g.add_node({OpKind::RMSNORM, role, layer, {x}, {out}, g.tensors[size_t(out)].width, 0, DType::F32});
        return out;
    }
    // RMSNorm of each head_dim slice of x, in place (Qwen3's q/k norms): n = x's width, k = head_dim
    // (the weight vector's length).
    int32_t head_norm(int32_t layer, WeightRole role, int32_t x, const char* what) {
        const int32_t y = g.alias(x, name(layer, what));
        g.add_node({OpKind::RMSNORM, role, layer, {x}, {y}, g.tensors[size_t(x)].width, s.head_dim, DType::F32});
        return y;
    }
    int32_t matmul(int32_t layer, WeightRole role, int32_t x, int64_t n, const char* what, bool bias = false,
                   Rows rows = Rows::TOKENS) {
        const int32_t y = tensor(layer, what, n, rows);
        g.add_node({OpKind::MATMUL, role, layer, {x}, {y}, n, g.tensors[size_t(x)].width, s.weight_dtype, bias});
        return y;
    }
    // x += delta, in place: the result is an alias of x.
    int32_t residual(int32_t layer, int32_t x, int32_t delta) {
        const int32_t y = g.alias(x, name(layer, "x"));
        g.add_node({OpKind::ADD, WeightRole::NONE, layer, {x, delta}, {y}, s.n_embd, 0, DType::F32});
        return y;
    }
    // down(silu(gate(x)) * up(x)) of width n_ff: the dense FFN and the shared experts.
    int32_t swiglu_ffn(int32_t layer, int32_t x, int64_t n_ff, WeightRole gate_role, WeightRole up_role,
                       WeightRole down_role, const char* prefix) {
        const std::string p(prefix);
        const int32_t gate = matmul(layer, gate_role, x, n_ff, (p + "gate").c_str());
        const int32_t up = matmul(layer, up_role, x, n_ff, (p + "up").c_str());
        const int32_t act = tensor(layer, (p + "act").c_str(), n_ff);
        g.add_node({OpKind::SWIGLU, WeightRole::NONE, layer, {gate, up}, {act}, n_ff, 0, DType::F32});
        return matmul(layer, down_role, act, s.n_embd, (p + "out").c_str());
    }
};

}  // namespace duet::graph
