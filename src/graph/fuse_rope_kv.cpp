#include "graph/fuse_rope_kv.h"

namespace duet::graph {
namespace {

// How many nodes other than those at i and i + 1 read tensor t.
int other_readers(const Graph& g, size_t i, int32_t t) {
    int n = 0;
    for (size_t j = 0; j < g.nodes.size(); ++j) {
        if (j == i || j == i + 1) continue;
        for (int32_t x : g.nodes[j].in) n += x == t;
    }
    return n;
}

bool matches(const Graph& g, size_t i) {
    if (i + 1 >= g.nodes.size()) return false;
    const Node& r = g.nodes[i];
    const Node& w = g.nodes[i + 1];
    return r.kind == OpKind::ROPE && w.kind == OpKind::KV_WRITE && r.layer == w.layer && r.in.size() == 2 &&
           r.out.size() == 2 && w.in.size() == 2 && w.in[0] == r.out[1] && other_readers(g, i, r.out[1]) == 0 &&
           other_readers(g, i, r.in[1]) == 0;
}

}  // namespace

Graph FuseRopeKvWrite::run(const Graph& in) const {
    Graph g = in;
    std::vector<Node> nodes;
    nodes.reserve(g.nodes.size());
    for (size_t i = 0; i < g.nodes.size();) {
        if (!matches(g, i)) {
            nodes.push_back(g.nodes[i++]);
            continue;
        }
        const Node& r = g.nodes[i];
        const Node& w = g.nodes[i + 1];
        Node f = r;
        f.kind = OpKind::ROPE_KV_WRITE;
        f.in = {r.in[0], r.in[1], w.in[1]};
        f.out = {r.out[0]};
        f.dtype = w.dtype;
        nodes.push_back(std::move(f));
        i += 2;
    }
    g.nodes = std::move(nodes);
    g.finalize();
    return g;
}

}  // namespace duet::graph
