#pragma once
// FILE mode of `duet bench`: the engine runs the model file for real under both placements
// (workload/file_engine_run.h); their op traces become the plans the comparison simulates, and
// what the engine generated and measured becomes the report's "functional" object
// (docs/report-schema.md).
#include <cstdint>

#include <nlohmann/json.hpp>

#include "config/coop_config.h"
#include "config/settings.h"
#include "runtime/warmup.h"
#include "sim/planner.h"
#include "workload/trace_bench.h"

namespace duet::workload {

struct FileBenchPlans {
    sim::Plan plan_b, plan_t;   // the baseline's and the target's engine traces
    int64_t n_prompt = 0;       // prompt tokens the engine ran (the simulated prompt length)
    nlohmann::json functional;  // report "functional"
};

// Runs in.model (batch 1) with the weights in place for a policy without PIM and through the PIM
// layout for one with it; the target is scored on the baseline's tokens. Sets setup's weight
// dtypes to what the traced matrices hold. `seq_len_from_flag`: in.seq_len came from --seq-len
// (refused past the context, not cut). Throws duet::Error (batch above 1, the model's errors).
FileBenchPlans run_file_bench(const config::Settings& st, const config::CoopConfig& cfg, const TraceBenchInputs& in,
                              BenchSetup& setup, const runtime::WarmupOptions& warmup, bool seq_len_from_flag);

// Throws duet::Error when the two runs generated different tokens although no matrix changed
// precision: the PIM layout path computed different numbers.
void check_file_tokens(const nlohmann::json& functional, const TraceBenchInputs& in);

}  // namespace duet::workload
