#pragma once
// Mean TTFT and TPOT of a synthetic serving run of `duet bench`'s NPU-only baseline: n identical
// requests (prompt, output tokens) arriving as a Poisson process, scheduled by the shared batching
// policy (sched/scheduler.h) and timed step by step on the modelled machine
// (serving/step_cost.h), as `duet bench --workload serving --baseline npu_only` runs them with its
// defaults (256 sequences, 512 tokens per step, seed 0; a context of prompt + output). This is
// what a serving benchmark at a request rate (vLLM's benchmark_serving.py) measures, queueing
// and the other requests' steps included. Thread safety: pure function; presets are read from
// the config folder.
#include <cstdint>

#include "config/coop_config.h"
#include "config/settings.h"
#include "workload/bench_inputs.h"

namespace duet::workload {

struct ServingMeans {
    double ttft_ms = 0, tpot_ms = 0;  // means over the requests (vLLM's definitions, serving/serving_run.h)
};

// `in` names the model, prompt (seq_len) and output (gen_len) tokens, dispatch and the serving
// step cost; its baseline policy is the one run. Throws duet::Error for bad inputs.
ServingMeans serving_means(const config::Settings& st, const config::CoopConfig& cfg, const TraceBenchInputs& in,
                           double rate_rps, int64_t n_requests);

}  // namespace duet::workload
