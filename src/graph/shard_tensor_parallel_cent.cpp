#include "graph/shard_tensor_parallel_cent.h"

#include <fmt/format.h>

#include "core/error.h"
#include "graph/tensor_catalogue.h"

namespace duet::graph {

Graph ShardTensorParallelCent::run(const Graph& in) const {
    if (in.tp.tp != 1) fail("graph pass shard_tensor_parallel_cent: the graph is already sharded (tp {})", in.tp.tp);
    if (tp_ < 1 || rank_ < 0 || rank_ >= tp_)
        fail("graph pass shard_tensor_parallel_cent: rank {} of tp {} (allowed: 0 <= rank < tp)", rank_, tp_);
    if (tp_ == 1) return in;
    if (in.shape.is_moe() || in.shape.is_mla())
        fail("[topology] tp_split = \"cent\" needs a dense model with standard attention (CENT's Llama trace); "
             "this model has {} (allowed: tp_split = \"megatron\")",
             in.shape.is_moe() ? "Mixture-of-Experts layers" : "latent attention");
    Graph g = in;
    g.tp.tp = tp_;
    g.tp.rank = rank_;
    g.tp.q_heads = {0, in.shape.n_head};
    g.tp.kv_heads = {0, in.shape.n_head_kv};
    g.tp.ff = {0, in.shape.n_ff};
    g.tp.context_ranks = tp_;

    std::vector<int32_t> renamed(g.tensors.size());  // reads of t go to renamed[t]
    for (size_t t = 0; t < renamed.size(); ++t) renamed[t] = int32_t(t);
    std::vector<Node> nodes;
    nodes.reserve(g.nodes.size() + 8 * size_t(g.shape.n_layer));
    for (Node nd : in.nodes) {
        for (int32_t& t : nd.in) t = renamed[size_t(t)];
        const bool split = nd.kind == OpKind::MATMUL && nd.layer >= 0 && weight_spec(nd.role).tp != TpSplit::REPLICATED;
        if (nd.kind == OpKind::MATMUL && weight_spec(nd.role).kind == WeightKind::FUSED)
            fail("graph pass shard_tensor_parallel_cent: the graph is already fused (run fusion after sharding)");
        if (!split) {
            nodes.push_back(nd);
            continue;
        }
        // The rank's output rows; the gathered output has the matrix's whole width.
        const int64_t full = nd.n;
        nd.n = (int64_t(rank_) + 1) * full / tp_ - int64_t(rank_) * full / tp_;
        nodes.push_back(nd);
        const int32_t y = nd.out[0];
        const int32_t z = g.alias(y, fmt::format("{}_ag", g.tensors[size_t(y)].name));
        nodes.push_back({OpKind::ALL_GATHER, WeightRole::NONE, nd.layer, {y}, {z}, full, tp_, DType::F32});
        renamed.push_back(z);
        renamed[size_t(y)] = z;
    }
    g.nodes = std::move(nodes);
    g.finalize();
    return g;
}

}  // namespace duet::graph
