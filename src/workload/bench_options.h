#pragma once
// The options of `duet bench` that the policy comparison (workload/generation_bench.h) and the
// serving workload (workload/serving_bench.h) both read: the model, the configuration files, the
// modelled machine and the placements compared on it, parallelism, the verdicts' thresholds and
// the files to write.
#include <cstdint>
#include <string>

#include "sim/report.h"

namespace duet::workload {

struct BenchOptions {
    std::string model;  // "": settings api.model
    std::string settings_path, config_path;
    std::string baseline = "npu_only", target = "npu_pim_coop";
    std::string pim, dispatch, topology;  // "": the presets' defaults; no --topology file
    int64_t npus = -1, pims = -1;         // -1: from [topology]
    int64_t seq_len = -1, gen_len = 256;  // prompt tokens (-1: settings runtime.seq_len), output tokens
    int64_t tp = 1, pp = 1;               // docs/scale-out.md
    int64_t ep = -1;                      // -1: from [topology] ep
    double expert_skew = -1;              // -1: not given (uniform routing unless routing_stats)
    std::string routing_stats;
    bool flashcomm = false;      // else VLLM_ASCEND_ENABLE_FLASHCOMM
    std::string hccl_expansion;  // "": HCCL_OP_EXPANSION_MODE, else HOST
    sim::Thresholds th;          // the three verdicts' thresholds
    std::string report, trace, svg;  // files to write ("": none)
    int64_t trace_steps = -1;        // steps the trace records (-1: all; serving: up to a bound)
};

}  // namespace duet::workload
