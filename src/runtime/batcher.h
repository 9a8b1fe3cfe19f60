#pragma once
// Continuous batching over one Engine (Orca/vLLM-style iteration-level scheduling): requests
// wait in a bounded queue, join the running batch between decode steps when a slot and KV
// blocks are free, and leave it as soon as they finish — every engine step is one
// Engine::forward over all running sequences (prefill chunks and decode tokens together).
//
// The batcher is the real executor of the shared scheduling policy (sched/scheduler.h, which
// also drives the simulator): the scheduler decides each step's admissions, prompt chunks,
// decode tokens, preemptions and forks over the engine's KV pool; the batcher owns the thread,
// the engine, sampling and the requests' callbacks, and runs what the scheduler decided.
//
// KV memory: each request's sequence holds paged blocks; with the prefix cache on, a prompt
// that starts like an earlier one shares that one's full blocks. When the pool runs dry in
// the middle of decoding, the most recently admitted request is preempted: its blocks are
// freed and it is re-queued first, to be recomputed from its prompt plus what it generated
// (vLLM's recompute preemption); its client notices nothing but a pause.
//
// A step that throws (a bug, std::bad_alloc, an injected fault) does not end the engine
// thread: every request in the running batch finishes with "error" and the exception's text,
// its KV blocks go back to the pool (not into the prefix cache), and queued requests go on.
// An error that belongs to one request — its sampling after a complete forward (a grammar that
// cannot go on, a throwing callback) — fails that request alone; the others go on in the batch.
//
// Callbacks run on the batcher's engine thread and must not block for long. A request is
// cancelled by setting its `cancelled` flag (e.g. when its HTTP client disconnects): its
// blocks are freed at the next step.
//
// Thread safety: submit(), stats() and the destructor may be called from any thread.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "model/sampler.h"
#include "runtime/engine.h"
#include "runtime/generator.h"
#include "sched/scheduler.h"

namespace duet::runtime {

// One round of the engine thread, for replays (tests/serving/replay_test.cpp): the requests it
// saw for the first time (ids in submission order from 0; a group's leader, then its
// followers), the steady-clock time (core/timer.h now_ns) at which it took them from the
// queue, and the step the scheduler decided then.
struct StepRecord {
    int64_t t_ns = 0;
    std::vector<sched::SeqId> arrived;
    sched::Step step;
};

struct BatcherOptions {
    int64_t n_parallel = 4;         // sequences in the running batch at most
    int64_t max_queue = 64;         // waiting requests at most; more are refused (HTTP 429)
    bool continuous = true;         // false: a batch runs to completion before others join
    // Prefix reuse: whole KV blocks of finished and running requests by token hash (PrefixCache),
    // and a queued prompt that starts with at least 4 tokens a running request holds shares that
    // request's KV to the token (waiting a step while that request is still prefilling them), as
    // agents sharing a system prompt do. false: neither.
    bool prefix_cache = true;
    // false: groups of one request only (n = 1), GROUP_TOO_LARGE otherwise. Tensor parallelism
    // (runtime/tp_rank.h) turns forks off: a forked sequence starts from KV the other ranks
    // never computed.
    bool forks = true;
    int64_t step_token_budget = 512;  // prompt tokens processed per engine step (chunked prefill)
    // Test hook (fault injection): engine step number `fault_at_step` (1-based, counting every
    // step the loop starts) throws instead of running; -1: off. Shows that a failing step fails
    // only its own requests ("error") and the batcher keeps serving.
    int64_t fault_at_step = -1;
    int64_t warmup_rounds = 0;  // dummy prefill + decode rounds before serving (runtime/warmup.h)
    // Admission window: when a request finds the engine idle (nothing running), the engine thread
    // waits up to this long (or until --parallel requests wait) before the first step, so a burst
    // of requests arriving a few milliseconds apart starts in one step instead of the first alone
    // and the rest one whole step later. 0: start at once. Costs a lone request this much TTFT.
    int64_t admit_window_us = 0;
    // Observer of every round (engine thread; must not block): the replay test records them.
    std::function<void(const StepRecord&)> on_step;
    // Request log (`duet serve --request-log FILE`): one JSON line per finished request that
    // generated a token, {"arrival_s" (since the batcher started), "prompt_tokens",
    // "output_tokens", "finish_reason", "queue_ms", "ttft_ms", "e2e_ms"}, appended and flushed as
    // each finishes: the JSONL `duet bench --workload serving --workload-file` replays
    // (docs/serving.md). Empty: none. A file that cannot be opened is a duet::Error.
    std::string request_log;
};

struct GenResult {
    std::string finish_reason;  // finish_reason(StopReason): "stop" (EOS or a stop string), "length", "cancelled", "error"
    std::string error;          // set when finish_reason == "error"
    int64_t prompt_tokens = 0;
    int64_t completion_tokens = 0;  // tokens sampled, including an end-of-generation token that ended it
    int64_t cached_tokens = 0;  // prompt tokens reused from the prefix cache or a running request
    int64_t forked_tokens = 0;  // prompt tokens whose KV blocks were shared with the group's first request (submit_group)
    int64_t seq_id = -1;        // the scheduler's id of the sequence (StepRecord, serving/batch_twin.h)
    double queue_ms = 0;        // submit -> admitted
    double ttft_ms = 0;         // submit -> first token
    double total_ms = 0;        // submit -> done
    std::vector<int32_t> tokens;  // generated ids (the output: without an end-of-generation token)
};

struct GenRequest {
    std::vector<int32_t> prompt;  // token ids, BOS included when wanted
    model::SamplerParams sampling;
    int64_t max_tokens = -1;        // < 0: until end of generation or the context is full
    std::vector<std::string> stop;  // text stop sequences (not included in the output)
    bool ignore_eos = false;        // keep generating past end-of-generation tokens (benchmarks, tests)
    std::function<void(const std::string& text)> on_text;  // streamed text, UTF-8 complete
    std::function<void(const GenResult&)> on_done;          // exactly once
    // Optional: every sampled token with the logits it was drawn from ([n_vocab], valid during
    // the call only), before the end-of-generation check (logprobs).
    std::function<void(int32_t token, const float* logits)> on_token;
    std::shared_ptr<std::atomic<bool>> cancelled;           // optional
};

enum class SubmitStatus {
    ACCEPTED,
    QUEUE_FULL,       // max_queue requests already wait
    PROMPT_TOO_LONG,  // prompt does not fit the context (n_ctx)
    KV_TOO_SMALL,     // prompt + 1 token needs more KV blocks than the whole pool has
    STOPPED,          // the batcher is shutting down
    GROUP_TOO_LARGE,  // submit_group with more requests than n_parallel slots
};
const char* submit_status_name(SubmitStatus s);

struct BatcherStats {
    int64_t queued = 0, running = 0;
    int64_t kv_blocks_used = 0, kv_blocks_free = 0, kv_blocks_total = 0;
    int64_t prefix_cached_blocks = 0;
    uint64_t prefix_lookup_tokens = 0, prefix_hit_tokens = 0;
    uint64_t steps = 0, preemptions = 0, completed = 0;
    uint64_t step_failures = 0;  // engine steps that threw (their requests finished with "error")
    uint64_t prompt_tokens = 0, generated_tokens = 0;
    uint64_t scratch_bytes = 0;  // the engine's activation scratch (sized for a whole step by the warm-up)
};

class Batcher {
public:
    Batcher(std::shared_ptr<const Model> model, EngineOptions engine_opts, BatcherOptions opts);
    // Serves on an engine built by the caller (a tensor-parallel rank's, runtime/tp_rank.h),
    // whose n_seq_max must be at least opts.n_parallel.
    Batcher(std::unique_ptr<Engine> engine, BatcherOptions opts);
    ~Batcher();  // finishes queued and running requests as "cancelled", joins the thread
    Batcher(const Batcher&) = delete;
    Batcher& operator=(const Batcher&) = delete;

