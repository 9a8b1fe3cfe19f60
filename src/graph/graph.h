#pragma once
// The model as a graph of operators: the one place a block's structure is written down.
//
// A Graph is built once per model by an architecture builder (graph/builders.h) from a
// ModelShape, rewritten by passes (graph/pass.h), and then read by
//   - the engine (runtime/engine.cpp), which walks the nodes in order, lowers each to its
//     OpRecord (graph/lowering.h) and calls the dispatch point once per node,
//   - the trace-only planner (sim/planner.cpp), which lowers each node with the same function,
//   - memory accounting (sim/memory_accounting.cpp) and the static memory plan
//     (graph/memory_plan.h), which derive weights and activation lifetimes from it,
//   - weight sources and FILE mode, which take the list of (role, layer) matrices from it.
// What each role's tensors are (GGUF name, shape, TP split, fusion) is the tensor catalogue's
// (graph/tensor_catalogue.h).
//
// Shapes are symbolic in the number of rows: a tensor has `width` features per row and rows
// that are either every new token of the forward (TOKENS) or only the rows whose logits are
// wanted (OUT_ROWS: one per sequence unless all logits are requested). Every activation is f32
// on the host. Storage: a tensor either owns its buffer (base == -1) or lives inside another
// tensor's buffer (`base`, starting at column `col0`, row stride = the base's width): in-place
// ops (residual ADD, RoPE) write an alias of their input, and a fused matmul's parts are column
// views of the fused output.
//
// Nodes are in execution order; a node reads `in` and writes `out` (tensor ids). KV_WRITE and
// ATTENTION also touch the layer's KV cache, which is not a graph tensor (its size is a
// property of the session, not of one forward).
// Thread safety: a finished Graph is immutable and may be read from any thread.
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "graph/model_shape.h"
#include "graph/op_types.h"
#include "graph/parallel.h"

namespace duet::graph {

enum class Rows : uint8_t { TOKENS, OUT_ROWS };

enum class TensorKind : uint8_t {
    ACTIVATION,  // f32 scratch of the forward (planned into the arena)
    TOKEN_IDS,   // the forward's input ids (int32, owned by the caller)
    LOGITS,      // the forward's output (f32, owned by the caller; counted as an activation)
};

struct Tensor {
    std::string name;  // "l3.q", for messages and dumps
    Rows rows = Rows::TOKENS;
    int64_t width = 0;  // features per row
    TensorKind kind = TensorKind::ACTIVATION;
    int32_t base = -1;  // storage owner (-1: itself); always a root (base of a base is resolved)
    int64_t col0 = 0;   // first column inside the base's rows
};

struct Node {
    OpKind kind = OpKind::ADD;
    WeightRole role = WeightRole::NONE;  // weight read (norm weights and the table included)
    int32_t layer = -1;                  // -1 outside the blocks
    std::vector<int32_t> in, out;        // tensor ids
    int64_t n = 0;                       // MATMUL output features; others: the record's n (see graph/op_record.h)
    int64_t k = 0;                       // MATMUL input features; ROPE/ATTENTION head_dim
    DType dtype = DType::F32;            // weight dtype (MATMUL, EMBED), KV dtype (KV_WRITE, ATTENTION)
    bool bias = false;                   // MATMUL adds the role's f32 bias (epilogue, not a record)
    // Set by Graph::finalize: reads an input of the node before it and none of its outputs, so
    // it may start together with it (Q, K, V; gate, up). Carried into OpRecord::sibling_of_prev.
    bool sibling_of_prev = false;
    // MATMUL only: the RMSNorm whose weights this role names (ATTN_NORM, FFN_NORM, OUTPUT_NORM) is
    // fused into the matmul's input quantisation (graph/fuse_rmsnorm_matmul.h): in[0] is the
    // norm's input x, and the node computes rmsnorm(x) · Wᵀ. NONE: in[0] is the matmul's input.
    WeightRole norm = WeightRole::NONE;
};

class Graph {
public:
    ModelShape shape;
    std::vector<Tensor> tensors;
    std::vector<Node> nodes;
    int32_t token_ids = -1;  // the TOKEN_IDS tensor
    int32_t logits = -1;     // the LOGITS tensor
    TpShard tp;              // this graph's tensor-parallel share (tp 1: the whole model)
    PpStage pp;              // this graph's pipeline stage (pp 1: every layer)
    EpShard ep;              // this graph's expert-parallel share (ep 1: every expert)

