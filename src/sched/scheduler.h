#pragma once
// The continuous-batching policy (Orca/vLLM-style iteration-level scheduling) as a pure state
// machine: no engine, thread or clock. It holds the waiting queue and the running set by SeqId
// and decides each step's composition; an executor runs that step (runtime/batcher: a real
// Engine::forward and sampling; serving/: the modelled machine's step time) and reports back
// which sequences stopped. Both executors therefore make the same decisions for the same
// arrivals, which the replay test (tests/serving/replay_test.cpp) checks.
//
// One step (plan()):
//  1. Admission (between steps, in queue order, while slots last: running + 1 + followers <=
//     n_parallel; continuous = false admits only into an empty batch). With prefix sharing, a
//     sequence first attaches its longest cached prefix (KvPool::attach_cached) or, when longer,
//     the prompt prefix a running sequence holds (>= kMinRunningShare tokens; a queued prompt
//     whose shared prefix that sequence is still prefilling waits a step, keeping its place).
//     It then reserves KV for its whole unfed prompt + 1; if the pool cannot supply it, cached
//     prefix blocks are evicted, and if that does not suffice admission stops for this step.
//  2. Sequences whose tokens exceed n_ctx end (CONTEXT).
//  3. Composition: sched/compose.h (decode first, then prompt chunks within the token budget).
//  4. KV for the step, all or nothing: when a sequence finds no room, the step's reservations
//     are given back, cached prefix blocks are evicted (one per running sequence) and the step
//     is composed again; with nothing to evict the most recently admitted sequence is preempted
//     (its KV freed, re-queued first, recomputed later from its prompt plus what it generated:
//     vLLM's recompute preemption); a sole sequence the pool cannot hold ends (CONTEXT).
// After the executor ran the step, complete() commits the computed tokens, forks the group of a
// leader whose prompt is done (n > 1 completions share its prompt KV and sample from the same
// logits) and finishes the sequences that stopped (their full blocks enter the prefix cache).
//
// Thread safety: none; one thread drives a scheduler and its pool.
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "sched/kv_pool.h"

namespace duet::sched {

// Fewest prompt tokens worth taking from a running request's KV (and, while it is still
// prefilling them, waiting a step for): below it the copied partial KV block costs about what the
// tokens would. Assumption, not measured.
inline constexpr int64_t kMinRunningShare = 4;

struct SchedulerOptions {
    int64_t n_parallel = 4;           // sequences in the running batch at most
    bool continuous = true;           // false: a batch runs to completion before others join
    bool prefix_sharing = true;       // prefix cache + running-prefix sharing
    bool running_share = true;        // a queued prompt may start from a running sequence's KV (off under TP)
    int64_t step_token_budget = 512;  // tokens processed per step (chunked prefill)
    int64_t n_ctx = 0;                // context length: a sequence ends (CONTEXT) beyond it
};

struct Admission {
    SeqId id = 0;
    int64_t cached_tokens = 0;  // tokens whose KV was attached (prefix cache or a running sequence)
    bool first = true;          // false: re-admitted after a preemption
};

struct Chunk {
    SeqId id = 0;
    int64_t n_past = 0;    // tokens of this sequence computed before the step
    int64_t n_tokens = 0;  // tokens it computes in this step
    bool samples = false;  // all its tokens are then computed: it samples its next token
    bool operator==(const Chunk&) const = default;
};

struct Step {
    std::vector<SeqId> ended;        // finished by the scheduler (CONTEXT): context or pool too small
    std::vector<Admission> admitted;
    std::vector<SeqId> preempted;    // KV freed, queued first again
    std::vector<Chunk> chunks;       // in running order (the forward's batch order)
    int64_t prefill_tokens() const;  // tokens of chunks with n_tokens > 1 or not sampling
    int64_t decode_tokens() const;   // one-token sampling chunks
};

class Scheduler {
public:
    explicit Scheduler(SchedulerOptions opts);
    const SchedulerOptions& options() const { return opts_; }

    // Queues a request of n_prompt tokens; `followers` (n > 1 completions of the same prompt)
    // fork its KV once its prompt is computed. Ids are the caller's, unique while alive.
    void add(SeqId id, int64_t n_prompt, std::vector<SeqId> followers = {});
    // Removes a waiting or running sequence (cancelled), releasing its KV into the prefix cache;
    // its unforked followers end with it (the caller's business). False: unknown id.
    bool cancel(SeqId id, KvPool& pool);
    // Decides the next step (see the header). An empty Step::chunks: nothing to run now.
    Step plan(KvPool& pool);
    // The step ran: `stopped` are the sequences (followers included) whose last sample ended them.
    void complete(const Step& step, std::span<const SeqId> stopped, KvPool& pool);
    // The step failed part-way: every running sequence ends; their KV is freed without entering
    // the prefix cache. Returns their ids.
    std::vector<SeqId> fail_running(KvPool& pool);

    int64_t n_waiting() const { return int64_t(waiting_.size()); }
    int64_t n_running() const { return int64_t(running_.size()); }
    std::vector<SeqId> running_ids() const;
    std::vector<SeqId> waiting_ids() const;
    uint64_t preemptions() const { return preemptions_; }

private:
    struct Seq {
        SeqId id = 0;
        int64_t n_prompt = 0;
        int64_t n_tokens = 0;    // prompt + sampled tokens fed back
        int64_t n_computed = 0;  // tokens whose KV is in the pool
        int64_t prefill_waits = 0;
        bool admitted_once = false;
        std::vector<SeqId> followers;
        int64_t unfed() const { return n_tokens - n_computed; }
    };
    struct Shared {
        const Seq* seq = nullptr;
        int64_t n_tokens = 0;
    };
    Shared running_prefix(const Seq& s, const KvPool& pool) const;
    bool admit(Seq& s, const Shared& shared, KvPool& pool, Step& out);
    void admit_waiting(KvPool& pool, Step& out);
    bool reserve_step(const std::vector<int64_t>& feeds, KvPool& pool);
    void finish(Seq& s, KvPool& pool, bool remember);

    SchedulerOptions opts_;
    std::deque<Seq> waiting_;
    std::vector<Seq> running_;
    uint64_t preemptions_ = 0;
};

}  // namespace duet::sched
