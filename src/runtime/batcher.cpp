#include "runtime/batcher.h"

#include <algorithm>
#include <chrono>
#include <future>

#include "core/error.h"
#include "core/log.h"
#include "core/timer.h"
#include "model/tokenizer/tokenizer.h"
#include "runtime/prefix_cache.h"
#include "runtime/warmup.h"

namespace duet::runtime {

const char* submit_status_name(SubmitStatus s) {
    switch (s) {
        case SubmitStatus::ACCEPTED: return "accepted";
        case SubmitStatus::QUEUE_FULL: return "queue full";
        case SubmitStatus::PROMPT_TOO_LONG: return "prompt too long";
        case SubmitStatus::KV_TOO_SMALL: return "KV cache too small";
        case SubmitStatus::STOPPED: return "stopped";
        case SubmitStatus::GROUP_TOO_LARGE: return "group larger than the running batch";
    }
    return "?";
}

struct Batcher::Slot {
    GenRequest req;
    SequenceKv kv;                     // KV written for run->tokens()[0 .. kv.n_tokens())
    std::unique_ptr<SequenceRun> run;  // tokens, sampler, text, stop rules (runtime/generator.h)
    GenResult result;
    int64_t t_submit_ns = 0;
    bool admitted_once = false;
    bool done = false;
    std::vector<std::unique_ptr<Slot>> followers;  // submit_group: fork this slot's prompt once it is computed

    bool cancelled() const { return req.cancelled && req.cancelled->load(); }
};

namespace {

const BatcherOptions& checked(const BatcherOptions& o) {
    if (o.n_parallel < 1) fail("--parallel {} is out of range (allowed: 1 or more)", o.n_parallel);
    if (o.max_queue < 0) fail("queue size {} is out of range (allowed: 0 or more)", o.max_queue);
    if (o.step_token_budget < 1) fail("step token budget {} must be positive", o.step_token_budget);
    return o;
}

// Fewest prompt tokens worth taking from a running request's KV (and, while it is still
// prefilling them, waiting a step for): below it the copied partial KV block costs about what the
// tokens would. Assumption, not measured.
constexpr int64_t kMinRunningShare = 4;

// Length of the common prefix of a and b, at most `limit`.
int64_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b, int64_t limit) {
    const int64_t m = std::min<int64_t>({limit, int64_t(a.size()), int64_t(b.size())});
    int64_t n = 0;
    while (n < m && a[size_t(n)] == b[size_t(n)]) ++n;
    return n;
}

EngineOptions for_batch(EngineOptions eo, const BatcherOptions& o) {
    eo.n_seq_max = std::max(eo.n_seq_max, checked(o).n_parallel);
    return eo;
}

}  // namespace

Batcher::Batcher(std::shared_ptr<const Model> model, EngineOptions engine_opts, BatcherOptions opts)
    : Batcher(std::make_unique<Engine>(model, for_batch(engine_opts, opts)), opts) {}

Batcher::Batcher(std::unique_ptr<Engine> engine, BatcherOptions opts)
    : model_(engine->model_ptr()), opts_(checked(opts)), engine_(std::move(engine)) {
    n_ctx_ = engine_->n_ctx();
    if (opts_.prefix_cache) prefix_ = std::make_unique<PrefixCache>(engine_->kv_cache());
    {
        std::lock_guard<std::mutex> lock(mu_);
        stats_.kv_blocks_total = engine_->kv_cache().n_blocks();
        stats_.kv_blocks_free = engine_->kv_cache().n_free();
    }
    // The warm-up forwards run on the engine thread itself: the kernels keep per-thread scratch
    // (packed activations, GEMM tiles) that a warm-up on the constructing thread would prepare
    // for the wrong thread, leaving the first request to allocate and fault it in.
    std::promise<void> warmed;
    std::future<void> warm_done = warmed.get_future();
    thread_ = std::thread([this, warmed = std::move(warmed)]() mutable {
        try {
            WarmupStats warm;
            // a step feeds at most max(prompt budget, one decode token per slot) tokens
            warm_forwards(*engine_, opts_.warmup_rounds, warm, std::max(opts_.step_token_budget, opts_.n_parallel));
            {
                std::lock_guard<std::mutex> lock(mu_);
                stats_.scratch_bytes = engine_->scratch_bytes();
            }
            warmed.set_value();
        } catch (...) {
            warmed.set_exception(std::current_exception());
            return;
        }
        loop();
    });
    try {
        warm_done.get();
    } catch (...) {
        thread_.join();
        prefix_.reset();
        throw;
    }
}

