#pragma once
// `duet bench --workload agent`: the agent session of issue 15 replayed with each optimisation
// switched alone and all together, for real on a model file and modelled on the NPU preset
// (workload/ablation.h). Prints the ablation table and writes the report and chart asked for.
#include <cstdint>
#include <string>

namespace duet::workload {

struct AgentBenchOptions {
    std::string model;  // "": settings api.model
    std::string settings_path, config_path, dispatch;
    std::string report, svg;    // files to write ("": none)
    std::string workload_file;  // JSONL session (docs/agent.md); "": the built-in session
    int64_t turns = 4;          // turns of the built-in session
    int threads = 0;            // engine threads of the real replays (0: all)
    int64_t max_ctx = 0;        // the max-length reservation paged KV is compared to (0: trained context)
};

// Throws duet::Error for bad inputs (a model that is neither a preset, a config.json nor a file).
void run_agent_bench(const AgentBenchOptions& o);

}  // namespace duet::workload
