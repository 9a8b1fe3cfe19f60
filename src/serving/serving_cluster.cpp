#include "serving/serving_cluster.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <memory>
#include <queue>
#include <tuple>
#include <unordered_map>

#include "core/error.h"

namespace duet::serving {

namespace {

// The decode instance's pool: a sequence whose prompt KV arrived over the link attaches it
// (as the scheduler attaches a prefix-cache hit, sched/scheduler.h admission), and is never
// given room to recompute it: while the KV waits for free blocks its reservations fail. An
// admission that attached the KV but then found no room for the next token releases the blocks;
// the KV stays available for the next attempt. The first step's commit makes it an ordinary
// sequence (a later preemption recomputes it, as the header says).
class HandoverPool final : public sched::KvPool {
public:
    explicit HandoverPool(sched::KvPool& inner) : inner_(inner) {}
    void hand_over(sched::SeqId id, int64_t n_tokens) { arrived_[id] = {n_tokens, false}; }

    int64_t block_tokens() const override { return inner_.block_tokens(); }
    int64_t n_blocks() const override { return inner_.n_blocks(); }
    int64_t n_free() const override { return inner_.n_free(); }
    int64_t attach_cached(sched::SeqId id, int64_t max_tokens) override {
        auto it = arrived_.find(id);
        if (it == arrived_.end() || it->second.attached) return 0;
        const int64_t n = std::min(max_tokens, it->second.n_tokens);
        if (!inner_.reserve(id, n)) return 0;  // no room yet: admission waits (reserve below refuses)
        inner_.commit(id, n);
        it->second.attached = true;
        return n;
    }
    int64_t common_prefix(sched::SeqId, sched::SeqId, int64_t) const override { return 0; }
    void share_prefix(sched::SeqId to, sched::SeqId from, int64_t n) override { inner_.share_prefix(to, from, n); }
    bool reserve(sched::SeqId id, int64_t n_new) override {
        auto it = arrived_.find(id);
        return it != arrived_.end() && !it->second.attached ? false : inner_.reserve(id, n_new);
    }
    void trim(sched::SeqId id) override { inner_.trim(id); }
    void commit(sched::SeqId id, int64_t n) override {
        arrived_.erase(id);  // its first step ran
        inner_.commit(id, n);
    }
    void release(sched::SeqId id, bool remember) override {
        if (auto it = arrived_.find(id); it != arrived_.end()) it->second.attached = false;
        inner_.release(id, remember);
    }
    int64_t evict_cached(int64_t n) override { return inner_.evict_cached(n); }

private:
    struct Arrived {
        int64_t n_tokens = 0;
        bool attached = false;
    };
    sched::KvPool& inner_;
    std::unordered_map<sched::SeqId, Arrived> arrived_;  // KV arrived, its first step not run yet
};

// The prefill instance's pool: a finished prompt whose KV is still queued on or crossing the
// link keeps its blocks until the transfer ends (the scheduler is done with it; the blocks then
// enter the prefix cache as at any release).
class SendingPool final : public sched::KvPool {
public:
    explicit SendingPool(sched::KvPool& inner) : inner_(inner) {}
    void hold(sched::SeqId id) { held_[id] = false; }  // its next release waits for sent()
    void sent(sched::SeqId id) {
        auto it = held_.find(id);
        DUET_CHECK(it != held_.end(), "sequence {} was not held", id);
        const bool remember = it->second;
        held_.erase(it);
        inner_.release(id, remember);
    }

