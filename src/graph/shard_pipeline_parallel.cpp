#include "graph/shard_pipeline_parallel.h"

#include "core/error.h"

namespace duet::graph {

Graph ShardPipelineParallel::run(const Graph& in) const {
    if (in.pp.pp != 1) fail("graph pass shard_pipeline_parallel: the graph is already split (pp {})", in.pp.pp);
    PpStage st;
    st.pp = pp_;
    st.stage = stage_;
    st.layers = pp_stage_layers(in.shape, pp_, stage_);
    if (pp_ == 1) return in;
    Graph g = in;
    g.pp = st;
    g.nodes.clear();
    const int64_t b = st.layers.begin, e = st.layers.end();
    for (const Node& nd : in.nodes) {
        const bool head = nd.layer < 0 && nd.kind != OpKind::EMBED;  // output norm, lm-head, sampling
        const bool keep = nd.layer < 0 ? (nd.kind == OpKind::EMBED ? st.first() : st.last())
                                       : nd.layer >= b && nd.layer < e;
        if (head && !st.last()) break;
        if (!keep) continue;
        if (g.nodes.empty() && !st.first())  // the residual before layer b arrives from stage s-1
            g.nodes.push_back({OpKind::RECV, WeightRole::NONE, int32_t(b), {}, {nd.in[0]}, in.shape.n_embd,
                               stage_ - 1, DType::F32});
        g.nodes.push_back(nd);
    }
    if (!st.last()) {  // the residual after layer e-1 (the last node's output) goes to stage s+1
        DUET_CHECK(!g.nodes.empty() && !g.nodes.back().out.empty(), "graph: stage {} has no output", stage_);
        g.nodes.push_back({OpKind::SEND, WeightRole::NONE, int32_t(e - 1), {g.nodes.back().out[0]}, {},
                           in.shape.n_embd, stage_ + 1, DType::F32});
    }
    g.finalize();
    return g;
}

}  // namespace duet::graph
