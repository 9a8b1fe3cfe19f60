#include "serving/replica_set.h"

#include <fmt/format.h>

#include <cmath>
#include <memory>

#include "core/error.h"
#include "sched/block_pool.h"

namespace duet::serving {

std::string ReplicaSetSpec::instance_name(int index) const {
    const int r = disaggregated ? index / 2 : index;
    const std::string rep = dp == 1 ? "" : fmt::format(" replica {}", r);
    if (!disaggregated) return rep;
    return rep + (index % 2 ? " decode" : " prefill");
}

ServingResult run_replica_set(const std::vector<ServingRequest>& requests, const sched::SchedulerOptions& opts,
                              const ReplicaSetSpec& spec, const ClusterObserver& observe, const StepTimed& on_timed) {
    DUET_CHECK(spec.dp >= 1 && spec.first.cost && (!spec.disaggregated || spec.decode.cost));
    std::vector<std::unique_ptr<sched::BlockPool>> pools;
    std::vector<ReplicaSpec> specs(size_t(spec.dp));
    auto timer_of = [&](StepCostModel* cost, int index) -> StepTimer {
        return [cost, index, &on_timed](const sched::Step& step, int64_t) {
            const int64_t ns = int64_t(std::llround(cost->step_ns(step)));
            if (on_timed) on_timed(index, ns);
            return ns;
        };
    };
    for (int r = 0; r < spec.dp; ++r) {
        ReplicaSpec& sp = specs[size_t(r)];
        pools.push_back(std::make_unique<sched::BlockPool>(spec.first.n_blocks, spec.first.block_tokens));
        if (opts.prefix_sharing)
            pools.back()->set_tokens([&requests](sched::SeqId id) {
                const auto& t = requests[size_t(id)].tokens;
                return t ? std::span<const int32_t>(*t) : std::span<const int32_t>();
            });
        sp.pool = pools.back().get();
        sp.timer = timer_of(spec.first.cost, spec.instance_index({r, false}));
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