    int64_t block_tokens() const override { return inner_.block_tokens(); }
    int64_t n_blocks() const override { return inner_.n_blocks(); }
    int64_t n_free() const override { return inner_.n_free(); }
    int64_t attach_cached(sched::SeqId id, int64_t max_tokens) override { return inner_.attach_cached(id, max_tokens); }
    int64_t common_prefix(sched::SeqId a, sched::SeqId b, int64_t limit) const override {
        return inner_.common_prefix(a, b, limit);
    }
    void share_prefix(sched::SeqId to, sched::SeqId from, int64_t n) override { inner_.share_prefix(to, from, n); }
    bool reserve(sched::SeqId id, int64_t n_new) override { return inner_.reserve(id, n_new); }
    void trim(sched::SeqId id) override { inner_.trim(id); }
    void commit(sched::SeqId id, int64_t n) override { inner_.commit(id, n); }
    void release(sched::SeqId id, bool remember) override {
        if (auto it = held_.find(id); it != held_.end()) it->second = remember;
        else inner_.release(id, remember);
    }
    int64_t evict_cached(int64_t n) override { return inner_.evict_cached(n); }

private:
    sched::KvPool& inner_;
    std::unordered_map<sched::SeqId, bool> held_;  // KV in transfer -> remember it when released
};

struct Instance {
    InstanceRef ref;
    std::unique_ptr<sched::Scheduler> sch;
    sched::KvPool* pool = nullptr;
    const StepTimer* timer = nullptr;
    InstanceStats* stats = nullptr;
    std::vector<size_t> inbox;  // requests arrived since its last step start
    bool busy = false, stalled = false;
    int64_t end_ns = 0;
    sched::Step step;  // the step in flight
    bool has_work() const { return !inbox.empty() || sch->n_waiting() + sch->n_running() > 0; }
};

class Cluster {
public:
    Cluster(std::span<const ServingRequest> requests, const sched::SchedulerOptions& opts,
            std::span<const ReplicaSpec> replicas, Router& router, const ClusterObserver& observe)
        : q_(requests), specs_(replicas), router_(router), observe_(observe), n_ctx_(opts.n_ctx) {
        DUET_CHECK(!replicas.empty() && int(replicas.size()) == router.n_replicas());
        res_.requests.resize(q_.size());
        res_.replicas.resize(specs_.size());
        outstanding_.assign(specs_.size(), 0);
        charged_.assign(q_.size(), 0);
        link_free_ns_.assign(specs_.size(), 0);
        entry_free_ns_.assign(specs_.size(), 0);
        sched::SchedulerOptions dec = opts;  // the decode instance attaches handed-over KV only
        dec.prefix_sharing = true;
        dec.running_share = false;
        for (size_t r = 0; r < specs_.size(); ++r) {
            const ReplicaSpec& sp = specs_[r];
            DUET_CHECK(sp.pool && sp.timer);
            if (!sp.disaggregated()) {
                add_instance({int(r), false}, opts, sp.pool, &sp.timer, &res_.replicas[r].prefill);
                DUET_CHECK(!sp.pipelined() || (sp.issue && sp.engine_timers.size() == sp.engine_pools.size()),
                           "a pipelined replica without its timers");
                for (size_t e = 0; e < sp.engine_pools.size(); ++e)
                    add_instance({int(r), false, int(e) + 1}, opts, sp.engine_pools[e], &sp.engine_timers[e],
                                 &res_.replicas[r].prefill);
            } else {
                DUET_CHECK(!sp.pipelined(), "a disaggregated replica with pipeline stages");
                sending_.push_back(std::make_unique<SendingPool>(*sp.pool));
                add_instance({int(r), false}, opts, sending_.back().get(), &sp.timer, &res_.replicas[r].prefill);
                DUET_CHECK(sp.decode_timer && sp.kv_bytes_per_token > 0);
                handover_.push_back(std::make_unique<HandoverPool>(*sp.decode_pool));
                add_instance({int(r), true}, dec, handover_.back().get(), &sp.decode_timer, &res_.replicas[r].decode);
            }
        }
    }

    ServingResult run();

private:
    using Event = std::pair<int64_t, size_t>;  // (time, request), earliest first, ties by index
    using EventQueue = std::priority_queue<Event, std::vector<Event>, std::greater<Event>>;

