#pragma once
// Graph passes: the extension point for rewriting the model before it runs or is modelled
// (fuse a group of ops into one, later: split a matmul across devices and insert the
// collective, move an op to another device). A pass takes a finished graph and returns a
// finished graph (Graph::finalize called); the engine, the planner and memory accounting then
// read the rewritten graph like any other — none of them knows which passes ran.
// Thread safety: passes are stateless; run() is a pure function of its input.
#include <memory>
#include <vector>

#include "graph/graph.h"

namespace duet::graph {

class Pass {
public:
    virtual ~Pass() = default;
    virtual const char* name() const = 0;
    virtual Graph run(const Graph& g) const = 0;
};

// Applies the passes in order.
inline Graph run_passes(Graph g, const std::vector<std::unique_ptr<Pass>>& passes) {
    for (const auto& p : passes) g = p->run(g);
    return g;
}

}  // namespace duet::graph
