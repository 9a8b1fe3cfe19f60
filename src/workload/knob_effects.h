#pragma once
// The runtime knobs' effects the commands apply (config/runtime_knobs.h): engine options from
// VLLM_ATTENTION_BACKEND, VLLM_ASCEND_ENABLE_PREFETCH_MLP and
// VLLM_ASCEND_MODEL_EXECUTE_TIME_OBSERVE, the modelled per-step log, and the knobs of a
// command that reads settings.json (the environment wins over the file).
#include <string>

#include "config/runtime_knobs.h"
#include "config/settings.h"
#include "runtime/engine.h"
#include "sim/timeline.h"

namespace duet::workload {

// The knobs from the process environment and `st`'s runtime section.
config::RuntimeKnobs runtime_knobs_of(const config::Settings& st);

// Sets eo's attention kernel, MLP prefetch budget (the host's L2, runtime/mlp_prefetch.h) and
// per-forward execute-time log (stderr: "execute time: forward 3 (decode, 1 token, 1 sequence):
// 2.345 ms") from the knobs.
void apply_engine_knobs(const config::RuntimeKnobs& k, runtime::EngineOptions& eo);

// With VLLM_ASCEND_MODEL_EXECUTE_TIME_OBSERVE: one stderr line per modelled forward of `tl`,
// "execute time (modelled, npu_only): forward 0 (prefill): 12.345 ms".
void log_modelled_execute_times(const config::RuntimeKnobs& k, const std::string& label, const sim::Timeline& tl);

}  // namespace duet::workload