    void add_instance(InstanceRef ref, const sched::SchedulerOptions& o, sched::KvPool* pool, const StepTimer* timer,
                      InstanceStats* stats) {
        Instance in;
        in.ref = ref;
        in.sch = std::make_unique<sched::Scheduler>(o);
        in.pool = pool;
        in.timer = timer;
        in.stats = stats;
        inst_.push_back(std::move(in));
    }
    Instance& prefill_of(int replica) {
        for (Instance& in : inst_)
            if (in.ref.replica == replica && !in.ref.decode) return in;
        DUET_CHECK(false, "no replica {}", replica);
        return inst_[0];
    }
    Instance& decode_of(int replica) {
        for (Instance& in : inst_)
            if (in.ref.replica == replica && in.ref.decode) return in;
        DUET_CHECK(false, "replica {} has no decode instance", replica);
        return inst_[0];
    }
    // Tokens request i still owes its replica: its prompt until the first token, its outputs not yet generated.
    void settle(size_t i, bool done) {
        const RequestOutcome& o = res_.requests[i];
        const int64_t owed = done ? 0 : (o.generated == 0 ? o.prompt_tokens : 0) + (o.output_tokens - o.generated);
        outstanding_[size_t(o.replica)] += owed - charged_[i];
        charged_[i] = owed;
    }
    bool refused(const ServingRequest& q) const {
        auto too_big = [&](const sched::KvPool& p, int64_t tokens) {
            return (tokens + p.block_tokens() - 1) / p.block_tokens() > p.n_blocks();
        };
        const ReplicaSpec& sp = specs_[0];
        if (q.prompt_tokens + 1 > n_ctx_ || too_big(*sp.pool, q.prompt_tokens + 1)) return true;
        return sp.disaggregated() && q.output_tokens > 1 &&
               (q.prompt_tokens + 2 > n_ctx_ || too_big(*sp.decode_pool, q.prompt_tokens + 2));
    }
    void release_after(size_t i, int64_t t_done) {  // request i finished (or was refused) at t_done
        for (size_t j : released_[i]) {
            res_.requests[j].arrival_ns = t_done + q_[j].think_ns;
            pending_.push({res_.requests[j].arrival_ns, j});
        }
    }
    void finish(size_t i, int64_t t, bool by_context) {
        RequestOutcome& o = res_.requests[i];
        o.ended_by_context = by_context;
        o.e2e_ns = t - o.arrival_ns;
        settle(i, true);
        release_after(i, t);
    }
    void route(size_t i, int64_t t);
    void start_step(Instance& in, int64_t t);
    void end_step(Instance& in);

