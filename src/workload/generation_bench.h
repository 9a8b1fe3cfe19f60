#pragma once
// `duet bench` (--workload generation): a baseline and a target placement on the modelled NPU +
// PIM. A preset or config.json runs trace-only (workload/trace_bench.h); a GGUF file also runs the
// engine for real under both placements (workload/file_bench.h). Prints the side-by-side table and
// writes the report, trace and chart files asked for.
#include <cstdint>
#include <functional>
#include <string>

#include "runtime/warmup.h"
#include "sim/report.h"

namespace duet::workload {

struct GenerationBenchOptions {
    std::string baseline = "npu_only", target = "npu_pim_coop";
    int64_t seq_len = -1, gen_len = 256, batch = -1;  // -1: from settings.json
    std::string model;        // "": settings api.model
    bool model_given = false; // --model was on the command line (an empty one is an error)
    std::string settings_path, config_path;
    std::string report, trace, svg;  // files to write ("": none)
    std::string pim, dispatch, topology;
    int64_t npus = -1, pims = -1;  // -1: from [topology]
    int64_t trace_steps = -1;      // -1: every decode step
    int64_t tp = 1, pp = 1;        // docs/scale-out.md
    int64_t ep = -1;               // -1: from [topology] ep
    double expert_skew = -1;       // -1: not given (uniform routing unless routing_stats)
    std::string routing_stats;
    bool flashcomm = false;        // else VLLM_ASCEND_ENABLE_FLASHCOMM
    std::string hccl_expansion;    // "": HCCL_OP_EXPANSION_MODE, else HOST
    sim::Thresholds th;
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
