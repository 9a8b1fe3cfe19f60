#include "workload/bench_inputs.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "graph/parallel.h"
#include "sim/collective.h"
#include "workload/model_limits.h"
#include "workload/routing_stats.h"

namespace duet::workload {

namespace {

// The flags whose product is the rank count, as the errors name them.
std::string rank_flags(int ep, int tp, int pp) {
    if (tp > 1 && ep > tp) return fmt::format("--ep {} (--tp {} groups) x --pp {}", ep, tp, pp);
    if (tp > 1 && ep > 1) return fmt::format("--tp {} with --ep {} (the same ranks) x --pp {}", tp, ep, pp);
    return fmt::format("--ep {} x --tp {} x --pp {}", ep, tp, pp);
}

}  // namespace

void check_expert_parallel_ranks(int ep, int tp, int pp, int64_t npus) {
    const int64_t ranks = int64_t(graph::stage_ranks(tp, ep)) * pp;
    if (ep > 1 && ranks > npus)
        fail("{} = {} ranks but the topology has {} NPU(s): each expert-parallel rank holds its "
             "own experts (allowed: --npus {}, or [topology] npus = {}; or fewer ranks)",
             rank_flags(ep, tp, pp), ranks, npus, ranks, ranks);
    if (ep > 1 && npus % ranks != 0)
        fail("{} = {} ranks do not divide the {} NPUs of the topology: each rank is an NPU "
             "(allowed: --npus a multiple of {}, or ranks that divide {})", rank_flags(ep, tp, pp), ranks, npus, ranks, npus);
}

void set_expert_inputs(TraceBenchInputs& in, int ep, double skew, const std::string& routing_stats,
                       const std::string& dtype) {
    graph::check_tp_with_ep(in.tp, ep);
    const graph::ModelShape shape = bench_model_shape(in.model, dtype);
    graph::ep_shard(shape, ep, 0);  // a dense model, an ep that does not divide the experts
    in.ep = ep;
    in.routing = routing_from_flags(skew, routing_stats, shape);
}

int micro_batches_for(int32_t batch, int pp) {
    int m = std::max(1, std::min<int>(pp, batch));
    while (batch % m != 0) --m;
    return m;
}

void set_collective_knobs(TraceBenchInputs& in, bool flashcomm_flag, const std::string& expansion_flag,
                          const config::RuntimeKnobs& knobs) {
    in.flashcomm = flashcomm_flag || knobs.flashcomm;  // the flag wins over VLLM_ASCEND_ENABLE_FLASHCOMM
    in.hccl_expansion = !expansion_flag.empty()                ? expansion_flag
                        : !knobs.hccl_op_expansion_mode.empty() ? knobs.hccl_op_expansion_mode
                                                                : "HOST";
    sim::expansion_mode_from_name(in.hccl_expansion, "--hccl-expansion");  // exit 2 before any work
}

}  // namespace duet::workload
