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

// Tensor t of the unsharded graph is an in-place alias of its whole base (not a column view).
bool full_alias(const Graph& in, int32_t t) {
    const Tensor& x = in.tensors[size_t(t)];
    return x.base >= 0 && x.col0 == 0 && x.width == in.tensors[size_t(x.base)].width;
}

// Width of tensor t as the pass has resized it so far (an in-place alias reads its base's).
int64_t width_of(const Graph& g, const Graph& in, int32_t t) {
    if (size_t(t) < in.tensors.size() && full_alias(in, t)) return g.tensors[size_t(g.tensors[size_t(t)].base)].width;
    return g.tensors[size_t(t)].width;
}

// A weight node takes the split of its catalogue row (graph/tensor_catalogue.h): ROWS narrows
// its output features, COLS its input features (MATMUL and the per-expert MOE_MATMUL alike); a
// HEAD_MATMUL keeps its per-head sizes and runs over the local heads. The ops between follow
// the local heads and FFN ranges; SWIGLU and the per-head norms take their input's new width.
void resize(Node& nd, const Local& local, const Graph& g, const Graph& in) {
    const bool mla = local.full.is_mla();
    switch (nd.kind) {
        case OpKind::MATMUL:
        case OpKind::MOE_MATMUL: {
            const TensorSpec& t = weight_spec(nd.role);
            if (t.kind == WeightKind::FUSED)
                fail("graph pass shard_tensor_parallel: the graph is already fused (run fusion after sharding)");
            if (t.tp == TpSplit::ROWS) nd.n = local(t.rows);
            if (t.tp == TpSplit::COLS) nd.k = local(t.cols);
            break;
        }
        case OpKind::ROPE:
        case OpKind::ROPE_KV_WRITE:
            nd.n = mla ? (local(Dim::N_HEAD) + 1) * nd.k : local(Dim::Q_DIM) + local(Dim::KV_DIM);
            break;
        case OpKind::KV_WRITE:
            if (!mla) nd.n = 2 * local(Dim::KV_DIM);  // the latent row is whole on every rank
            break;
        case OpKind::ATTENTION: nd.n = local(Dim::Q_DIM); break;
        case OpKind::MLA_ATTENTION: nd.n = local(Dim::N_HEAD) * local.full.kv_lora_rank; break;
        case OpKind::SWIGLU: nd.n = width_of(g, in, nd.in[0]); break;
        case OpKind::RMSNORM:
            if (nd.k > 0) nd.n = width_of(g, in, nd.in[0]);  // per-head norms: the local heads
            break;
        default: break;
    }
}

// A row-parallel weight node (COLS split) leaves partial sums.
bool row_parallel(const Node& nd) {
    return (nd.kind == OpKind::MATMUL || nd.kind == OpKind::MOE_MATMUL) && weight_spec(nd.role).tp == TpSplit::COLS;
}

// The nodes whose partial sums are combined across ranks: the attention output and the dense
// FFN's down projection, and MOE_COMBINE (the experts' down projections are partial, and the
// combine is linear in them with weights every rank computes alike: one reduction per layer).
bool reduced(const Node& nd) {
    if (nd.kind == OpKind::MOE_COMBINE) return true;
    return nd.kind == OpKind::MATMUL && row_parallel(nd) && weight_spec(nd.role).expert == Expert::NONE;
}

// The node's output width after resize, or -1 when it keeps its width.
int64_t output_width(const Node& nd, const Local& local) {
    if (row_parallel(nd)) return -1;
    switch (nd.kind) {
        case OpKind::MATMUL:
        case OpKind::ATTENTION:
        case OpKind::MLA_ATTENTION:
        case OpKind::SWIGLU: return nd.n;
        case OpKind::MOE_MATMUL: return local.full.n_expert_used * nd.n;
        case OpKind::HEAD_MATMUL: return local(Dim::N_HEAD) * nd.n;
        default: return -1;
    }
}

}  // namespace

Graph ShardTensorParallel::run(const Graph& in) const {
    if (in.tp.tp != 1) fail("graph pass shard_tensor_parallel: the graph is already sharded (tp {})", in.tp.tp);
    const TpShard sh = tp_shard(in.shape, tp_, rank_, ff_align_, whole_experts_);
    if (tp_ == 1) return in;
    Graph g = in;
    g.tp = sh;
    g.shape.n_head = sh.q_heads.count;
    g.shape.n_head_kv = sh.kv_heads.count;
    g.shape.n_ff = sh.ff.count;
    g.shape.n_ff_exp = sh.ff_exp.count;
    g.shape.n_ff_shexp = sh.ff_shexp.count;
    const Local local{sh, in.shape};

    std::vector<int32_t> renamed(g.tensors.size());  // reads of t go to renamed[t]
    for (size_t t = 0; t < renamed.size(); ++t) renamed[t] = int32_t(t);
    std::vector<Node> nodes;
    nodes.reserve(g.nodes.size() + 4 * size_t(g.shape.n_layer));
    for (Node nd : in.nodes) {
        for (int32_t& t : nd.in) t = renamed[size_t(t)];
        resize(nd, local, g, in);
        if (const int64_t w = output_width(nd, local); w >= 0) g.tensors[size_t(nd.out[0])].width = w;
        nodes.push_back(nd);
        if (!reduced(nd)) continue;
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
    // In-place aliases (q_rope, k_rope) follow their base's new width; column views (the latent
    // c_kv and k_pe of a replicated projection) keep theirs.
    for (size_t i = 0; i < g.tensors.size(); ++i) {
        Tensor& t = g.tensors[i];
        if (i < in.tensors.size() && full_alias(in, int32_t(i))) t.width = g.tensors[size_t(t.base)].width;
    }
    g.finalize();
    return g;
}

}  // namespace duet::graph
