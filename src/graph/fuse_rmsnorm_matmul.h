#pragma once
// The RMSNorm fusion: an RMSNORM whose output feeds exactly one matmul that quantises its input
// becomes part of that matmul — one kernel normalises each row and writes the matmul's
// quantised activation blocks directly (kernels.h rmsnorm_quantize), and the matmul takes them
// (matmul_quantized). The f32 normed tensor is neither written nor read.
//
// Rewrite (consecutive nodes, same layer):
//   RMSNORM(role R) {x} -> {xn};  MATMUL {xn} -> {y}
//   => MATMUL {x} -> {y} with norm = R (graph.h Node::norm)
// when xn is read by no other node, owns its storage, and the matmul's weights take quantised
// activations: the ggml block types (q8_0, q4_0, q5_0: 32-value blocks; q4_k, q6_k: Q8_K), and
// I8 when int8_acts (W8A8 on the NPU model: activations quantised per token). Run after
// FuseSiblingMatmuls, which leaves one consumer (Q|K|V, gate|up) where there were several; a norm
// with several consumers (siblings of different dtypes) is left alone, as is a norm of f32, f16
// or bf16 weights: those matmuls read the f32 rows as they are, so there is no quantisation to
// fuse into — only the launch, and the normed row would still have to be written. A norm that
// flashcomm runs before its all-gather (ALL_GATHER, ADD, RMSNORM) stays too (sim/scale_out.h).
// Rows: an output norm gathers the OUT_ROWS of the TOKENS x; the fused node keeps in = x, out = y
// and the engine passes the rows to keep.
// Numerics: bit-identical to the unfused graph (the same normalisation and quantiser, kernels.h).
// Modelled (sim/planner.cpp): one record (one launch) where there were two; the norm's weight
// read and flops join the matmul's, and the 4·m·k f32 write of xn and its read are gone.
#include "graph/pass.h"

namespace duet::graph {

// Whether matmuls of weight dtype t quantise their activations (int8_acts: I8 weights do, W8A8).
bool quantises_activations(DType t, bool int8_acts);

class FuseRmsNormMatmul : public Pass {
public:
    explicit FuseRmsNormMatmul(bool int8_acts = false) : int8_acts_(int8_acts) {}
    const char* name() const override { return "fuse_rmsnorm_matmul"; }
    Graph run(const Graph& g) const override;

private:
    bool int8_acts_;
};

}  // namespace duet::graph
