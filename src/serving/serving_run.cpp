#include "serving/serving_run.h"

#include "serving/serving_cluster.h"

namespace duet::serving {

ServingResult run_serving(std::span<const ServingRequest> requests, const sched::SchedulerOptions& opts,
                          sched::KvPool& pool, const StepTimer& timer, const StepObserver& observe) {
    // One colocated replica: the cluster's event order reduces to this header's.
    ReplicaSpec one;
    one.pool = &pool;
    one.timer = timer;
    Router router(RouterPolicy::ROUND_ROBIN, 1, pool.block_tokens());
    ClusterObserver obs;
    if (observe)
        obs = [&](InstanceRef, int64_t t, const std::vector<int64_t>& arrived, const sched::Step& st,
                  const sched::Scheduler& sch, const sched::KvPool& p) { observe(t, arrived, st, sch, p); };
    return run_cluster(requests, opts, std::span<const ReplicaSpec>(&one, 1), router, obs);
}

}  // namespace duet::serving
