#include "graph/shard_expert_parallel.h"

#include <fmt/format.h>

#include "core/error.h"

namespace duet::graph {

Graph ShardExpertParallel::run(const Graph& in) const {
    if (in.ep.ep != 1) fail("graph pass shard_expert_parallel: the graph is already split (ep {})", in.ep.ep);
    const EpShard sh = ep_shard(in.shape, ep_, rank_);
    if (ep_ == 1) return in;
    if (in.tp.tp > 1 && (ep_ % in.tp.tp != 0 || in.tp.rank != rank_ % in.tp.tp))
        fail("graph pass shard_expert_parallel: ep {} rank {} on tensor-parallel rank {} of {} (allowed: tensor-parallel "
             "groups that tile the expert-parallel ranks, rank r their rank r mod tp)",
             ep_, rank_, in.tp.rank, in.tp.tp);
    Graph g = in;
    g.ep = sh;
    if (in.tp.tp == ep_) return g;  // every rank holds every token: no all-to-all
    g.nodes.clear();
    int32_t routed_layer = -1;  // the layer whose dispatch is already in
    int32_t weights = -1;       // the MOE_ROUTE output of the current layer
    const auto all_to_all = [&](const Node& at, std::vector<int32_t> reads, const char* what) {
        const int32_t y = reads.front();
        const int32_t z = g.alias(y, fmt::format("{}_{}", g.tensors[size_t(y)].name, what));
        g.nodes.push_back({OpKind::ALL_TO_ALL, WeightRole::NONE, at.layer, std::move(reads), {z}, in.shape.n_embd, ep_,
                           DType::F32});
    };
    for (const Node& nd : in.nodes) {
        if (nd.kind == OpKind::MOE_ROUTE) weights = nd.out[0];
        if (nd.kind == OpKind::MOE_MATMUL && nd.layer != routed_layer) {
            all_to_all(nd, {nd.in[0], weights}, "dispatch");
            routed_layer = nd.layer;
        }
        g.nodes.push_back(nd);
        if (nd.kind == OpKind::MOE_MATMUL && nd.role == WeightRole::FFN_DOWN_EXPS) all_to_all(nd, {nd.out[0]}, "combine");
    }
    g.finalize();
    return g;
}

}  // namespace duet::graph
