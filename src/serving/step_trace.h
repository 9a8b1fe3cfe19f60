#pragma once
// A Chrome/Perfetto trace of a serving run's steps (`duet bench --workload serving --trace FILE`):
// per placement one process with a "steps" track of complete events (one per step, named by its
// composition: prompt tokens and decode sequences) and counters of running sequences, waiting
// requests and KV blocks in use. Times in microseconds of the virtual clock.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace duet::serving {

struct StepEvent {
    int64_t t_ns = 0, dur_ns = 0;
    int64_t prefill_tokens = 0, decode_seqs = 0;
    int64_t running = 0, waiting = 0, kv_blocks_used = 0;
    int64_t admitted = 0, preempted = 0;
};

// names[i] labels runs[i]; returns {"traceEvents": [...], "displayTimeUnit": "ns"}.
nlohmann::json steps_trace_json(const std::vector<std::string>& names,
                                const std::vector<std::vector<StepEvent>>& runs);

}  // namespace duet::serving