    std::span<const ServingRequest> q_;
    std::span<const ReplicaSpec> specs_;
    Router& router_;
    const ClusterObserver& observe_;
    int64_t n_ctx_ = 0;
    ServingResult res_;
    std::vector<Instance> inst_;
    std::vector<std::unique_ptr<HandoverPool>> handover_;
    std::vector<std::unique_ptr<SendingPool>> sending_;
    std::vector<int64_t> outstanding_, charged_, link_free_ns_;
    std::vector<int64_t> entry_free_ns_;         // per replica: its pipeline's entry is free (pipelined)
    // The replica's pipeline entry is taken until after t (a pipelined replica's engines wait).
    bool entry_taken(const Instance& in, int64_t t) const { return entry_free_ns_[size_t(in.ref.replica)] > t; }
    std::vector<std::vector<size_t>> released_;  // closed loop: who waits for whom
    EventQueue pending_;                         // arrivals not yet routed
    std::priority_queue<std::tuple<int64_t, size_t>, std::vector<std::tuple<int64_t, size_t>>, std::greater<>>
        transfers_;                              // (KV arrives, request)
};

void Cluster::route(size_t i, int64_t t) {
    if (refused(q_[i])) {
        release_after(i, t);
        return;
    }
    const int r = router_.pick(q_[i], outstanding_);
    DUET_CHECK(r >= 0 && r < int(specs_.size()));
    res_.requests[i].replica = r;
    ++res_.replicas[size_t(r)].requests;
    settle(i, false);
    // the replica's prefill (or colocated) engine with the fewest unfinished requests
    Instance* to = nullptr;
    int64_t fewest = INT64_MAX;
    for (Instance& in : inst_)
        if (in.ref.replica == r && !in.ref.decode) {
            const int64_t n = int64_t(in.inbox.size()) + in.sch->n_waiting() + in.sch->n_running();
            if (n < fewest) to = &in, fewest = n;
        }
    to->inbox.push_back(i);
    to->stalled = false;
}

void Cluster::start_step(Instance& in, int64_t t) {
    std::vector<int64_t> arrived;
    for (size_t i : in.inbox) {
        // The decode instance continues a sequence of prompt + first token.
        in.sch->add(sched::SeqId(i), q_[i].prompt_tokens + (in.ref.decode ? 1 : 0));
        arrived.push_back(int64_t(i));
    }
    in.inbox.clear();
    sched::Step st = in.sch->plan(*in.pool);
    if (observe_) observe_(in.ref, t, arrived, st, *in.sch, *in.pool);
    if (!in.ref.decode)
        for (const sched::Admission& a : st.admitted)
            if (a.first) {
                RequestOutcome& o = res_.requests[size_t(a.id)];
                o.queue_ns = t - o.arrival_ns;
                o.cached_tokens = a.cached_tokens;
            }
    for (sched::SeqId id : st.preempted) res_.requests[size_t(id)].preemptions++;
    res_.preemptions += st.preempted.size();
    for (sched::SeqId id : st.ended) finish(size_t(id), t, true);
    if (st.chunks.empty()) {
        // Nothing can run now: wait for this instance's next arrival, or (a prefill instance)
        // for blocks that a KV transfer frees (the running set is empty here, as every running
        // sequence is fed each step).
        DUET_CHECK(in.sch->n_running() == 0, "a step with running sequences but nothing to feed");
        in.stalled = true;
        return;
    }
    res_.peak_running = std::max(res_.peak_running, in.sch->n_running());
    res_.peak_kv_blocks_used = std::max(res_.peak_kv_blocks_used, in.pool->n_blocks() - in.pool->n_free());
    const int64_t dur = (*in.timer)(st, res_.steps);
    DUET_CHECK(dur >= 0);
    int64_t held = dur;  // the instance's busy time: a pipelined step's entry time
    if (const ReplicaSpec& sp = specs_[size_t(in.ref.replica)]; sp.pipelined()) {
        held = std::clamp<int64_t>(sp.issue(st, res_.steps), 0, dur);
        entry_free_ns_[size_t(in.ref.replica)] = t + held;
    }
    ++res_.steps;
    ++in.stats->steps;
    in.stats->busy_ns += held;
    in.busy = true;
    in.end_ns = t + dur;
    in.step = std::move(st);
}

void Cluster::end_step(Instance& in) {
    const int64_t t_end = in.end_ns;
    const ReplicaSpec& sp = specs_[size_t(in.ref.replica)];
    const bool prefill_only = sp.disaggregated() && !in.ref.decode;
    std::vector<sched::SeqId> stopped;
    for (const sched::Chunk& c : in.step.chunks) {
        if (!c.samples) continue;
        const size_t i = size_t(c.id);
        RequestOutcome& o = res_.requests[i];
        if (prefill_only) {  // the first token: done here, or its KV goes to the decode instance
            stopped.push_back(c.id);
            if (o.output_tokens == 1) {
                o.generated = 1;
                o.ttft_ns = t_end - o.arrival_ns;
                finish(i, t_end, false);
                continue;
            }
            ReplicaStats& rs = res_.replicas[size_t(in.ref.replica)];
            const uint64_t bytes = uint64_t(q_[i].prompt_tokens) * sp.kv_bytes_per_token;
            const int64_t dur = int64_t(std::llround(sp.link.transfer_ns(bytes)));
            int64_t& free_ns = link_free_ns_[size_t(in.ref.replica)];
            const int64_t start = std::max(free_ns, t_end);
            free_ns = start + dur;
            ++rs.kv_transfers;
            rs.kv_transfer_bytes += bytes;
            rs.link_busy_ns += dur;
            o.kv_transfer_ns = free_ns - t_end;
            transfers_.push({free_ns, i});
            static_cast<SendingPool*>(in.pool)->hold(c.id);
            continue;
        }
        if (++o.generated == 1) o.ttft_ns = t_end - o.arrival_ns;
        if (o.generated == o.output_tokens) {
            stopped.push_back(c.id);
            finish(i, t_end, false);
        } else {
            settle(i, false);
        }
    }
    in.sch->complete(in.step, stopped, *in.pool);
    in.step = {};
    in.busy = false;
}

ServingResult Cluster::run() {
    released_.resize(q_.size());
    for (size_t i = 0; i < q_.size(); ++i) {
        const ServingRequest& q = q_[i];
        DUET_CHECK(q.prompt_tokens > 0 && q.output_tokens > 0 && q.arrival_ns >= 0);
        DUET_CHECK(q.after < int64_t(i), "request {} waits for a later request {}", i, q.after);
        RequestOutcome& o = res_.requests[i];
        o.arrival_ns = q.arrival_ns;
        o.prompt_tokens = q.prompt_tokens;
        o.output_tokens = q.output_tokens;
        if (q.after >= 0) released_[size_t(q.after)].push_back(i);
        else pending_.push({q.arrival_ns, i});
    }
    int64_t t = 0;
    while (true) {
        for (Instance& in : inst_)
            if (in.busy && in.end_ns <= t) end_step(in);
        while (!transfers_.empty() && std::get<0>(transfers_.top()) <= t) {
            const size_t i = std::get<1>(transfers_.top());
            transfers_.pop();
            RequestOutcome& o = res_.requests[i];
            o.generated = 1;
            o.ttft_ns = t - o.arrival_ns;
            settle(i, false);
            Instance& pre = prefill_of(o.replica);
            static_cast<SendingPool*>(pre.pool)->sent(sched::SeqId(i));
            pre.stalled = false;  // blocks came free: its queue may admit now
            Instance& dec = decode_of(o.replica);
            static_cast<HandoverPool*>(dec.pool)->hand_over(sched::SeqId(i), q_[i].prompt_tokens);
            dec.inbox.push_back(i);
            dec.stalled = false;
        }
        while (!pending_.empty() && pending_.top().first <= t) {
            const size_t i = pending_.top().second;
            pending_.pop();
            route(i, t);
        }
        for (Instance& in : inst_)
            if (!in.busy && !in.stalled && in.has_work() && !entry_taken(in, t)) start_step(in, t);
        int64_t next = INT64_MAX;
        if (!pending_.empty()) next = std::min(next, pending_.top().first);
        if (!transfers_.empty()) next = std::min(next, std::get<0>(transfers_.top()));
        for (const Instance& in : inst_) {
            if (in.busy) next = std::min(next, in.end_ns);
            else if (!in.stalled && in.has_work() && entry_taken(in, t))
                next = std::min(next, entry_free_ns_[size_t(in.ref.replica)]);
        }
        if (next == INT64_MAX) break;
        t = std::max(t, next);
    }
    for (const Instance& in : inst_)
        DUET_CHECK(!in.has_work(), "requests wait that can never be admitted");
    res_.end_ns = t;
    return std::move(res_);
}

}  // namespace

ServingResult run_cluster(std::span<const ServingRequest> requests, const sched::SchedulerOptions& opts,
                          std::span<const ReplicaSpec> replicas, Router& router, const ClusterObserver& observe) {
    return Cluster(requests, opts, replicas, router, observe).run();
}

}  // namespace duet::serving