Batcher::~Batcher() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    for (auto& s : running_) finish(*s, StopReason::CANCELLED);
    for (auto& s : queue_) finish(*s, StopReason::CANCELLED);
    running_.clear();
    queue_.clear();
    prefix_.reset();  // releases its blocks before the engine's cache goes away
}

std::unique_ptr<Batcher::Slot> Batcher::make_slot(GenRequest req) {
    auto slot = std::make_unique<Slot>();
    slot->req = std::move(req);
    const GenRequest& r = slot->req;
    // Text is always decoded (stop strings are found in it), sent on when the client wants it.
    auto on_text = [on = r.on_text](std::string_view t) {
        if (on) on(std::string(t));
    };
    slot->run = std::make_unique<SequenceRun>(*model_, r.sampling, r.prompt,
                                              RunLimits{r.max_tokens, r.ignore_eos, r.stop}, slot->kv, on_text);
    if (r.on_token) slot->run->set_on_sample(r.on_token);
    slot->result.prompt_tokens = int64_t(r.prompt.size());
    slot->t_submit_ns = now_ns();
    return slot;
}

SubmitStatus Batcher::submit(GenRequest req) {
    std::vector<GenRequest> one;
    one.push_back(std::move(req));
    return submit_group(std::move(one));
}

SubmitStatus Batcher::submit_group(std::vector<GenRequest> reqs) {
    DUET_CHECK(!reqs.empty(), "empty request group");
    const int64_t n_prompt = int64_t(reqs[0].prompt.size());
    DUET_CHECK(n_prompt > 0, "empty prompt");
    for (const auto& r : reqs) DUET_CHECK(r.prompt == reqs[0].prompt, "a request group must share one prompt");
    if (int64_t(reqs.size()) > (opts_.forks ? opts_.n_parallel : 1)) return SubmitStatus::GROUP_TOO_LARGE;
    if (n_prompt + 1 > n_ctx_) return SubmitStatus::PROMPT_TOO_LONG;
    const auto& kv = engine_->kv_cache();
    if ((n_prompt + 1 + kv.block_tokens() - 1) / kv.block_tokens() > kv.n_blocks()) return SubmitStatus::KV_TOO_SMALL;

    auto slot = make_slot(std::move(reqs[0]));
    for (size_t i = 1; i < reqs.size(); ++i) slot->followers.push_back(make_slot(std::move(reqs[i])));
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_) return SubmitStatus::STOPPED;
        if (int64_t(queue_.size()) >= opts_.max_queue) return SubmitStatus::QUEUE_FULL;
        queue_.push_back(std::move(slot));
        stats_.queued = int64_t(queue_.size());
    }
    cv_.notify_all();
    return SubmitStatus::ACCEPTED;
}

BatcherStats Batcher::stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
}

void Batcher::wait_idle() {
    std::unique_lock<std::mutex> lock(mu_);
    idle_cv_.wait(lock, [&] { return stop_ || (queue_.empty() && n_running_.load() == 0); });
}

void Batcher::loop() {
    for (;;) {
        std::vector<std::unique_ptr<Slot>> dropped;  // cancelled while queued: finished outside the lock
        {
            std::unique_lock<std::mutex> lock(mu_);
            cv_.wait(lock, [&] { return stop_ || !queue_.empty() || !running_.empty(); });
            if (running_.empty() && opts_.admit_window_us > 0) {  // idle: let the rest of a burst arrive
                const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(opts_.admit_window_us);
                cv_.wait_until(lock, until, [&] { return stop_ || int64_t(queue_.size()) >= opts_.n_parallel; });
            }
            if (stop_) return;
            // Admission: between steps, in queue order, while slots and blocks last; a request
            // waiting for a running one's prompt prefix (waits_for_running) keeps its place.
            const bool may_admit = opts_.continuous || running_.empty();
            for (auto it = queue_.begin(); may_admit && it != queue_.end() &&
                                           int64_t(running_.size() + 1 + (*it)->followers.size()) <= opts_.n_parallel;) {
                if ((*it)->cancelled()) {
                    dropped.push_back(std::move(*it));
                    it = queue_.erase(it);
                    continue;
                }
                const RunningPrefix shared = running_prefix(**it);
                if (waits_for_running(**it, shared)) {
                    ++it;
                    continue;
                }
                if (!admit(*it, shared)) break;
                running_.push_back(std::move(*it));
                it = queue_.erase(it);
            }
            n_running_.store(int64_t(running_.size()));
            stats_.queued = int64_t(queue_.size());
            stats_.running = int64_t(running_.size());
        }
        for (auto& s : dropped) finish(*s, StopReason::CANCELLED);
        try {
            if (++steps_started_ == opts_.fault_at_step)
                throw std::runtime_error(fmt::format("injected fault at engine step {}", steps_started_));
            step();
        } catch (const std::exception& e) {
            fail_running(e.what());
        }
        std::lock_guard<std::mutex> lock(mu_);
        publish_locked();
        if (queue_.empty() && running_.empty()) idle_cv_.notify_all();
    }
}