    SubmitStatus submit(GenRequest req);
    // n > 1 completions of one prompt (every request's prompt must be the same): the group runs
    // together; the first request computes the prompt and the others fork its KV blocks
    // (refcount, copy on write) once it is done, then sample their first token from the same
    // logits. The group is admitted when that many slots are free; more than n_parallel()
    // requests is GROUP_TOO_LARGE.
    SubmitStatus submit_group(std::vector<GenRequest> reqs);
    int64_t n_parallel() const { return opts_.n_parallel; }
    BatcherStats stats() const;
    const Model& model() const { return *model_; }
    int64_t n_ctx() const { return n_ctx_; }
    // Blocks until no request is queued or running (for tests and benchmarks).
    void wait_idle();

private:
    struct Slot;
    class Pool;
    void loop();
    bool take_arrivals(std::unique_lock<std::mutex>& lock, StepRecord& rec);  // false: stopping
    void drop_cancelled();
    void apply(const sched::Step& st);
    void execute(const sched::Step& st);
    std::unique_ptr<Slot> make_slot(GenRequest req);
    void fork_followers(Slot& leader, const float* logits);
    void fail_running(const std::string& error);  // after a step threw
    void sampling_failed(Slot& s, const std::exception& e);  // s alone failed to sample
    void finish(Slot& s, StopReason reason, const std::string& error = "");
    void finish_id(sched::SeqId id, StopReason reason, const std::string& error = "");
    void publish_locked();  // stats_ from engine-thread state; mu_ held
    void log_request(const Slot& s);

    std::shared_ptr<const Model> model_;
    BatcherOptions opts_;
    std::unique_ptr<Engine> engine_;
    std::unique_ptr<class PrefixCache> prefix_;
    int64_t n_ctx_ = 0;

    mutable std::mutex mu_;
    std::condition_variable cv_, idle_cv_;
    std::deque<std::unique_ptr<Slot>> incoming_;  // submitted, not yet seen by the scheduler; mu_
    sched::SeqId next_id_ = 0;                    // mu_
    int64_t n_waiting_ = 0;                       // the scheduler's queue length; mu_
    // Engine thread only: the policy, the pool it drives, and every request it knows by id.
    std::unique_ptr<sched::Scheduler> sched_;
    std::unique_ptr<Pool> pool_;
    std::unordered_map<sched::SeqId, std::unique_ptr<Slot>> slots_;
    std::atomic<int64_t> n_running_{0};
    bool stop_ = false;
    int64_t steps_started_ = 0;  // engine thread only (fault_at_step)
    BatcherStats stats_;  // guarded by mu_
    std::unique_ptr<std::ofstream> request_log_;  // engine thread (and the destructor after it)
    int64_t t_start_ns_ = 0;
    std::thread thread_;
};

}  // namespace duet::runtime
