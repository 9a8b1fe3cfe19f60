#pragma once
// The task kinds of `duet serve`'s /v1/tasks (docs/server.md "Tasks"):
//  - "bench": one trace-only comparison (the `duet bench` report) with the payload's knobs;
//  - "npu_pim_gemv_optimize": `duet tune` (src/tune) with every knob the payload sends fixed
//    and the rest of the design space searched; progress_detail shows points done/total and the
//    best point so far; the result holds the best configuration, its three verdicts and a
//    ready config.toml.
// Payload keys: settings/config keys by dotted name ("pim.alignment") or the short names of
// the guide ("pim_layout", "reorder_block_kb", "zero_copy", ...), plus model, gen_len,
// baseline, target, the verdict thresholds (tbt_reduction_min, ttft_increase_max_ms,
// memory_increase_max) and, for the optimisation, objective, strategy, budget, hw_pairs.
// Every payload is validated at submission by the code the config loader and `duet tune`
// use, so a combination the loader refuses is refused with the same message (HTTP 400).
// The model is the payload's, else settings api.model when it is an architecture preset,
// else the served file.
#include <cstdint>
#include <string>

#include "config/coop_config.h"
#include "config/settings.h"
#include "server/task_service.h"

namespace duet::server {

// memory_cap_bytes: what one task may hold (tune/memory_estimate.h), `duet serve --task-memory-mb`;
// a payload whose estimate exceeds it is a 400 with the arithmetic.
void register_task_kinds(TaskService& tasks, const config::Settings& st, const config::CoopConfig& cfg,
                          const std::string& served_path, uint64_t memory_cap_bytes);

}  // namespace duet::server