    // A new tensor with its own storage.
    int32_t add_tensor(std::string name, Rows rows, int64_t width, TensorKind kind = TensorKind::ACTIVATION);
    // A new tensor that lives in `of`'s storage (an in-place result), same rows and width.
    int32_t alias(int32_t of, std::string name);
    // A column view [col0, col0 + width) of `of`.
    int32_t view(int32_t of, std::string name, int64_t col0, int64_t width);
    Node& add_node(Node n);

    int32_t root(int32_t t) const { return tensors[size_t(t)].base < 0 ? t : tensors[size_t(t)].base; }
    // Row stride in floats of tensor t's storage.
    int64_t row_stride(int32_t t) const { return tensors[size_t(root(t))].width; }
    bool contiguous(int32_t t) const { return row_stride(t) == tensors[size_t(t)].width; }

    // Checks ids and that every tensor read was written before; computes sibling_of_prev.
    // DUET_CHECKs on a malformed graph (a builder or pass bug). Call after building and after
    // every pass.
    void finalize();
};

// Every (role, layer) weight a MATMUL, MOE_MATMUL or HEAD_MATMUL node reads, in node order
// (each once): `count` matrices of n x k (the experts of a MOE_MATMUL — the rank's own under
// expert parallelism —, the heads of a HEAD_MATMUL, else 1).
struct MatrixUse {
    WeightRole role;
    int32_t layer;
    int64_t n, k;
    int64_t count = 1;
};
std::vector<MatrixUse> matrices(const Graph& g);

// Builds the graph of `shape`'s family (one builder per family). Throws duet::Error on an
// incomplete shape, naming the missing field.
Graph build_graph(const ModelShape& shape);

// Every fusion pass in order (`--fuse`): sibling matmuls (graph/fuse_matmuls.h), RoPE + KV
// write (graph/fuse_rope_kv.h), then RMSNorm into the next matmul's input quantisation
// (graph/fuse_rmsnorm_matmul.h; int8_acts: I8 weights take int8 activations, W8A8).
Graph fuse_all(const Graph& g, bool int8_acts = false);

// The passes a run applies after the builder (engine option / `--fuse`).
struct GraphOptions {
    bool fuse = false;       // fuse_all(): graph/fuse_matmuls.h, graph/fuse_rope_kv.h, graph/fuse_rmsnorm_matmul.h
    bool int8_acts = false;  // W8A8 (modelled): I8 weights quantise their activations, so RMSNorm fuses into them
    int tp = 1;              // graph/shard_tensor_parallel.h: ranks sharing each layer
    int tp_rank = 0;         // which of them this graph is for
    bool flashcomm = false;  // reduce-scatter + all-gather in place of all-reduce
    TpPartition tp_partition = TpPartition::MEGATRON;  // graph/parallel.h: how the tp ranks divide a layer
    int64_t ff_align = 1;    // FFN split granule (the down projection's quant block)
    int ep = 1;              // graph/shard_expert_parallel.h: ranks sharing the routed experts
    int ep_rank = 0;         // which of them this graph is for (tp_rank == ep_rank mod tp when both > 1)
    int pp = 1;              // graph/shard_pipeline_parallel.h: pipeline stages
    int pp_stage = 0;        // which stage this graph is for
};
Graph build_graph(const ModelShape& shape, const GraphOptions& opts);

}  // namespace duet::graph
