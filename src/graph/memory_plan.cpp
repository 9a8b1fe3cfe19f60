#include "graph/memory_plan.h"

#include <algorithm>

namespace duet::graph {

MemoryPlan plan_memory(const Graph& g) {
    MemoryPlan p;
    const size_t nt = g.tensors.size();
    p.first.assign(nt, -1);
    p.last.assign(nt, -1);
    p.offset.assign(nt, 0);
    // Lifetimes of storage roots: every read or write of any tensor living in the root.
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        const auto touch = [&](int32_t t) {
            const size_t r = size_t(g.root(t));
            if (p.first[r] < 0) p.first[r] = int32_t(i);
            p.last[r] = int32_t(i);
        };
        for (int32_t t : g.nodes[i].in) touch(t);
        for (int32_t t : g.nodes[i].out) touch(t);
    }
    // First fit in order of first use: the lowest offset not overlapping a placed root whose
    // lifetime intersects this one.
    struct Placed {
        int32_t first, last;
        int64_t begin, end;
    };
    std::vector<Placed> placed;
    for (size_t r = 0; r < nt; ++r) {
        const Tensor& t = g.tensors[r];
        if (t.base >= 0 || p.first[r] < 0 || t.kind != TensorKind::ACTIVATION) continue;
        std::vector<std::pair<int64_t, int64_t>> busy;
        for (const Placed& q : placed)
            if (q.first <= p.last[r] && p.first[r] <= q.last) busy.push_back({q.begin, q.end});
        std::sort(busy.begin(), busy.end());
        int64_t at = 0;
        for (auto [b, e] : busy) {
            if (at + t.width <= b) break;
            at = std::max(at, e);
        }
        placed.push_back({p.first[r], p.last[r], at, at + t.width});
        p.offset[r] = at;
        p.arena_width = std::max(p.arena_width, at + t.width);
    }
    for (size_t t = 0; t < nt; ++t)
        if (g.tensors[t].base >= 0) p.offset[t] = p.offset[size_t(g.tensors[t].base)] + g.tensors[t].col0;
    return p;
}

namespace {
bool is_collective(OpKind k) {
    return k == OpKind::ALL_REDUCE || k == OpKind::REDUCE_SCATTER || k == OpKind::ALL_GATHER || k == OpKind::ALL_TO_ALL;
}

// Per tensor root: its last node, extended for the roots a collective touches to the next
// collective after it (or the last node) -- see peak_live_bytes.
std::vector<int32_t> held_last(const Graph& g, const MemoryPlan& p) {
    std::vector<int32_t> last = p.last;
    const int32_t n = int32_t(g.nodes.size());
    std::vector<int32_t> next(size_t(n) + 1, n - 1);  // next[i]: first collective node > i
    for (int32_t i = n - 1; i >= 0; --i) next[size_t(i)] = i + 1 < n && is_collective(g.nodes[size_t(i + 1)].kind) ? i + 1 : next[size_t(i + 1)];
    for (const Node& nd : g.nodes) {
        if (!is_collective(nd.kind)) continue;
        for (const auto* ts : {&nd.in, &nd.out})
            for (int32_t t : *ts) {
                const size_t r = size_t(g.root(t));
                last[r] = std::max(last[r], next[size_t(p.last[r])]);
            }
    }
    return last;
}
}  // namespace

MemoryPlan plan_memory_without_reuse(const Graph& g) {
    MemoryPlan p = plan_memory(g);  // lifetimes; offsets replaced below
    p.arena_width = 0;
    std::vector<size_t> roots;
    for (size_t r = 0; r < g.tensors.size(); ++r)
        if (g.tensors[r].base < 0 && p.first[r] >= 0 && g.tensors[r].kind == TensorKind::ACTIVATION) roots.push_back(r);
    std::stable_sort(roots.begin(), roots.end(), [&](size_t a, size_t b) { return p.first[a] < p.first[b]; });
    for (size_t r : roots) {
        p.offset[r] = p.arena_width;
        p.arena_width += g.tensors[r].width;
    }
    for (size_t t = 0; t < g.tensors.size(); ++t)
        if (g.tensors[t].base >= 0) p.offset[t] = p.offset[size_t(g.tensors[t].base)] + g.tensors[t].col0;
    return p;
}

uint64_t peak_live_bytes(const Graph& g, const MemoryPlan& p, int64_t n_tokens, int64_t n_out_rows,
                         uint64_t elem_bytes, bool collectives_held_to_next_collective) {
    const std::vector<int32_t> last = collectives_held_to_next_collective ? held_last(g, p) : p.last;
    // live[i] changes by +bytes at a root's first node and -bytes after its last.
    std::vector<int64_t> delta(g.nodes.size() + 1, 0);
    for (size_t r = 0; r < g.tensors.size(); ++r) {
        const Tensor& t = g.tensors[r];
        if (t.base >= 0 || p.first[r] < 0 || t.kind == TensorKind::TOKEN_IDS) continue;
        const int64_t rows = t.rows == Rows::TOKENS ? n_tokens : n_out_rows;
        const int64_t bytes = rows * t.width * int64_t(elem_bytes);
        delta[size_t(p.first[r])] += bytes;
        delta[size_t(last[r]) + 1] -= bytes;
    }
    int64_t live = 0, peak = 0;
    for (int64_t d : delta) {
        live += d;
        peak = std::max(peak, live);
    }
    return uint64_t(peak);
}

}  // namespace duet::graph
