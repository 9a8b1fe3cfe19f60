#include "serving/serving_run.h"

#include <algorithm>
#include <numeric>
#include <queue>

#include "core/error.h"

namespace duet::serving {

ServingResult run_serving(std::span<const ServingRequest> requests, const sched::SchedulerOptions& opts,
                          sched::KvPool& pool, const StepTimer& timer, const StepObserver& observe) {
    ServingResult res;
    res.requests.resize(requests.size());
    // Arrivals not yet seen: (time, index), earliest first, ties in the order given.
    using Pending = std::pair<int64_t, size_t>;
    std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> pending;
    std::vector<std::vector<size_t>> released(requests.size());  // closed loop: who waits for whom
    for (size_t i = 0; i < requests.size(); ++i) {
        const ServingRequest& q = requests[i];
        DUET_CHECK(q.prompt_tokens > 0 && q.output_tokens > 0 && q.arrival_ns >= 0);
        DUET_CHECK(q.after < int64_t(i), "request {} waits for a later request {}", i, q.after);
        RequestOutcome& o = res.requests[i];
        o.arrival_ns = q.arrival_ns;
        o.prompt_tokens = q.prompt_tokens;
        o.output_tokens = q.output_tokens;
        if (q.after >= 0) released[size_t(q.after)].push_back(i);
        else pending.push({q.arrival_ns, i});
    }
    const int64_t bt = pool.block_tokens();
    auto refused = [&](const ServingRequest& q) {
        return q.prompt_tokens + 1 > opts.n_ctx || (q.prompt_tokens + 1 + bt - 1) / bt > pool.n_blocks();
    };
    sched::Scheduler sch(opts);
    int64_t t = 0;
    auto release_after = [&](size_t i, int64_t t_done) {  // request i finished (or was refused) at t_done
        for (size_t j : released[i]) {
            res.requests[j].arrival_ns = t_done + requests[j].think_ns;
            pending.push({res.requests[j].arrival_ns, j});
        }
    };
    while (!pending.empty() || sch.n_waiting() + sch.n_running() > 0) {
        if (sch.n_waiting() + sch.n_running() == 0) t = std::max(t, pending.top().first);
        std::vector<int64_t> arrived;
        while (!pending.empty() && pending.top().first <= t) {
            const size_t i = pending.top().second;
            pending.pop();
            if (refused(requests[i])) {
                release_after(i, t);
                continue;
            }
            sch.add(sched::SeqId(i), requests[i].prompt_tokens);
            arrived.push_back(int64_t(i));
        }
        sched::Step st = sch.plan(pool);
        if (observe) observe(t, arrived, st, sch, pool);
        for (const sched::Admission& a : st.admitted)
            if (a.first) {
                res.requests[size_t(a.id)].queue_ns = t - res.requests[size_t(a.id)].arrival_ns;
                res.requests[size_t(a.id)].cached_tokens = a.cached_tokens;
            }
        for (sched::SeqId id : st.preempted) res.requests[size_t(id)].preemptions++;
        res.preemptions += st.preempted.size();
        for (sched::SeqId id : st.ended) {
            RequestOutcome& o = res.requests[size_t(id)];
            o.ended_by_context = true;
            o.e2e_ns = t - o.arrival_ns;
            release_after(size_t(id), t);
        }
        if (st.chunks.empty()) {
            // Nothing can run now: wait for the next arrival (the running set is empty here,
            // as every running sequence is fed each step).
            DUET_CHECK(sch.n_running() == 0, "a step with running sequences but nothing to feed");
            if (!pending.empty()) t = std::max(t, pending.top().first);
            else DUET_CHECK(sch.n_waiting() == 0, "requests wait that can never be admitted");
            continue;
        }
        res.peak_running = std::max(res.peak_running, sch.n_running());
        res.peak_kv_blocks_used = std::max(res.peak_kv_blocks_used, pool.n_blocks() - pool.n_free());
        const int64_t dur = timer(st, res.steps);
        DUET_CHECK(dur >= 0);
        const int64_t t_end = t + dur;
        std::vector<sched::SeqId> stopped;
        for (const sched::Chunk& c : st.chunks) {
            if (!c.samples) continue;
            RequestOutcome& o = res.requests[size_t(c.id)];
            if (++o.generated == 1) o.ttft_ns = t_end - o.arrival_ns;
            if (o.generated == o.output_tokens) {
                o.e2e_ns = t_end - o.arrival_ns;
                stopped.push_back(c.id);
                release_after(size_t(c.id), t_end);
            }
        }
        sch.complete(st, stopped, pool);
        ++res.steps;
        t = t_end;
    }
    res.end_ns = t;
    return res;
}

}  // namespace duet::serving
