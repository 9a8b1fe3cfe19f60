#include "graph/shard_tensor_parallel.h"

#include <fmt/format.h>

#include "core/error.h"
#include "graph/tensor_catalogue.h"

namespace duet::graph {
namespace {

// The rank's width of a split Dim (its range of the full shape).
struct Local {
    const TpShard& sh;
    const ModelShape& full;
    int64_t operator()(Dim d) const { return tp_range(d, sh, full).count; }
};

// A MATMUL's weight takes the split of its catalogue row (graph/tensor_catalogue.h): ROWS
// narrows its output features, COLS its input features; the ops between follow the local
// heads and FFN range.
void resize(Node& nd, const Local& local) {
    switch (nd.kind) {
        case OpKind::MATMUL: {
            const TensorSpec& t = weight_spec(nd.role);
            if (t.kind == WeightKind::FUSED)
                fail("graph pass shard_tensor_parallel: the graph is already fused (run fusion after sharding)");
            if (t.tp == TpSplit::ROWS) nd.n = local(t.rows);
            if (t.tp == TpSplit::COLS) nd.k = local(t.cols);
            break;
        }
        case OpKind::ROPE:
        case OpKind::ROPE_KV_WRITE: nd.n = local(Dim::Q_DIM) + local(Dim::KV_DIM); break;
        case OpKind::KV_WRITE: nd.n = 2 * local(Dim::KV_DIM); break;
        case OpKind::ATTENTION: nd.n = local(Dim::Q_DIM); break;
        case OpKind::SWIGLU: nd.n = local(Dim::N_FF); break;
        default: break;
    }
}

// A row-parallel matmul (COLS split) leaves partial sums.
bool row_parallel(const Node& nd) { return nd.kind == OpKind::MATMUL && weight_spec(nd.role).tp == TpSplit::COLS; }

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
    const Local local{sh, in.shape};

    std::vector<int32_t> renamed(g.tensors.size());  // reads of t go to renamed[t]
    for (size_t t = 0; t < renamed.size(); ++t) renamed[t] = int32_t(t);
    std::vector<Node> nodes;
    nodes.reserve(g.nodes.size() + 4 * size_t(g.shape.n_layer));
    for (Node nd : in.nodes) {
        for (int32_t& t : nd.in) t = renamed[size_t(t)];
        resize(nd, local);
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