// Engine thread, mu_ held. Refreshes what stats() reports from the engine thread's own state.
void Batcher::publish_locked() {
    int64_t live = 0;
    for (const auto& r : running_) live += r->done ? 0 : 1;
    n_running_.store(live);
    stats_.running = live;
    stats_.kv_blocks_used = engine_->kv_cache().n_used();
    stats_.kv_blocks_free = engine_->kv_cache().n_free();
    stats_.scratch_bytes = engine_->scratch_bytes();
    if (prefix_) {
        stats_.prefix_cached_blocks = prefix_->n_blocks();
        stats_.prefix_lookup_tokens = prefix_->lookup_tokens();
        stats_.prefix_hit_tokens = prefix_->hit_tokens();
    }
}

// Engine thread. The running request whose tokens share the longest prefix with s's (at most
// all but s's last token), and that length; {nullptr, 0} below kMinRunningShare tokens, without
// the prefix cache, or where sequences may not start from another's KV (opts_.forks off: TP).
Batcher::RunningPrefix Batcher::running_prefix(const Slot& s) const {
    if (!prefix_ || !opts_.forks) return {nullptr, 0};
    const std::vector<int32_t>& tokens = s.run->tokens();
    const Slot* best = nullptr;
    int64_t best_n = 0;
    for (const auto& r : running_) {
        if (r->done || r.get() == &s) continue;
        const int64_t n = common_prefix(r->run->tokens(), tokens, int64_t(tokens.size()) - 1);
        if (n > best_n) best = r.get(), best_n = n;
    }
    if (best_n < kMinRunningShare) return {nullptr, 0};
    return {best, best_n};
}

// Engine thread. True while the running request of `shared` (running_prefix(s)) is still
// prefilling tokens s's prompt starts with: s waits for them rather than computing them again
// beside it (continuous batching only: a static batch would hold s until it ends).
bool Batcher::waits_for_running(const Slot& s, const RunningPrefix& shared) const {
    if (!opts_.continuous || s.kv.n_tokens() > 0) return false;
    return shared.slot && shared.slot->kv.n_tokens() < shared.n_tokens;
}

// Engine thread, mu_ held. Attaches cached prefix blocks — or, when longer, the prompt prefix the
// running request of `shared` (running_prefix) holds: its blocks shared, the partial last one
// copied on the first write — and reserves KV for the rest of the prompt; false (nothing held)
// when the pool cannot supply them now.
bool Batcher::admit(std::unique_ptr<Slot>& slot, const RunningPrefix& shared) {
    Slot& s = *slot;
    KvCache& cache = engine_->kv_cache();
    const std::vector<int32_t>& tokens = s.run->tokens();
    if (prefix_ && s.kv.n_tokens() == 0) {
        int64_t reused = prefix_->attach(tokens, int64_t(tokens.size()) - 1, s.kv);
        const int64_t take = shared.slot ? std::min(shared.n_tokens, shared.slot->kv.n_tokens()) : 0;
        if (take >= kMinRunningShare && take > reused) {
            s.kv.release(cache);
            s.kv.share_prefix(cache, shared.slot->kv, take);
            reused = take;
        }
        if (!s.admitted_once) s.result.cached_tokens = std::min<int64_t>(reused, s.result.prompt_tokens);
    }
    const int64_t need = s.run->unfed() + 1;
    if (!s.kv.reserve(cache, need)) {
        const int64_t blocks = (need + cache.block_tokens() - 1) / cache.block_tokens() + 1;
        if (!prefix_ || prefix_->evict(blocks) == 0 || !s.kv.reserve(cache, need)) {
            s.kv.release(cache);
            return false;
        }
    }
    if (!s.admitted_once) s.result.queue_ms = double(now_ns() - s.t_submit_ns) / 1e6;
    s.admitted_once = true;
    return true;
}

