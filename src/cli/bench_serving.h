#pragma once
// `duet bench --workload serving` (docs/serving.md): a stream of requests through the shared
// continuous-batching scheduler on the modelled machine, baseline vs target placement, with
// per-request latency percentiles, throughput and goodput under SLOs. bench_cmd.cpp registers
// the flags and calls run_bench_serving.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "sim/report.h"

namespace duet::cli {

struct ServingBenchArgs {
    std::string rate = "inf";    // --rate: requests per second, or inf (all at t = 0)
    double burstiness = 1.0;     // --burstiness: coefficient of variation of the inter-arrival gaps
    int64_t requests = 1000;     // --requests
    int64_t seed = 0;            // --seed
    double slo_ttft_ms = -1, slo_tpot_ms = -1;  // < 0: none
    int64_t kv_blocks = -1;      // --kv-blocks: override the derived KV capacity
    int64_t parallel = 256;      // --max-seqs: running sequences at most
    int64_t step_tokens = 512;   // --step-tokens: token budget of a step (chunked prefill)
    int64_t ctx = -1;            // --ctx: context length (-1: the model's trained context)
    double think_ms = 0;         // --think-ms: an agent session's pause between a call's answer and its next call
    int64_t shared_prefix = 0;   // --shared-prefix: prompt tokens every request shares (prefix cache)
    bool rate_sweep = false;     // --rate-sweep: highest rate within the SLOs per placement
    int64_t sweep_width = 0;     // --sweep-width: rates tried together (0: the mpirun ranks, 1 alone)
    double attainment = 0.9;     // --slo-attainment: share of requests within the SLOs a rate must reach
    int64_t dp = 1;              // --dp: data-parallel replicas of the modelled machine
    std::string router;          // --router: round_robin (default), least_outstanding_tokens, prefix_affinity
    bool disaggregate = false;   // --disaggregate: prefill on npu1, decode on npu0 + PIM, KV over their link
    std::string host_profile;    // --host-profile: the machine is this CPU running duet's engine (hw/cpu/host_profile.h)
};

// The shared inputs of `duet bench` the serving mode reads.
struct ServingBenchCommon {
    std::string model, settings_path, config_path, pim, dispatch, report, topology, workload_file, svg, trace;
    int64_t trace_steps = -1;  // steps per placement the trace records (-1: up to kMaxTraceSteps)
    std::string baseline, target;
    int64_t npus = -1, pims = -1;
    int64_t seq_len = -1, gen_len = 256;
    int64_t tp = 1, pp = 1;
    int64_t ep = -1;             // --ep (-1: config.toml [topology] ep)
    double expert_skew = -1;     // --expert-skew (-1: not given)
    std::string routing_stats;   // --routing-stats
    bool flashcomm = false;      // --flashcomm (with --tp)
    std::string hccl_expansion;  // --hccl-expansion
    sim::Thresholds th;            // the three verdicts' thresholds (--tbt-reduction-min ...)
    bool no_verdict_exit = false;  // exit 0 even when a verdict is NOT MET
};

void add_serving_bench_flags(CLI::App* bench, ServingBenchArgs& a);
void run_bench_serving(const ServingBenchArgs& a, const ServingBenchCommon& c);

}  // namespace duet::cli
