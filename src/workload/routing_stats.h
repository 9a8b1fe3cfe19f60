#pragma once
// The routing a trace-only bench prices a Mixture-of-Experts model's experts with
// (sim/expert_routing.h): uniform, a Zipf skew (`duet bench --expert-skew S`), or a
// routing-statistics file (`--routing-stats FILE`, docs/scale-out.md):
//   {"model": "deepseek-v3",                       (optional, informational)
//    "layers": [{"layer": 3, "fractions": [f_0, ..., f_{E-1}]}, ...]}
// f_i = the fraction of the layer's routed rows (tokens x k) expert i received, as a router's
// per-expert counts divided by their sum. Every value must be a number >= 0 and at most 1/k (a
// token picks k distinct experts); a layer's fractions sum to 1 within 1e-3 and there is one
// per routed expert; a layer is a MoE layer of the model and appears once. Layers the file does
// not list are uniform. Errors name the file, the line of the layer's entry, the field, the value
// and what is allowed (duet::Error).
// Thread safety: reads the file; no shared state.
#include <memory>
#include <string>

#include "graph/model_shape.h"
#include "sim/expert_routing.h"

namespace duet::workload {

sim::ExpertRouting load_routing_stats(const std::string& path, const graph::ModelShape& s);
sim::ExpertRouting parse_routing_stats(const std::string& text, const std::string& path, const graph::ModelShape& s);

// The routing of `duet bench` from its flags (skew < 0: not given; path empty: not given);
// uniform when neither. Throws duet::Error for both at once, either on a dense model, or a bad
// skew or file.
std::shared_ptr<const sim::ExpertRouting> routing_from_flags(double skew, const std::string& path,
                                                             const graph::ModelShape& s);

}  // namespace duet::workload
