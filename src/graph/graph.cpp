#include "graph/graph.h"

#include <algorithm>

#include "core/error.h"
#include "graph/fuse_matmuls.h"
#include "graph/fuse_rmsnorm_matmul.h"
#include "graph/fuse_rope_kv.h"
#include "graph/shard_expert_parallel.h"
#include "graph/shard_pipeline_parallel.h"
#include "graph/shard_tensor_parallel.h"
#include "graph/shard_tensor_parallel_cent.h"
#include "graph/llama_builder.h"

namespace duet::graph {

int32_t Graph::add_tensor(std::string name, Rows rows, int64_t width, TensorKind kind) {
    tensors.push_back(Tensor{std::move(name), rows, width, kind, -1, 0});
    return int32_t(tensors.size() - 1);
}

int32_t Graph::alias(int32_t of, std::string name) {
    const Tensor& t = tensors[size_t(of)];
    Tensor a{std::move(name), t.rows, t.width, t.kind, root(of), t.col0};
    tensors.push_back(std::move(a));
    return int32_t(tensors.size() - 1);
}

int32_t Graph::view(int32_t of, std::string name, int64_t col0, int64_t width) {
    const Tensor& t = tensors[size_t(of)];
    DUET_CHECK(col0 >= 0 && col0 + width <= t.width, "graph: view [{}, {}) outside '{}'", col0, col0 + width, t.name);
    Tensor v{std::move(name), t.rows, width, t.kind, root(of), t.col0 + col0};
    tensors.push_back(std::move(v));
    return int32_t(tensors.size() - 1);
}

Node& Graph::add_node(Node n) {
    nodes.push_back(std::move(n));
    return nodes.back();
}

void Graph::finalize() {
    std::vector<char> written(tensors.size(), 0);
    if (token_ids >= 0) written[size_t(token_ids)] = 1;
    for (size_t i = 0; i < nodes.size(); ++i) {
        Node& n = nodes[i];
        for (int32_t t : n.in) {
            DUET_CHECK(t >= 0 && size_t(t) < tensors.size(), "graph: node {} reads tensor {}", i, t);
            DUET_CHECK(written[size_t(t)], "graph: node {} ({}) reads '{}' before it is written", i,
                       op_kind_name(n.kind), tensors[size_t(t)].name);
        }
        for (int32_t t : n.out) {
            DUET_CHECK(t >= 0 && size_t(t) < tensors.size(), "graph: node {} writes tensor {}", i, t);
            written[size_t(t)] = 1;
            // a fused output makes its column views written too
            for (size_t v = 0; v < tensors.size(); ++v)
                if (tensors[v].base == t) written[v] = 1;
        }
        n.sibling_of_prev = false;
        if (i == 0) continue;
        const Node& p = nodes[i - 1];
        const auto has = [](const std::vector<int32_t>& v, int32_t t) { return std::find(v.begin(), v.end(), t) != v.end(); };
        bool shares = false, depends = false;
        for (int32_t t : n.in) {
            shares = shares || has(p.in, t);
            for (int32_t o : p.out) depends = depends || root(o) == root(t);
        }
        n.sibling_of_prev = shares && !depends;
    }
}

std::vector<MatrixUse> matrices(const Graph& g) {
    std::vector<MatrixUse> out;
    for (const Node& n : g.nodes) {
        if (!is_matmul_kind(n.kind)) continue;
        const bool seen = std::any_of(out.begin(), out.end(),
                                      [&](const MatrixUse& m) { return m.role == n.role && m.layer == n.layer; });
        const int64_t experts = g.ep.ep > 1 ? g.ep.experts.count : g.shape.n_expert;
        const int64_t count = n.kind == OpKind::MOE_MATMUL    ? experts
                              : n.kind == OpKind::HEAD_MATMUL ? g.shape.n_head
                                                              : 1;
        if (!seen) out.push_back({n.role, n.layer, n.n, n.k, count});
    }
    return out;
}

Graph build_graph(const ModelShape& s) {
    if (s.n_layer < 1 || s.n_embd < 1 || s.n_head < 1 || s.n_head_kv < 1 || s.head_dim < 1 || s.n_ff < 1 ||
        s.n_vocab < 1)
        fail("model shape '{}' is incomplete (n_layer {}, n_embd {}, n_head {}, n_head_kv {}, head_dim {}, n_ff {}, "
             "n_vocab {})",
             s.name, s.n_layer, s.n_embd, s.n_head, s.n_head_kv, s.head_dim, s.n_ff, s.n_vocab);
    switch (s.family) {
        case Family::LLAMA: return build_llama(s);
    }
    fail("model shape '{}': unknown architecture family {}", s.name, int(s.family));
}

Graph fuse_all(const Graph& g, bool int8_acts) {
    return FuseRmsNormMatmul(int8_acts).run(FuseRopeKvWrite().run(FuseSiblingMatmuls().run(g)));
}

Graph build_graph(const ModelShape& s, const GraphOptions& opts) {
    // Pipeline stages split at layer boundaries and need nothing of the block; the tensor-parallel
    // pass splits experts and latent attention too; the fusion passes fuse what they know (Q|K|V,
    // a dense layer's gate|up, RMSNorm into quantised matmuls) and leave expert matmuls, the router
    // and latent attention's projections as they are, as the engine's --fuse does.
    check_tp_with_ep(opts.tp, opts.ep);
    Graph g = build_graph(s);
    if (opts.tp != 1)
        g = opts.tp_partition == TpPartition::CENT
                ? ShardTensorParallelCent(opts.tp, opts.tp_rank).run(g)
                : ShardTensorParallel(opts.tp, opts.tp_rank, opts.flashcomm, opts.ff_align, opts.ep > 1).run(g);
    if (opts.ep != 1) g = ShardExpertParallel(opts.ep, opts.ep_rank).run(g);
    if (opts.pp != 1) g = ShardPipelineParallel(opts.pp, opts.pp_stage).run(g);
    if (opts.fuse) g = fuse_all(g, opts.int8_acts);
    return g;
}

}  // namespace duet::graph
