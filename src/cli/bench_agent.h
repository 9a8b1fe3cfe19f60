#pragma once
// `duet bench --workload agent`: the agent session of issue 15 replayed with each optimisation
// switched alone and all together, for real on a model file and modelled on the NPU preset
// (workload/ablation.h). bench_cmd.cpp registers the flags and calls workload::run_agent_bench.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace duet::cli {

struct AgentBenchArgs {
    std::string workload = "generation";  // --workload: generation (the policy comparison) or agent
    std::string workload_file;            // --workload-file: JSONL session (docs/agent.md)
    int64_t turns = 4;                    // --turns: turns of the built-in session
    int threads = 0;                      // --threads: engine threads of the real replays
    int64_t max_ctx = 0;                  // --max-ctx: the max-length reservation paged KV is compared to
};

void add_agent_bench_flags(CLI::App* bench, AgentBenchArgs& a);
bool is_agent_workload(const AgentBenchArgs& a);  // throws duet::Error for an unknown --workload

}  // namespace duet::cli
