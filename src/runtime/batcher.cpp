#include "runtime/batcher.h"

#include <algorithm>

#include "core/error.h"
#include "core/log.h"
#include "core/timer.h"
#include "model/tokenizer/tokenizer.h"
#include "runtime/prefix_cache.h"

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
    std::vector<int32_t> tokens;  // prompt followed by every generated token
    SequenceKv kv;                // KV written for tokens[0 .. kv.n_tokens())
    std::unique_ptr<model::Sampler> sampler;
    std::unique_ptr<model::StreamDecoder> decoder;
    std::string text;  // generated text so far
    size_t sent = 0;   // bytes of `text` handed to on_text
    GenResult result;
    int64_t t_submit_ns = 0;
    bool admitted_once = false;
    bool done = false;
    bool stopped = false;  // a stop sequence was found: nothing more is sent
    int64_t feed_now = 0;  // tokens fed in the current step
    std::vector<std::unique_ptr<Slot>> followers;  // submit_group: fork this slot's prompt once it is computed

    bool cancelled() const { return req.cancelled && req.cancelled->load(); }
    int64_t unfed() const { return int64_t(tokens.size()) - kv.n_tokens(); }
};

Batcher::Batcher(std::shared_ptr<const Model> model, EngineOptions engine_opts, BatcherOptions opts)
    : model_(std::move(model)), opts_(opts) {
    if (opts_.n_parallel < 1) fail("--parallel {} is out of range (allowed: 1 or more)", opts_.n_parallel);
    if (opts_.max_queue < 0) fail("queue size {} is out of range (allowed: 0 or more)", opts_.max_queue);
    if (opts_.step_token_budget < 1) fail("step token budget {} must be positive", opts_.step_token_budget);
    engine_opts.n_seq_max = std::max(engine_opts.n_seq_max, opts_.n_parallel);
    engine_ = std::make_unique<Engine>(model_, engine_opts);
    n_ctx_ = engine_->n_ctx();
    if (opts_.prefix_cache) prefix_ = std::make_unique<PrefixCache>(engine_->kv_cache());
    {
        std::lock_guard<std::mutex> lock(mu_);
        stats_.kv_blocks_total = engine_->kv_cache().n_blocks();
        stats_.kv_blocks_free = engine_->kv_cache().n_free();
    }
    thread_ = std::thread([this] { loop(); });
}

Batcher::~Batcher() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    for (auto& s : running_) finish(*s, "cancelled");
    for (auto& s : queue_) finish(*s, "cancelled");
    running_.clear();
    queue_.clear();
    prefix_.reset();  // releases its blocks before the engine's cache goes away
}

std::unique_ptr<Batcher::Slot> Batcher::make_slot(GenRequest req) {
    auto slot = std::make_unique<Slot>();
    slot->sampler = std::make_unique<model::Sampler>(req.sampling, model_->hparams().n_vocab);
    slot->decoder = std::make_unique<model::StreamDecoder>(model_->tokenizer());
    for (int32_t t : req.prompt) slot->sampler->accept(t);
    slot->tokens = req.prompt;
    slot->result.prompt_tokens = int64_t(req.prompt.size());
    slot->t_submit_ns = now_ns();
    slot->req = std::move(req);
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
    if (int64_t(reqs.size()) > opts_.n_parallel) return SubmitStatus::GROUP_TOO_LARGE;
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
        {
            std::unique_lock<std::mutex> lock(mu_);
            cv_.wait(lock, [&] { return stop_ || !queue_.empty() || !running_.empty(); });
            if (stop_) return;
            // Admission: between steps, from the head of the queue, while slots and blocks last.
            const bool may_admit = opts_.continuous || running_.empty();
            while (may_admit && !queue_.empty() &&
                   int64_t(running_.size() + 1 + queue_.front()->followers.size()) <= opts_.n_parallel) {
                if (queue_.front()->cancelled()) {
                    auto s = std::move(queue_.front());
                    queue_.pop_front();
                    lock.unlock();
                    finish(*s, "cancelled");
                    lock.lock();
                    continue;
                }
                if (!admit(queue_.front())) break;
                running_.push_back(std::move(queue_.front()));
                queue_.pop_front();
            }
            n_running_.store(int64_t(running_.size()));
            stats_.queued = int64_t(queue_.size());
            stats_.running = int64_t(running_.size());
        }
        step();
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
    if (prefix_) {
        stats_.prefix_cached_blocks = prefix_->n_blocks();
        stats_.prefix_lookup_tokens = prefix_->lookup_tokens();
        stats_.prefix_hit_tokens = prefix_->hit_tokens();
    }
}

