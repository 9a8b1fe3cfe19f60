#include "graph/shard_tensor_parallel.h"

#include <fmt/format.h>

#include "core/error.h"

namespace duet::graph {
namespace {

// The local output width of a node the pass resizes (0: unchanged).
struct LocalSizes {
    int64_t q_dim, kv_dim, ff;
};

void resize(Node& nd, const LocalSizes& ls) {
    switch (nd.kind) {
        case OpKind::MATMUL:
            switch (nd.role) {
                case WeightRole::ATTN_Q: nd.n = ls.q_dim; break;
                case WeightRole::ATTN_K:
                case WeightRole::ATTN_V: nd.n = ls.kv_dim; break;
                case WeightRole::ATTN_OUT: nd.k = ls.q_dim; break;
                case WeightRole::FFN_GATE:
                case WeightRole::FFN_UP: nd.n = ls.ff; break;
                case WeightRole::FFN_DOWN: nd.k = ls.ff; break;
                case WeightRole::ATTN_QKV:
                case WeightRole::FFN_GATE_UP:
                    fail("graph pass shard_tensor_parallel: the graph is already fused (run fusion after sharding)");
                default: break;
            }
            break;
        case OpKind::ROPE:
        case OpKind::ROPE_KV_WRITE: nd.n = ls.q_dim + ls.kv_dim; break;
        case OpKind::KV_WRITE: nd.n = 2 * ls.kv_dim; break;
        case OpKind::ATTENTION: nd.n = ls.q_dim; break;
        case OpKind::SWIGLU: nd.n = ls.ff; break;
        default: break;
    }
}

bool row_parallel(const Node& nd) {
    return nd.kind == OpKind::MATMUL && (nd.role == WeightRole::ATTN_OUT || nd.role == WeightRole::FFN_DOWN);
}

bool has_output_width(const Node& nd) {
    return (nd.kind == OpKind::MATMUL && !row_parallel(nd)) || nd.kind == OpKind::ATTENTION ||
           nd.kind == OpKind::SWIGLU;
}

}  // namespace

Graph ShardTensorParallel::run(const Graph& in) const {
    if (in.tp.tp != 1) fail("graph pass shard_tensor_parallel: the graph is already sharded (tp {})", in.tp.tp);
    const TpShard sh = tp_shard(in.shape, tp_, rank_, ff_align_);
    if (tp_ == 1) return in;
    Graph g = in;
    g.tp = sh;
    g.shape.n_head = sh.q_heads.count;
    g.shape.n_head_kv = sh.kv_heads.count;
    g.shape.n_ff = sh.ff.count;
    const LocalSizes ls{sh.q_heads.count * in.shape.head_dim, sh.kv_heads.count * in.shape.head_dim, sh.ff.count};

    std::vector<int32_t> renamed(g.tensors.size());  // reads of t go to renamed[t]
    for (size_t t = 0; t < renamed.size(); ++t) renamed[t] = int32_t(t);
    std::vector<Node> nodes;
    nodes.reserve(g.nodes.size() + 4 * size_t(g.shape.n_layer));
    for (Node nd : in.nodes) {
        for (int32_t& t : nd.in) t = renamed[size_t(t)];
        resize(nd, ls);
        if (has_output_width(nd)) g.tensors[size_t(nd.out[0])].width = nd.n;
        nodes.push_back(nd);
        if (!row_parallel(nd)) continue;
        // Combine the partial sums in place: the collective's output aliases its input.
        int32_t y = nd.out[0];
        const auto collective = [&](OpKind kind, const char* what) {
            const int32_t z = g.alias(y, fmt::format("{}_{}", g.tensors[size_t(y)].name, what));
            nodes.push_back({kind, WeightRole::NONE, nd.layer, {y}, {z}, in.shape.n_embd, tp_, DType::F32});
            renamed.push_back(z);
            renamed[size_t(nd.out[0])] = z;
            y = z;
        };
        if (flashcomm_) {
            collective(OpKind::REDUCE_SCATTER, "rs");
            collective(OpKind::ALL_GATHER, "ag");
        } else {
            collective(OpKind::ALL_REDUCE, "ar");
        }
    }
    g.nodes = std::move(nodes);
    // In-place aliases (q_rope, k_rope) follow their base's new width.
    for (Tensor& t : g.tensors)
        if (t.base >= 0) t.width = g.tensors[size_t(t.base)].width;
    g.finalize();
    return g;
}

}  // namespace duet::graph
