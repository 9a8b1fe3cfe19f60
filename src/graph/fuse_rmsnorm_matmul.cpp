#include "graph/fuse_rmsnorm_matmul.h"

namespace duet::graph {
namespace {

// How many nodes read tensor t (any tensor living in t's storage counts: a view of xn).
int readers(const Graph& g, int32_t t) {
    int n = 0;
    for (const Node& nd : g.nodes)
        for (int32_t x : nd.in) n += g.root(x) == t;
    return n;
}

bool matches(const Graph& g, size_t i, bool int8_acts) {
    if (i + 1 >= g.nodes.size()) return false;
    const Node& r = g.nodes[i];
    const Node& mm = g.nodes[i + 1];
    if (r.kind != OpKind::RMSNORM || mm.kind != OpKind::MATMUL || mm.norm != WeightRole::NONE) return false;
    if (r.layer != mm.layer || r.in.size() != 1 || r.out.size() != 1 || mm.in.size() != 1) return false;
    const int32_t xn = r.out[0];
    if (mm.in[0] != xn || g.tensors[size_t(xn)].base >= 0 || mm.k != r.n || readers(g, xn) != 1) return false;
    if (!quantises_activations(mm.dtype, int8_acts)) return false;
    // flashcomm moves this norm before the all-gather (sim/scale_out.cpp apply_flashcomm)
    return !(i >= 2 && g.nodes[i - 1].kind == OpKind::ADD && g.nodes[i - 2].kind == OpKind::ALL_GATHER);
}

}  // namespace

bool quantises_activations(DType t, bool int8_acts) {
    switch (t) {
        case DType::Q8_0:
        case DType::Q4_0:
        case DType::Q5_0:
        case DType::Q4_K:
        case DType::Q6_K:
            return true;
        case DType::I8:
            return int8_acts;
        default:
            return false;
    }
}

Graph FuseRmsNormMatmul::run(const Graph& in) const {
    Graph g = in;
    std::vector<Node> nodes;
    nodes.reserve(g.nodes.size());
    for (size_t i = 0; i < g.nodes.size();) {
        if (!matches(g, i, int8_acts_)) {
            nodes.push_back(g.nodes[i++]);
            continue;
        }
        Node f = g.nodes[i + 1];
        f.in = {g.nodes[i].in[0]};
        f.norm = g.nodes[i].role;
        nodes.push_back(std::move(f));
        i += 2;
    }
    g.nodes = std::move(nodes);
    g.finalize();
    return g;
}

}  // namespace duet::graph