// Engine thread, mu_ held. Attaches cached prefix blocks and reserves KV for the rest of the
// prompt; false (nothing held) when the pool cannot supply them now.
bool Batcher::admit(std::unique_ptr<Slot>& slot) {
    Slot& s = *slot;
    KvCache& cache = engine_->kv_cache();
    if (prefix_ && s.kv.n_tokens() == 0) {
        const int64_t reused = prefix_->attach(s.tokens, int64_t(s.tokens.size()) - 1, s.kv);
        if (!s.admitted_once) s.result.cached_tokens = std::min<int64_t>(reused, s.result.prompt_tokens);
    }
    const int64_t need = s.unfed() + 1;
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
        if (s->cancelled()) finish(*s, "cancelled");
    for (auto& s : running_)
        if (!s->done && s->kv.n_tokens() + s->unfed() > n_ctx_) finish(*s, "length");
    std::erase_if(running_, [](const auto& s) { return s->done; });
    if (running_.empty()) return;

    for (;;) {
        // Decode tokens first (one each), then prompt chunks within the step's token budget.
        int64_t budget = opts_.step_token_budget;
        for (auto& s : running_) s->feed_now = 0;
        for (auto& s : running_)
            if (s->unfed() == 1) {
                s->feed_now = 1;
                --budget;
            }
        for (auto& s : running_)
            if (s->unfed() > 1 && budget > 0) {
                s->feed_now = std::min(s->unfed(), budget);
                budget -= s->feed_now;
            }
        std::vector<SeqInput> batch;
        std::vector<Slot*> fed;
        for (auto& s : running_) {
            if (s->feed_now == 0) continue;
            const size_t begin = size_t(s->kv.n_tokens());
            batch.push_back({std::span<const int32_t>(s->tokens).subspan(begin, size_t(s->feed_now)), &s->kv, false});
            fed.push_back(s.get());
        }
        ForwardOutput out;
        const ForwardStatus st = engine_->forward(batch, out);
        if (st == ForwardStatus::OK) {
            std::vector<std::unique_ptr<Slot>> forked;
            for (size_t i = 0; i < fed.size(); ++i) {
                Slot& s = *fed[i];
                if (s.unfed() > 0) continue;  // prompt chunk not finished: no token yet
                if (!s.followers.empty()) fork_followers(s, out.last(i), forked);
                after_sample(s, s.sampler->sample(out.last(i)), out.last(i));
            }
            for (auto& f : forked) running_.push_back(std::move(f));
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
            finish(*running_[0], "length");  // the pool cannot hold even this one sequence
            break;
        }
        std::unique_ptr<Slot> victim = std::move(running_.back());
        running_.pop_back();
        victim->kv.release(cache);
        DUET_LOG_INFO("batcher: KV pool full, preempting a request ({} tokens) for recomputation",
                      victim->tokens.size());
        std::lock_guard<std::mutex> lock(mu_);
        stats_.preemptions++;
        queue_.push_front(std::move(victim));
    }
    std::erase_if(running_, [](const auto& s) { return s->done; });
}

// Records the token sampled for s from `logits`; finishes s at end of generation or length.
void Batcher::after_sample(Slot& s, int32_t tok, const float* logits) {
    s.sampler->accept(tok);
    if (s.req.on_token) s.req.on_token(tok, logits);
    s.tokens.push_back(tok);
    s.result.tokens.push_back(tok);
    s.result.completion_tokens++;
    if (s.result.completion_tokens == 1) s.result.ttft_ms = double(now_ns() - s.t_submit_ns) / 1e6;
    if (!s.req.ignore_eos && model_->tokenizer().is_eog(tok)) {
        s.tokens.pop_back();  // never fed back
        finish(s, "stop");
        return;
    }
    s.text += s.decoder->feed(tok);
    emit_text(s, false);
    if (s.done) return;
    if ((s.req.max_tokens > 0 && s.result.completion_tokens >= s.req.max_tokens) || s.kv.n_tokens() + 1 > n_ctx_)
        finish(s, "length");
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
        after_sample(*f, f->sampler->sample(logits), logits);
        out.push_back(std::move(f));
    }
    leader.followers.clear();
}

void Batcher::emit_text(Slot& s, bool final) {
    if (s.stopped) return;
    // Earliest complete stop sequence in the text not yet sent (it may start in held-back text).
    size_t stop_at = std::string::npos;
    for (const auto& st : s.req.stop) {
        const size_t from = s.sent >= st.size() ? s.sent - st.size() + 1 : 0;
        const size_t p = s.text.find(st, from);
        if (p != std::string::npos) stop_at = std::min(stop_at, p);
    }
    size_t upto = s.text.size();
    if (stop_at != std::string::npos) {
        upto = std::max(stop_at, s.sent);
    } else if (!final) {
        // Hold back a tail that could still become a stop sequence.
        size_t hold = 0;
        for (const auto& st : s.req.stop)
            for (size_t n = std::min(st.size() - 1, s.text.size() - s.sent); n > hold; --n)
                if (s.text.compare(s.text.size() - n, n, st, 0, n) == 0) {
                    hold = n;
                    break;
                }
        upto = s.text.size() - hold;
    }
    if (upto > s.sent && s.req.on_text) s.req.on_text(s.text.substr(s.sent, upto - s.sent));
    s.sent = std::max(s.sent, upto);
    if (stop_at != std::string::npos) {
        s.stopped = true;
        finish(s, "stop");
    }
}

void Batcher::finish(Slot& s, const char* reason, const std::string& error) {
    if (s.done) return;
    s.done = true;
    for (auto& f : s.followers) finish(*f, reason, error);  // never forked: they end with their leader
    s.followers.clear();
    if (std::string_view(reason) != "cancelled") {
        // Send what is left: bytes the decoder held and a tail held back as a possible stop.
        s.text += s.decoder->flush();
        emit_text(s, true);
    }
    KvCache& cache = engine_->kv_cache();
    if (prefix_ && s.kv.n_tokens() > 0) prefix_->insert(s.tokens, s.kv);
    s.kv.release(cache);
    s.result.finish_reason = reason;
    s.result.error = error;
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