void Batcher::step() {
    KvCache& cache = engine_->kv_cache();
    // Drop cancelled requests first: their blocks go back to the pool before this step.
    for (auto& s : running_)
        if (s->cancelled()) finish(*s, StopReason::CANCELLED);
    for (auto& s : running_)
        if (!s->done && s->kv.n_tokens() + s->run->unfed() > n_ctx_) finish(*s, StopReason::CONTEXT);
    std::erase_if(running_, [](const auto& s) { return s->done; });
    if (running_.empty()) return;

    for (;;) {
        // The step loop `duet run` uses too (runtime/generator.h): same feeding, same stops.
        std::vector<SequenceRun*> runs;
        for (auto& s : running_) runs.push_back(s->run.get());
        std::vector<std::unique_ptr<Slot>> forked;
        auto fork = [&](SequenceRun& run, const float* logits) {
            for (auto& s : running_)
                if (s->run.get() == &run && !s->followers.empty()) fork_followers(*s, logits, forked);
        };
        const ForwardStatus st = step_runs(*engine_, runs, opts_.step_token_budget, fork);
        for (auto& f : forked) running_.push_back(std::move(f));
        if (st == ForwardStatus::OK) {
            for (auto& s : running_)
                if (s->run->stopped()) finish(*s, s->run->stop_reason());
            std::lock_guard<std::mutex> lock(mu_);
            stats_.steps++;
            break;
        }
        if (st == ForwardStatus::CTX_EXCEEDED) {  // checked above; a bug if it happens
            DUET_CHECK(false, "forward reported CTX_EXCEEDED after the batcher's context check");
        }
        // KV_FULL: free cached prefixes, then preempt the newest request (recompute later).
        if (prefix_ && prefix_->evict(int64_t(running_.size())) > 0) continue;
        if (running_.size() == 1) {
            finish(*running_[0], StopReason::CONTEXT);  // the pool cannot hold even this one sequence
            break;
        }
        std::unique_ptr<Slot> victim = std::move(running_.back());
        running_.pop_back();
        victim->kv.release(cache);
        DUET_LOG_INFO("batcher: KV pool full, preempting a request ({} tokens) for recomputation",
                      victim->run->tokens().size());
        std::lock_guard<std::mutex> lock(mu_);
        stats_.preemptions++;
        queue_.push_front(std::move(victim));
    }
    std::erase_if(running_, [](const auto& s) { return s->done; });
}

// The leader's prompt is in its KV: each follower shares those blocks (refcount + 1; the
// partly filled last block is copied when the follower first writes into it) and draws its
// first token from the same logits with its own sampler.
void Batcher::fork_followers(Slot& leader, const float* logits, std::vector<std::unique_ptr<Slot>>& out) {
    KvCache& cache = engine_->kv_cache();
    for (auto& f : leader.followers) {
        f->kv.share_prefix(cache, leader.kv, leader.kv.n_tokens());
        f->result.forked_tokens = leader.kv.n_tokens();
        f->result.cached_tokens = leader.result.cached_tokens;
        f->result.queue_ms = leader.result.queue_ms;
        f->admitted_once = true;
        f->run->advance(logits, n_ctx_);
        out.push_back(std::move(f));
    }
    leader.followers.clear();
}

// Engine thread. The step threw part-way: the running requests' KV may be half written, so
// each finishes with "error" and its blocks are freed without entering the prefix cache.
void Batcher::fail_running(const std::string& error) {
    DUET_LOG_ERROR("batcher: an engine step failed ({}); failing its {} request(s) and continuing", error,
                   running_.size());
    {
        std::lock_guard<std::mutex> lock(mu_);
        stats_.step_failures++;
    }
    for (auto& s : running_) finish(*s, StopReason::ERROR, error);
    running_.clear();
}

void Batcher::finish(Slot& s, StopReason reason, const std::string& error) {
    if (s.done) return;
    s.done = true;
    for (auto& f : s.followers) finish(*f, reason, error);  // never forked: they end with their leader
    s.followers.clear();
    s.run->stop(reason);  // sends held-back text unless cancelled or failed; an earlier reason wins
    const StopReason why = s.run->stop_reason();
    KvCache& cache = engine_->kv_cache();
    // A failed step may have left this sequence's KV half written: not for the prefix cache.
    if (prefix_ && s.kv.n_tokens() > 0 && why != StopReason::ERROR) prefix_->insert(s.run->tokens(), s.kv);
    s.kv.release(cache);
    s.result.finish_reason = finish_reason(why);
    s.result.error = error;
    s.result.completion_tokens = s.run->n_sampled();
    s.result.tokens = s.run->generated();
    if (s.run->first_token_ns()) s.result.ttft_ms = double(s.run->first_token_ns() - s.t_submit_ns) / 1e6;
    s.result.total_ms = double(now_ns() - s.t_submit_ns) / 1e6;
    {
        std::lock_guard<std::mutex> lock(mu_);
        stats_.completed++;
        stats_.prompt_tokens += uint64_t(s.result.prompt_tokens);
        stats_.generated_tokens += uint64_t(s.result.completion_tokens);
        // Before the client hears "done": what it then reads from stats() (/metrics) already
        // shows this request gone and its blocks back in the pool.
        publish_locked();
    }
    if (s.req.on_done) s.req.on_done(s.result);
}

}  // namespace duet::runtime
