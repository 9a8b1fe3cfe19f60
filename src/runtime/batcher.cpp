#include "runtime/batcher.h"

#include <algorithm>
#include <chrono>
#include <future>

#include "core/error.h"
#include "core/log.h"
#include "core/timer.h"
#include "model/tokenizer/tokenizer.h"
#include "runtime/prefix_cache.h"
#include "sched/scheduler.h"
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

namespace {

// Length of the common prefix of a and b, at most `limit`.
int64_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b, int64_t limit) {
    const int64_t m = std::min<int64_t>({limit, int64_t(a.size()), int64_t(b.size())});
    int64_t n = 0;
    while (n < m && a[size_t(n)] == b[size_t(n)]) ++n;
    return n;
}

}  // namespace

struct Batcher::Slot {
    sched::SeqId id = 0;
    GenRequest req;
    SequenceKv kv;                     // KV written for run->tokens()[0 .. kv.n_tokens())
    std::unique_ptr<SequenceRun> run;  // tokens, sampler, text, stop rules (runtime/generator.h)
    GenResult result;
    int64_t t_submit_ns = 0;
    bool done = false;
    std::string error;  // why its own sampling failed (it then finishes with "error")
    std::vector<std::unique_ptr<Slot>> followers;  // submit_group: fork this slot's prompt once it is computed

    bool cancelled() const { return req.cancelled && req.cancelled->load(); }
};

// The engine's paged KV cache and prefix cache as the scheduler's pool (sched/kv_pool.h): each
// SeqId is a Slot's SequenceKv. Engine thread only.
class Batcher::Pool final : public sched::KvPool {
public:
    explicit Pool(Batcher& b) : b_(b), cache_(b.engine_->kv_cache()) {}
    int64_t block_tokens() const override { return cache_.block_tokens(); }
    int64_t n_blocks() const override { return cache_.n_blocks(); }
    int64_t n_free() const override { return cache_.n_free(); }
    int64_t attach_cached(sched::SeqId id, int64_t max_tokens) override {
        Slot& s = slot(id);
        return b_.prefix_ ? b_.prefix_->attach(s.run->tokens(), max_tokens, s.kv) : 0;
    }
    int64_t common_prefix(sched::SeqId a, sched::SeqId b, int64_t limit) const override {
        return duet::runtime::common_prefix(slot(a).run->tokens(), slot(b).run->tokens(), limit);
    }
    void share_prefix(sched::SeqId to, sched::SeqId from, int64_t n) override {
        slot(to).kv.share_prefix(cache_, slot(from).kv, n);
    }
    bool reserve(sched::SeqId id, int64_t n_new) override { return slot(id).kv.reserve(cache_, n_new); }
    void trim(sched::SeqId id) override {
        SequenceKv& kv = slot(id).kv;
        kv.truncate(cache_, kv.n_tokens());
    }
    void commit(sched::SeqId, int64_t) override {}  // Engine::forward committed the K/V it wrote
    void release(sched::SeqId id, bool remember) override {
        Slot& s = slot(id);
        if (remember && b_.prefix_ && s.kv.n_tokens() > 0) b_.prefix_->insert(s.run->tokens(), s.kv);
        s.kv.release(cache_);
    }
    int64_t evict_cached(int64_t n) override { return b_.prefix_ ? b_.prefix_->evict(n) : 0; }

private:
    Slot& slot(sched::SeqId id) const {
        auto it = b_.slots_.find(id);
        DUET_CHECK(it != b_.slots_.end(), "the scheduler named unknown sequence {}", id);
        return *it->second;
    }
    Batcher& b_;
    KvCache& cache_;
};

