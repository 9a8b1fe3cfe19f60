#include "sched/scheduler.h"

#include <algorithm>

#include "core/error.h"
#include "sched/compose.h"

namespace duet::sched {

int64_t Step::prefill_tokens() const {
    int64_t n = 0;
    for (const Chunk& c : chunks) n += c.n_tokens > 1 ? c.n_tokens : 0;
    return n;
}

int64_t Step::decode_tokens() const {
    int64_t n = 0;
    for (const Chunk& c : chunks) n += c.n_tokens == 1 ? 1 : 0;
    return n;
}

Scheduler::Scheduler(SchedulerOptions opts) : opts_(opts) {
    if (opts_.n_parallel < 1) fail("--parallel {} is out of range (allowed: 1 or more)", opts_.n_parallel);
    if (opts_.step_token_budget < 1) fail("step token budget {} must be positive", opts_.step_token_budget);
    if (opts_.n_ctx < 2) fail("context {} tokens is out of range (allowed: 2 or more)", opts_.n_ctx);
}

void Scheduler::add(SeqId id, int64_t n_prompt, std::vector<SeqId> followers) {
    DUET_CHECK(n_prompt > 0, "empty prompt");
    Seq s;
    s.id = id;
    s.n_prompt = n_prompt;
    s.n_tokens = n_prompt;
    s.followers = std::move(followers);
    waiting_.push_back(std::move(s));
}

std::vector<SeqId> Scheduler::running_ids() const {
    std::vector<SeqId> ids;
    for (const Seq& s : running_) ids.push_back(s.id);
    return ids;
}

std::vector<SeqId> Scheduler::waiting_ids() const {
    std::vector<SeqId> ids;
    for (const Seq& s : waiting_) ids.push_back(s.id);
    return ids;
}

bool Scheduler::cancel(SeqId id, KvPool& pool) {
    for (auto it = waiting_.begin(); it != waiting_.end(); ++it)
        if (it->id == id) {
            waiting_.erase(it);  // waiting sequences hold no KV
            return true;
        }
    for (auto it = running_.begin(); it != running_.end(); ++it)
        if (it->id == id) {
            finish(*it, pool, true);
            running_.erase(it);
            return true;
        }
    return false;
}

void Scheduler::finish(Seq& s, KvPool& pool, bool remember) {
    pool.release(s.id, remember && s.n_computed > 0);
    s.n_computed = 0;
}

// The running sequence whose tokens share the longest prefix with s's (at most all but s's
// last token), and that length; none below kMinRunningShare tokens.
Scheduler::Shared Scheduler::running_prefix(const Seq& s, const KvPool& pool) const {
    if (!opts_.prefix_sharing || !opts_.running_share) return {};
    Shared best;
    for (const Seq& r : running_) {
        const int64_t n = pool.common_prefix(r.id, s.id, s.n_tokens - 1);
        if (n > best.n_tokens) best = {&r, n};
    }
    if (best.n_tokens < kMinRunningShare) return {};
    return best;
}

bool Scheduler::admit(Seq& s, const Shared& shared, KvPool& pool, Step& out) {
    int64_t reused = 0;
    if (opts_.prefix_sharing && s.n_computed == 0) {
        reused = pool.attach_cached(s.id, s.n_tokens - 1);
        const int64_t take = shared.seq ? std::min(shared.n_tokens, shared.seq->n_computed) : 0;
        if (take >= kMinRunningShare && take > reused) {
            pool.release(s.id, false);
            pool.share_prefix(s.id, shared.seq->id, take);
            reused = take;
        }
        s.n_computed = reused;
    }
    const int64_t need = s.unfed() + 1;
    if (!pool.reserve(s.id, need)) {
        const int64_t blocks = (need + pool.block_tokens() - 1) / pool.block_tokens() + 1;
        if (!opts_.prefix_sharing || pool.evict_cached(blocks) == 0 || !pool.reserve(s.id, need)) {
            pool.release(s.id, false);
            s.n_computed = 0;
            return false;
        }
    }
    out.admitted.push_back({s.id, s.admitted_once ? 0 : std::min(reused, s.n_prompt), !s.admitted_once});
    s.admitted_once = true;
    return true;
}

void Scheduler::admit_waiting(KvPool& pool, Step& out) {
    for (auto it = waiting_.begin();
         it != waiting_.end() && int64_t(running_.size() + 1 + it->followers.size()) <= opts_.n_parallel;) {
        const Shared shared = running_prefix(*it, pool);
        // A prompt whose shared prefix a running sequence is still prefilling waits for it
        // (continuous batching only: a static batch would hold it until that one ends).
        if (opts_.continuous && it->n_computed == 0 && shared.seq && shared.seq->n_computed < shared.n_tokens) {
            ++it;
            continue;
        }
        if (!admit(*it, shared, pool, out)) break;
        running_.push_back(std::move(*it));
        it = waiting_.erase(it);
    }
}

// Reserves every fed sequence's KV for the step; on the first failure gives back what this
// step reserved (all or nothing) and returns false.
bool Scheduler::reserve_step(const std::vector<int64_t>& feeds, KvPool& pool) {
    for (size_t i = 0; i < running_.size(); ++i) {
        if (feeds[i] == 0 || pool.reserve(running_[i].id, feeds[i])) continue;
        for (size_t j = 0; j <= i; ++j) pool.trim(running_[j].id);
        return false;
    }
    return true;
}

Step Scheduler::plan(KvPool& pool) {
    Step out;
    if (opts_.continuous || running_.empty()) admit_waiting(pool, out);
    for (Seq& s : running_)
        if (s.n_tokens > opts_.n_ctx) {
            out.ended.push_back(s.id);
            finish(s, pool, true);
        }
    std::erase_if(running_, [&](const Seq& s) {
        return std::find(out.ended.begin(), out.ended.end(), s.id) != out.ended.end();
    });
    std::vector<int64_t> feeds;
    while (!running_.empty()) {
        std::vector<FeedInput> in;
        for (const Seq& s : running_) in.push_back({s.unfed(), s.prefill_waits});
        feeds = compose_feeds(in, opts_.step_token_budget);
        if (reserve_step(feeds, pool)) break;
        // No room: free cached prefixes, then preempt the newest sequence (recompute later).
        if (opts_.prefix_sharing && pool.evict_cached(int64_t(running_.size())) > 0) continue;
        if (running_.size() == 1) {  // the pool cannot hold even this one sequence
            out.ended.push_back(running_[0].id);
            finish(running_[0], pool, true);
            running_.clear();
            break;
        }
        Seq victim = std::move(running_.back());
        running_.pop_back();
        pool.release(victim.id, false);
        victim.n_computed = 0;
        out.preempted.push_back(victim.id);
        ++preemptions_;
        waiting_.push_front(std::move(victim));
    }
    for (size_t i = 0; i < running_.size(); ++i) {
        Seq& s = running_[i];
        s.prefill_waits = next_prefill_waits(s.prefill_waits, s.unfed(), feeds[i]);
        if (feeds[i] > 0) out.chunks.push_back({s.id, s.n_computed, feeds[i], feeds[i] == s.unfed()});
    }
    return out;
}

void Scheduler::complete(const Step& step, std::span<const SeqId> stopped, KvPool& pool) {
    std::vector<Seq> forked;
    size_t r = 0;
    for (const Chunk& c : step.chunks) {
        while (r < running_.size() && running_[r].id != c.id) ++r;  // chunks follow running order
        DUET_CHECK(r < running_.size(), "step chunk of sequence {} that is not running", c.id);
        Seq& s = running_[r];
        DUET_CHECK(s.n_computed == c.n_past, "sequence {} computed {} tokens, the step planned from {}", s.id,
                   s.n_computed, c.n_past);
        pool.commit(s.id, c.n_tokens);
        s.n_computed += c.n_tokens;
        if (!c.samples) continue;
        s.n_tokens += 1;
        for (SeqId f : s.followers) {  // n > 1: the group shares the computed prompt
            Seq fs;
            fs.id = f;
            fs.n_prompt = s.n_prompt;
            fs.n_computed = s.n_computed;
            fs.n_tokens = s.n_computed + 1;
            fs.admitted_once = true;
            pool.share_prefix(f, s.id, s.n_computed);
            forked.push_back(std::move(fs));
        }
        s.followers.clear();
    }
    for (Seq& f : forked) running_.push_back(std::move(f));
    for (SeqId id : stopped) {
        auto it = std::find_if(running_.begin(), running_.end(), [&](const Seq& s) { return s.id == id; });
        DUET_CHECK(it != running_.end(), "stopped sequence {} is not running", id);
        finish(*it, pool, true);
        running_.erase(it);
    }
}

std::vector<SeqId> Scheduler::fail_running(KvPool& pool) {
    std::vector<SeqId> ids;
    for (Seq& s : running_) {
        ids.push_back(s.id);
        finish(s, pool, false);
    }
    running_.clear();
    return ids;
}

}  // namespace duet::sched
