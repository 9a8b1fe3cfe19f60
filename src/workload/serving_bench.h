#pragma once
// `duet bench --workload serving` (docs/serving.md): a stream of requests through the shared
// continuous-batching scheduler on the modelled machine, baseline vs target placement, with
// per-request latency percentiles, throughput and goodput under SLOs. Prints the comparison and
// writes the report, trace and chart asked for (rank 0 alone under mpirun).
#include <cstdint>
#include <string>

#include "workload/bench_options.h"

namespace duet::workload {

// The request stream and the serving machine (the options only --workload serving reads).
struct ServingLoad {
    std::string rate = "inf";    // requests per second, or inf (all at t = 0)
    double burstiness = 1.0;     // coefficient of variation of the inter-arrival gaps
    int64_t requests = 1000;
    int64_t seed = 0;            // of the arrival times
    double slo_ttft_ms = -1, slo_tpot_ms = -1;  // < 0: none
    int64_t kv_blocks = -1;      // override the derived KV capacity (-1: derived)
    int64_t parallel = 256;      // running sequences at most
    int64_t step_tokens = 512;   // token budget of a step (chunked prefill)
    int64_t ctx = -1;            // context length (-1: the model's trained context)
    double think_ms = 0;         // an agent session's pause between a call's answer and its next call
    int64_t shared_prefix = 0;   // prompt tokens every request shares (prefix cache)
    bool rate_sweep = false;     // highest rate within the SLOs per placement
    int64_t sweep_width = 0;     // rates tried together (0: the mpirun ranks, 1 alone)
    double attainment = 0.9;     // share of requests within the SLOs a rate must reach
    int64_t dp = 1;              // data-parallel replicas of the modelled machine
    std::string router;          // round_robin (default), least_outstanding_tokens, prefix_affinity
    bool disaggregate = false;   // prefill on npu1, decode on npu0 + PIM, KV over their link
    std::string host_profile;    // the machine is this CPU running duet's engine (hw/cpu/host_profile.h)
};

struct ServingBenchOptions {
    BenchOptions bench;
    std::string workload_file;  // JSONL request trace, ShareGPT JSON or agent sessions ("": synthetic)
    ServingLoad load;
};

// Runs both placements and writes the outputs; returns whether every verdict is MET. Throws
// duet::Error for bad inputs, naming the flag.
bool run_serving_bench(const ServingBenchOptions& o);

}  // namespace duet::workload
