#pragma once
// How the router spreads a Mixture-of-Experts layer's routed rows over its experts, as the
// simulator prices them (docs/scale-out.md, "Expert parallelism"). The model is of expected
// values: expert i of layer l receives the fraction f[l][i] of the layer's routed rows (T
// tokens x k experts each; the fractions of a layer sum to 1), so a token picks it with
// probability p_i = k·f_i (at most 1: a token picks k distinct experts), its expected rows are
// T·p_i and the probability that any of the T tokens picks it is 1 - (1 - p_i)^T.
//   uniform      f_i = 1/E in every layer (the default; the planner's own assumption)
//   zipf s       f_i = (i+1)^-s / sum_j (j+1)^-s over the expert ids in order, every layer alike
//                (s = 0 is uniform; the hottest experts are the lowest ids, so with the contiguous
//                expert-parallel placement they share the first rank: its worst case)
//   file         per layer, per expert, from a routing-statistics file (workload/routing_stats.h);
//                layers the file does not list are uniform
// Thread safety: immutable after construction.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace duet::sim {

struct ExpertRouting {
    std::string source = "uniform";  // "uniform", "zipf s = 1.2", "routing stats FILE"
    std::vector<std::vector<double>> fractions;  // [layer] -> [expert]; a missing or empty row: uniform
    // Layer l's fractions over n_expert experts (uniform when the routing has none for it).
    std::vector<double> layer(int64_t l, int64_t n_expert) const;
};

// What the simulator needs to price a run's experts (sim/expert_load.h, RunOptions::experts).
struct ExpertLoadOptions {
    std::shared_ptr<const ExpertRouting> routing;  // null: records left as they are (an engine trace)
    int ep = 1;              // expert-parallel ranks (Plan::ep_ranks holds ranks 1..ep-1's plans)
    int32_t seqs_total = 1;  // sequences of one forward over the whole EP group (one micro-batch)
    // Tensor-parallel ranks of an attention group (graph::attention_dp): with 1 < tp < ep each
    // rank dispatches 1/tp of its group's tokens to the experts.
    int tp = 1;
};

// Zipf routing of exponent s over n_expert experts, every one of n_layer layers alike. Throws
// duet::Error when s is negative or not finite, or when the hottest expert's share exceeds 1/k
// (k = experts per token: a token cannot pick one expert twice), naming --expert-skew.
ExpertRouting zipf_routing(double s, int64_t n_layer, int64_t n_expert, int64_t k);

}  // namespace duet::sim
