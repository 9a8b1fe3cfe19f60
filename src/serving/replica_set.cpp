#include "serving/replica_set.h"

#include <fmt/format.h>

#include <cmath>
#include <memory>

#include "core/error.h"
#include "sched/block_pool.h"

namespace duet::serving {

std::string ReplicaSetSpec::instance_name(int index) const {
    const int r = index / per_replica();
    const std::string rep = dp == 1 ? "" : fmt::format(" replica {}", r);
    if (disaggregated) return rep + (index % 2 ? " decode" : " prefill");
    return pp > 1 ? rep + fmt::format(" engine {}", index % pp) : rep;
}

ServingResult run_replica_set(const std::vector<ServingRequest>& requests, const sched::SchedulerOptions& opts,
                              const ReplicaSetSpec& spec, const ClusterObserver& observe, const StepTimed& on_timed) {
    DUET_CHECK(spec.dp >= 1 && spec.first.cost && (!spec.disaggregated || spec.decode.cost));
    DUET_CHECK(spec.pp == 1 || !spec.disaggregated, "pipeline stages in a disaggregated replica");
    std::vector<std::unique_ptr<sched::BlockPool>> pools;
    std::vector<ReplicaSpec> specs(size_t(spec.dp));
    auto timer_of = [&](StepCostModel* cost, int index) -> StepTimer {
        return [cost, index, &on_timed](const sched::Step& step, int64_t) {
            const int64_t ns = int64_t(std::llround(cost->step_ns(step)));
            if (on_timed) on_timed(index, ns);
            return ns;
        };
    };
    const auto new_pool = [&](int64_t n_blocks, int64_t block_tokens) {
        pools.push_back(std::make_unique<sched::BlockPool>(n_blocks, block_tokens));
        if (opts.prefix_sharing)
            pools.back()->set_tokens([&requests](sched::SeqId id) {
                const auto& t = requests[size_t(id)].tokens;
                return t ? std::span<const int32_t>(*t) : std::span<const int32_t>();
            });
        return pools.back().get();
    };
    const int64_t engine_blocks = spec.first.n_blocks / spec.pp;
    for (int r = 0; r < spec.dp; ++r) {
        ReplicaSpec& sp = specs[size_t(r)];
        sp.pool = new_pool(engine_blocks, spec.first.block_tokens);
        sp.timer = timer_of(spec.first.cost, spec.instance_index({r, false}));
        for (int e = 1; e < spec.pp; ++e) {  // virtual engines: one cost model, one timer each
            sp.engine_pools.push_back(new_pool(engine_blocks, spec.first.block_tokens));
            sp.engine_timers.push_back(timer_of(spec.first.cost, spec.instance_index({r, false, e})));
        }
        if (spec.pp > 1) {
            StepCostModel* cost = spec.first.cost;
            sp.issue = [cost](const sched::Step&, int64_t) { return int64_t(std::llround(cost->last_issue_ns())); };
        }
        if (!spec.disaggregated) continue;
        pools.push_back(std::make_unique<sched::BlockPool>(spec.decode.n_blocks, spec.decode.block_tokens));
        sp.decode_pool = pools.back().get();
        sp.decode_timer = timer_of(spec.decode.cost, spec.instance_index({r, true}));
        sp.link = spec.link;
        sp.kv_bytes_per_token = spec.kv_bytes_per_token;
    }
    Router router(spec.router, spec.dp, spec.first.block_tokens);
    return run_cluster(requests, opts, specs, router, observe);
}

}  // namespace duet::serving
