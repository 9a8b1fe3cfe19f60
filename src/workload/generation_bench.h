#pragma once
// `duet bench` (--workload generation): a baseline and a target placement on the modelled NPU +
// PIM. A preset or config.json runs trace-only (workload/trace_bench.h); a GGUF file also runs the
// engine for real under both placements (workload/file_bench.h). Prints the side-by-side table and
// writes the report, trace and chart files asked for.
#include <cstdint>
#include <functional>
#include <string>

#include "runtime/warmup.h"
#include "workload/bench_options.h"

namespace duet::workload {

struct GenerationBenchOptions {
    BenchOptions bench;
    int64_t batch = -1;        // -1: settings runtime.batch_size
    bool model_given = false;  // --model was on the command line (an empty one is an error)
    bool fuse = false;
    std::string kv_type;  // "" = settings runtime.dtype; int8 = the int8 KV cache (trace-only)
    bool log_level_from_settings = true;  // settings runtime.log_level sets the log level
    runtime::WarmupOptions warmup;        // FILE mode
    // Trace-only: throws duet::Error when the baseline and target plans of gen_len forwards of
    // `model` (weights in `runtime_dtype`) would not fit the memory cap; called before any plan.
    std::function<void(const std::string& model, const std::string& runtime_dtype, int64_t gen_len)> check_plan_memory;
};

// Runs the comparison and writes its outputs; returns whether every verdict is MET. Throws
// duet::Error for bad inputs, and in FILE mode when the two placements generate different
// tokens with the same numerics.
bool run_generation_bench(const GenerationBenchOptions& o);

}  // namespace duet::workload