namespace {

const BatcherOptions& checked(const BatcherOptions& o) {
    if (o.n_parallel < 1) fail("--parallel {} is out of range (allowed: 1 or more)", o.n_parallel);
    if (o.max_queue < 0) fail("queue size {} is out of range (allowed: 0 or more)", o.max_queue);
    if (o.step_token_budget < 1) fail("step token budget {} must be positive", o.step_token_budget);
    return o;
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
    t_start_ns_ = now_ns();
    if (!opts_.request_log.empty()) {
        request_log_ = std::make_unique<std::ofstream>(opts_.request_log, std::ios::app);
        if (!*request_log_) fail("--request-log {}: cannot open the file for writing", opts_.request_log);
    }
    if (opts_.prefix_cache) prefix_ = std::make_unique<PrefixCache>(engine_->kv_cache());
    pool_ = std::make_unique<Pool>(*this);
    sched::SchedulerOptions so;
    so.n_parallel = opts_.n_parallel;
    so.continuous = opts_.continuous;
    so.prefix_sharing = opts_.prefix_cache;
    so.running_share = opts_.forks;
    so.step_token_budget = opts_.step_token_budget;
    so.n_ctx = n_ctx_;
    sched_ = std::make_unique<sched::Scheduler>(so);
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
        pool_.reset();
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
    for (sched::SeqId id : sched_->running_ids()) {
        sched_->cancel(id, *pool_);  // KV back (into the prefix cache, as any finished request's)
        finish_id(id, StopReason::CANCELLED);
    }
    for (sched::SeqId id : sched_->waiting_ids()) finish_id(id, StopReason::CANCELLED);
    for (auto& s : incoming_) finish(*s, StopReason::CANCELLED);
    incoming_.clear();
    slots_.clear();
    pool_.reset();
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
        if (int64_t(incoming_.size()) + n_waiting_ >= opts_.max_queue) return SubmitStatus::QUEUE_FULL;
        slot->id = next_id_++;
        slot->result.seq_id = slot->id;
        for (auto& f : slot->followers) f->result.seq_id = f->id = next_id_++;
        incoming_.push_back(std::move(slot));
        stats_.queued = int64_t(incoming_.size()) + n_waiting_;
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
    idle_cv_.wait(lock, [&] { return stop_ || (incoming_.empty() && n_waiting_ == 0 && n_running_.load() == 0); });
}

// Engine thread, mu_ held: waits for work (and the admission window), then hands what was
// submitted to the scheduler. False when the batcher stops.
bool Batcher::take_arrivals(std::unique_lock<std::mutex>& lock, StepRecord& rec) {
    cv_.wait(lock, [&] { return stop_ || !incoming_.empty() || sched_->n_waiting() > 0 || sched_->n_running() > 0; });
    if (sched_->n_running() == 0 && opts_.admit_window_us > 0) {  // idle: let the rest of a burst arrive
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(opts_.admit_window_us);
        cv_.wait_until(lock, until, [&] {
            return stop_ || int64_t(incoming_.size()) + sched_->n_waiting() >= opts_.n_parallel;
        });
    }
    if (stop_) return false;
    rec.t_ns = now_ns();
    for (auto& s : incoming_) {
        std::vector<sched::SeqId> followers;
        for (const auto& f : s->followers) followers.push_back(f->id);
        rec.arrived.push_back(s->id);
        for (sched::SeqId f : followers) rec.arrived.push_back(f);
        sched_->add(s->id, int64_t(s->req.prompt.size()), std::move(followers));
        const sched::SeqId id = s->id;
        slots_[id] = std::move(s);
    }
    incoming_.clear();
    // Still under mu_: the requests just taken count as waiting at once, or wait_idle() could see
    // nothing queued, waiting or running between here and the step's bookkeeping and return early.
    n_waiting_ = sched_->n_waiting();
    return true;
}

// Engine thread. Requests whose client went away leave the scheduler (their blocks go back)
// before it plans the next step.
void Batcher::drop_cancelled() {
    std::vector<sched::SeqId> gone;
    for (const auto& [id, s] : slots_)
        if (!s->done && s->cancelled()) gone.push_back(id);
    std::sort(gone.begin(), gone.end());
    for (sched::SeqId id : gone) {
        sched_->cancel(id, *pool_);
        finish_id(id, StopReason::CANCELLED);
    }
}

void Batcher::loop() {
    for (;;) {
        StepRecord rec;
        {
            std::unique_lock<std::mutex> lock(mu_);
            if (!take_arrivals(lock, rec)) return;
        }
        drop_cancelled();
        rec.step = sched_->plan(*pool_);
        apply(rec.step);
        {
            std::lock_guard<std::mutex> lock(mu_);
            n_waiting_ = sched_->n_waiting();
            n_running_.store(sched_->n_running());
            stats_.queued = int64_t(incoming_.size()) + n_waiting_;
            stats_.running = sched_->n_running();
        }
        if (opts_.on_step) opts_.on_step(rec);
        try {
            if (++steps_started_ == opts_.fault_at_step)
                throw std::runtime_error(fmt::format("injected fault at engine step {}", steps_started_));
            execute(rec.step);
        } catch (const std::exception& e) {
            fail_running(e.what());
        }
        std::lock_guard<std::mutex> lock(mu_);
        n_waiting_ = sched_->n_waiting();
        publish_locked();
        if (incoming_.empty() && n_waiting_ == 0 && sched_->n_running() == 0) idle_cv_.notify_all();
    }
}

// Engine thread. What the scheduler decided besides the forward: requests it ended, first
// admissions (queueing time, reused prompt tokens), preemptions.
void Batcher::apply(const sched::Step& st) {
    for (sched::SeqId id : st.ended) finish_id(id, StopReason::CONTEXT);
    for (const sched::Admission& a : st.admitted) {
        if (!a.first) continue;
        Slot& s = *slots_.at(a.id);
        s.result.cached_tokens = a.cached_tokens;
        s.result.queue_ms = double(now_ns() - s.t_submit_ns) / 1e6;
    }
    if (st.preempted.empty()) return;
    for (sched::SeqId id : st.preempted)
        DUET_LOG_INFO("batcher: KV pool full, preempting a request ({} tokens) for recomputation",
                      slots_.at(id)->run->tokens().size());
    std::lock_guard<std::mutex> lock(mu_);
    stats_.preemptions += st.preempted.size();
}

// Engine thread. Runs the step's chunks in one forward (the scheduler reserved their KV), forks
// groups whose prompt is done, and finishes the requests that stopped.
void Batcher::execute(const sched::Step& st) {
    if (st.chunks.empty()) return;
    std::vector<SequenceRun*> runs;
    std::vector<int64_t> feeds;
    for (const sched::Chunk& c : st.chunks) {
        runs.push_back(slots_.at(c.id)->run.get());
        feeds.push_back(c.n_tokens);
    }
    auto slot_of = [&](const SequenceRun& run) -> Slot& {
        const auto it = std::find_if(st.chunks.begin(), st.chunks.end(),
                                     [&](const sched::Chunk& c) { return slots_.at(c.id)->run.get() == &run; });
        DUET_CHECK(it != st.chunks.end(), "a run outside the step sampled");
        return *slots_.at(it->id);
    };
    std::vector<sched::SeqId> forked;
    auto fork = [&](SequenceRun& run, const float* logits) {
        Slot& s = slot_of(run);
        for (const auto& f : s.followers) forked.push_back(f->id);
        fork_followers(s, logits);
    };
    // A request whose own sampling throws (its grammar, its callbacks) fails alone; a follower's
    // first draw in fork_followers likewise.
    auto failed = [&](SequenceRun& run, const std::exception& e) { sampling_failed(slot_of(run), e); };
    const ForwardStatus fs = run_feeds(*engine_, runs, feeds, fork, failed);
    DUET_CHECK(fs == ForwardStatus::OK, "a forward the scheduler reserved KV for returned status {}", int(fs));
    std::vector<sched::SeqId> stopped;
    for (const sched::Chunk& c : st.chunks)
        if (slots_.at(c.id)->run->stopped()) stopped.push_back(c.id);
    for (sched::SeqId id : forked)
        if (slots_.at(id)->run->stopped()) stopped.push_back(id);
    sched_->complete(st, stopped, *pool_);
    {
        std::lock_guard<std::mutex> lock(mu_);
        stats_.steps++;
    }
    for (sched::SeqId id : stopped) {
        const Slot& s = *slots_.at(id);
        finish_id(id, s.run->stop_reason(), std::string(s.error));  // a copy: finish_id frees the slot
    }
}

// Engine thread. One request's sampling threw after a complete forward: it alone finishes with
// "error" (its KV is valid and goes back as any finished request's); the step goes on.
void Batcher::sampling_failed(Slot& s, const std::exception& e) {
    s.run->stop(StopReason::ERROR);
    s.error = e.what();
    DUET_LOG_WARN("batcher: a request's sampling failed ({}); failing that request only", s.error);
}

// Engine thread, during the leader's sampling: each follower draws its first token from the
// same logits with its own sampler; the scheduler then shares the leader's prompt blocks with it
// (refcount + 1; the partly filled last block is copied when the follower first writes into it).
void Batcher::fork_followers(Slot& leader, const float* logits) {
    for (auto& f : leader.followers) {
        f->result.forked_tokens = leader.kv.n_tokens();
        f->result.cached_tokens = leader.result.cached_tokens;
        f->result.queue_ms = leader.result.queue_ms;
        try {
            f->run->advance(logits, n_ctx_);
        } catch (const std::exception& e) {
            sampling_failed(*f, e);
        }
        const sched::SeqId id = f->id;
        slots_[id] = std::move(f);
    }
    leader.followers.clear();
}

// Engine thread. The step threw part-way: the running requests' KV may be half written, so
// each finishes with "error" and its blocks are freed without entering the prefix cache.
void Batcher::fail_running(const std::string& error) {
    const std::vector<sched::SeqId> ids = sched_->fail_running(*pool_);
    DUET_LOG_ERROR("batcher: an engine step failed ({}); failing its {} request(s) and continuing", error, ids.size());
    {
        std::lock_guard<std::mutex> lock(mu_);
        stats_.step_failures++;
    }
    for (sched::SeqId id : ids) finish_id(id, StopReason::ERROR, error);
}

void Batcher::finish_id(sched::SeqId id, StopReason reason, const std::string& error) {
    auto it = slots_.find(id);
    DUET_CHECK(it != slots_.end(), "finishing unknown sequence {}", id);
    std::unique_ptr<Slot> s = std::move(it->second);
    slots_.erase(it);
    finish(*s, reason, error);
}

// The scheduler has released s's KV (into the prefix cache unless the step failed); this ends
// the request for its client.
void Batcher::finish(Slot& s, StopReason reason, const std::string& error) {
    if (s.done) return;
    s.done = true;
    for (auto& f : s.followers) finish(*f, reason, error);  // never forked: they end with their leader
    s.followers.clear();
    s.run->stop(reason);  // sends held-back text unless cancelled or failed; an earlier reason wins
    const StopReason why = s.run->stop_reason();
    s.kv.release(engine_->kv_cache());  // already empty when the scheduler released it
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
    log_request(s);
    if (s.req.on_done) s.req.on_done(s.result);
}

void Batcher::log_request(const Slot& s) {
    if (!request_log_ || s.result.completion_tokens < 1) return;
    *request_log_ << fmt::format(
        "{{\"arrival_s\": {:.6f}, \"prompt_tokens\": {}, \"output_tokens\": {}, \"finish_reason\": \"{}\", "
        "\"queue_ms\": {:.3f}, \"ttft_ms\": {:.3f}, \"e2e_ms\": {:.3f}}}\n",
        double(s.t_submit_ns - t_start_ns_) / 1e9, s.result.prompt_tokens, s.result.completion_tokens,
        s.result.finish_reason, s.result.queue_ms, s.result.ttft_ms, s.result.total_ms);
    request_log_->flush();
}

// Engine thread, mu_ held. Refreshes what stats() reports from the engine thread's own state.
void Batcher::publish_locked() {
    const int64_t live = sched_ ? sched_->n_running() : 0;
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

}  // namespace duet::runtime
