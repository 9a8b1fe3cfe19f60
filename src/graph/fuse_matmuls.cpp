#include "graph/fuse_matmuls.h"

#include "graph/tensor_catalogue.h"

namespace duet::graph {
namespace {

// The fused role (a FUSED row of the tensor catalogue) whose parts the nodes starting at i
// match in order, or NONE.
WeightRole match(const Graph& g, size_t i) {
    for (const TensorSpec& t : tensor_catalogue()) {
        if (t.kind != WeightKind::FUSED) continue;
        const std::span<const WeightRole> parts = fused_parts(t.role);
        if (parts.empty() || i + parts.size() > g.nodes.size()) continue;
        const Node& a = g.nodes[i];
        bool ok = true;
        for (size_t j = 0; j < parts.size() && ok; ++j) {
            const Node& b = g.nodes[i + j];
            ok = b.kind == OpKind::MATMUL && b.role == parts[j] && b.layer == a.layer && b.in == a.in &&
                 b.dtype == a.dtype && b.k == a.k && b.out.size() == 1 && g.tensors[size_t(b.out[0])].base < 0;
        }
        if (ok) return t.role;
    }
    return WeightRole::NONE;
}

}  // namespace

Graph FuseSiblingMatmuls::run(const Graph& in) const {
    Graph g = in;
    std::vector<Node> nodes;
    nodes.reserve(g.nodes.size());
    for (size_t i = 0; i < g.nodes.size();) {
        const WeightRole role = match(g, i);
        if (role == WeightRole::NONE) {
            nodes.push_back(g.nodes[i++]);
            continue;
        }
        Node fused = g.nodes[i];
        const size_t n_parts = fused_parts(role).size();
        fused.role = role;
        fused.n = 0;
        for (size_t j = 0; j < n_parts; ++j) {
            fused.n += g.nodes[i + j].n;
            fused.bias = fused.bias || g.nodes[i + j].bias;
        }
        const Tensor first = g.tensors[size_t(g.nodes[i].out[0])];
        const int32_t y = g.add_tensor(first.name + "_fused", first.rows, fused.n);
        // The parts' outputs become views of y (they were roots: matmul outputs own storage).
        int64_t col = 0;
        for (size_t j = 0; j < n_parts; ++j) {
            Tensor& part = g.tensors[size_t(g.nodes[i + j].out[0])];
            part.base = y;
            part.col0 = col;
            col += part.width;
        }
        fused.out = {y};
        nodes.push_back(std::move(fused));
        i += n_parts;
    }
    g.nodes = std::move(nodes);
    // In-place results written over a part (aliases whose base became a view) get storage of
    // their own: the op reads the strided view and writes a contiguous tensor.
    for (Tensor& t : g.tensors) {
        if (t.base >= 0 && g.tensors[size_t(t.base)].base >= 0) {
            t.base = -1;
            t.col0 = 0;
        }
    }
    g.finalize();
    return g;
}

}  // namespace duet::graph
