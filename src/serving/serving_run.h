#pragma once
// The simulator executor of the shared batching policy (sched/scheduler.h): requests arrive on
// a virtual clock, the scheduler decides every step exactly as it does for the real server
// (runtime/batcher.h), and the step takes the time a StepTimer says (the modelled machine,
// serving/step_cost.h, or recorded times in the replay test). Requests that arrive while a
// step runs join at the next step's admission, as in the real batcher.
//
// Per request: queueing (arrival -> first admission), TTFT (arrival -> end of the step that
// sampled its first token), TPOT ((end-to-end - TTFT) / (output tokens - 1), vLLM's
// definition), end-to-end (arrival -> end of the step that sampled its last token).
// Times are integer nanoseconds on the virtual clock, so a replay is exact. run_serving is the
// one-replica case of serving/serving_cluster.h (data-parallel replicas, prefill/decode pairs).
// Thread safety: pure function of its inputs (the timer and the pool are the caller's).
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "sched/scheduler.h"

namespace duet::serving {

struct ServingRequest {
    int64_t arrival_ns = 0;
    int64_t prompt_tokens = 0;
    int64_t output_tokens = 1;  // tokens generated (ignoring end-of-generation), >= 1
    // Prompt token ids for the modelled prefix cache (sched/block_pool.h); null: unknown. May
    // run on into the output's ids (an agent session's transcript): its KV blocks are then
    // remembered too.
    std::shared_ptr<const std::vector<int32_t>> tokens;
    // Closed loop (an agent session's next call): index of the request whose completion
    // releases this one, which then arrives think_ns later; -1: arrival_ns as given.
    int64_t after = -1;
    int64_t think_ns = 0;
};

struct RequestOutcome {
    int64_t arrival_ns = 0;
    int64_t prompt_tokens = 0, output_tokens = 0;
    int64_t generated = 0;          // tokens sampled (output_tokens unless it ended early)
    int64_t queue_ns = -1;          // -1: never admitted
    int64_t ttft_ns = -1;           // -1: no token
    int64_t e2e_ns = -1;            // -1: not finished
    int64_t preemptions = 0;
    int64_t cached_tokens = 0;      // prompt tokens whose KV came from the prefix cache or a running request
    bool ended_by_context = false;  // the scheduler ended it (context or pool too small)
    int replica = -1;               // the replica the router sent it to (-1: refused)
    int64_t kv_transfer_ns = -1;    // disaggregated: prefill end -> KV at the decode instance (link queue included)
    double tpot_ns() const {  // -1 when fewer than two tokens
        return generated > 1 && e2e_ns >= 0 ? double(e2e_ns - ttft_ns) / double(generated - 1) : -1;
    }
};

// One instance's share of a run: its steps and the virtual time they took.
struct InstanceStats {
    int64_t steps = 0;
    int64_t busy_ns = 0;
};

// One replica (serving/serving_cluster.h): a colocated instance, or a prefill and a decode
// instance joined by a link.
struct ReplicaStats {
    int64_t requests = 0;     // routed to it (refused ones not counted)
    InstanceStats prefill;    // the colocated instance, or the prefill instance
    InstanceStats decode;     // disaggregated only
    int64_t kv_transfers = 0;
    uint64_t kv_transfer_bytes = 0;
    int64_t link_busy_ns = 0;  // time the link carried KV
};

struct ServingResult {
    std::vector<RequestOutcome> requests;  // in the order given
    std::vector<ReplicaStats> replicas;
    int64_t steps = 0;
    uint64_t preemptions = 0;
    int64_t end_ns = 0;             // when the last step ended
    int64_t peak_running = 0;
    int64_t peak_kv_blocks_used = 0;
};

// ns the step takes; index = steps run before it.
using StepTimer = std::function<int64_t(const sched::Step& step, int64_t index)>;
// Observer: every planned step with its start time, the request indices it saw first, and the
// scheduler and pool just after planning it (before the step runs).
using StepObserver = std::function<void(int64_t t_ns, const std::vector<int64_t>& arrived, const sched::Step& step,
                                        const sched::Scheduler& sched, const sched::KvPool& pool)>;

// Runs every request to completion. Requests are added in arrival order (ties in the order
// given; a request with `after` >= 0 arrives think_ns after that one finished, and never if it
// does not); a request whose prompt + 1 tokens exceed the context or the whole pool is refused
// up front (never admitted: queue_ns = -1), as the batcher refuses it at submission.
ServingResult run_serving(std::span<const ServingRequest> requests, const sched::SchedulerOptions& opts,
                          sched::KvPool& pool, const StepTimer& timer, const StepObserver& observe = {});

}  // namespace duet::serving
