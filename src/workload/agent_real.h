#pragma once
// Real replay of an agent session (workload/agent_trace.h) on a GGUF model through the engine:
// one Generator resends the whole history at every model call, as an agent does, with the
// optimisations under test switched on or off. Host-measured: TTFT per call (prompt in ->
// first token out) and the process's peak resident memory while the session runs.
//
// Token ids are synthetic (a deterministic function of message and position; no tokenizer
// needed), generated messages are the model's own greedy output (ignoring end-of-generation),
// so the history a call resends holds exactly what the previous call produced.
//
// Thread safety: runs on the calling thread; the engine uses its own pool.
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/engine.h"
#include "workload/agent_trace.h"

namespace duet::workload {

// The real engine's switches of the ablation (docs/agent.md).
struct RealSwitches {
    bool prefix_reuse = true;  // keep the KV of the common prefix between calls (Generator reuse_prefix)
    bool warmup = true;        // pre-fault the weights at load + one dummy round (runtime/warmup.h)
    bool fuse = false;         // graph::fuse_all: Q/K/V, gate/up; RoPE + KV write; RMSNorm into quantised matmuls
    bool paged_kv = true;      // KV pool sized to the session's blocks, else a max-length reservation
    bool static_plan = true;   // scratch from the static memory plan, else per-op allocation (no reuse)
    bool kv_int8 = false;      // the int8 KV cache (runtime/kv_cache.h), else f16
};

struct CallTiming {
    int64_t n_prompt = 0, n_cached = 0, n_generate = 0;
    double ttft_ms = 0;
};

struct RealRun {
    std::vector<CallTiming> calls;
    double ttft_mean_ms = 0;       // over the calls
    double ttft_first_ms = 0;      // the first call (pays what warm-up did not prepare)
    double load_ms = 0, warmup_ms = 0;
    uint64_t peak_rss_bytes = 0;   // VmHWM after the session, reset before the load (0: unknown)
    uint64_t kv_pool_bytes = 0;    // the engine's KV pool
    uint64_t file_bytes = 0;       // the model file (mapped: its pages count in the RSS once read)
    bool rss_reset = false;        // /proc/self/clear_refs reset the peak before the run
};

struct RealOptions {
    int threads = 0;            // 0: all hardware threads
    int64_t max_ctx = 0;        // the max-length reservation (0: the model's trained context, at least the session)
    bool evict_first = true;    // drop the file from the page cache before loading (a cold start)
    bool pin_threads = false;   // CPU_AFFINITY_CONF: one pool thread per CPU (runtime/cpu_affinity.h)
    runtime::EngineOptions engine;  // what each replay's engine starts from (runtime knobs: attention, MLP prefetch)
};

// Throws duet::Error (unreadable model, a session longer than the context allowed).
RealRun replay_real(const std::string& model_path, const AgentTrace& trace, const RealSwitches& sw,
                    const RealOptions& opts);

// Tokens the session's longest sequence holds (every message).
int64_t session_tokens(const AgentTrace& trace);

}  // namespace duet::workload
