#pragma once
// The pipeline-parallel pass: rewrites a model's graph into the graph stage `stage` of `pp`
// runs (layers from graph/parallel.h pp_stage_layers).
//
// Stage s keeps the nodes of its layers [b, e); stage 0 also keeps the embedding, the last
// stage the output norm, lm-head and sampling. Between stages the residual stream crosses:
//   stage s < pp-1 ends with   SEND  in = {residual after layer e-1}, k = s + 1
//   stage s > 0    starts with RECV  out = {residual before layer b}, k = s - 1
// (n = n_embd: the boundary's bytes are rows x n_embd activations, the same on both sides).
// Micro-batches are not a graph property: the timeline runs the stage graphs once per
// micro-batch (sim/timeline.h). Runs after the tensor-parallel pass (a stage may be sharded)
// and before fusion; pp == 1 is the identity. Throws duet::Error for a split the shape does not
// allow (graph/parallel.h) and for a graph that is already split into stages.
#include "graph/pass.h"

namespace duet::graph {

class ShardPipelineParallel : public Pass {
public:
    ShardPipelineParallel(int pp, int stage) : pp_(pp), stage_(stage) {}
    const char* name() const override { return "shard_pipeline_parallel"; }
    Graph run(const Graph& g) const override;

private:
    int pp_, stage_;
};

}  // namespace duet::graph
