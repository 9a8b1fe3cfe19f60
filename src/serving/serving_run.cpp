#include "serving/serving_run.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace duet::serving {

ServingResult run_serving(std::span<const ServingRequest> requests, const sched::SchedulerOptions& opts,
                          sched::KvPool& pool, const StepTimer& timer, const StepObserver& observe) {
    ServingResult res;
    res.requests.resize(requests.size());
    std::vector<size_t> order(requests.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return requests[a].arrival_ns < requests[b].arrival_ns; });
    for (size_t i = 0; i < requests.size(); ++i) {
        const ServingRequest& q = requests[i];
        DUET_CHECK(q.prompt_tokens > 0 && q.output_tokens > 0 && q.arrival_ns >= 0);
        RequestOutcome& o = res.requests[i];
        o.arrival_ns = q.arrival_ns;
        o.prompt_tokens = q.prompt_tokens;
        o.output_tokens = q.output_tokens;
    }
    const int64_t bt = pool.block_tokens();
    auto refused = [&](const ServingRequest& q) {
        return q.prompt_tokens + 1 > opts.n_ctx || (q.prompt_tokens + 1 + bt - 1) / bt > pool.n_blocks();
    };
    sched::Scheduler sch(opts);
    size_t next = 0;
    int64_t t = 0;
    while (next < order.size() || sch.n_waiting() + sch.n_running() > 0) {
        if (sch.n_waiting() + sch.n_running() == 0) t = std::max(t, requests[order[next]].arrival_ns);
        std::vector<int64_t> arrived;
        for (; next < order.size() && requests[order[next]].arrival_ns <= t; ++next) {
            const size_t i = order[next];
            if (refused(requests[i])) continue;
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
        }
        if (st.chunks.empty()) {
            // Nothing can run now: wait for the next arrival (the running set is empty here,
            // as every running sequence is fed each step).
            DUET_CHECK(sch.n_running() == 0, "a step with running sequences but nothing to feed");
            if (next < order.size()) t = std::max(t, requests[order[next]].arrival_ns);
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
