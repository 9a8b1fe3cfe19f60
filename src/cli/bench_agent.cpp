#include "cli/bench_agent.h"

#include "cli/flags.h"
#include "core/error.h"

namespace duet::cli {

void add_agent_bench_flags(CLI::App* c, AgentBenchArgs& a) {
    text(c, "--workload", a.workload,
         "generation: baseline vs target policy; agent: the multi-turn agent session's ablation (docs/agent.md); "
         "serving: a request stream through the continuous batcher (docs/serving.md)");
    c->add_option("--workload-file", a.workload_file,
                  "With --workload agent: JSONL session to replay (docs/agent.md), instead of the built-in one; with "
                  "--workload serving: a JSONL request trace or ShareGPT JSON (docs/serving.md)");
    number(c, "--turns", a.turns, "With --workload agent: turns of the built-in session", int64_t(1), int64_t(1000));
    number(c, "--threads", a.threads, help::kEngineThreads, 0,
           int(kMaxThreads));
    number(c, "--max-ctx", a.max_ctx,
           "With --workload agent: the max-length KV reservation paged KV is compared to (0: the model's trained "
           "context, at least the session)",
           int64_t(0), kMaxCtx);
}

bool is_agent_workload(const AgentBenchArgs& a) {
    if (a.workload != "generation" && a.workload != "agent" && a.workload != "serving")
        fail("--workload = \"{}\" is not allowed (allowed: generation, agent, serving)", a.workload);
    return a.workload == "agent";
}

}  // namespace duet::cli
