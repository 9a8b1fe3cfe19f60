#pragma once
// The replicas of one `duet bench --workload serving` side as the command sets them up (`--dp N`,
// `--router`, `--disaggregate`): per replica a KV pool of the instance's capacity (the prefix
// cache keyed by the requests' token ids when `prefix_sharing`), a decode pool when
// disaggregated, and step timers from the step-cost models, run by run_cluster
// (serving/serving_cluster.h). The pools live for one run; the cost models (and their
// step-time caches) are the caller's and serve every run of a rate sweep.
// With `pp` pipeline stages (colocated only) each replica runs pp virtual engines, each over
// 1/pp of the instance's blocks (vLLM v0 divides num_gpu_blocks by pipeline_parallel_size), and
// a step holds the pipeline's entry for the cost model's last_issue_ns() (serving/serving_cluster.h).
// Instances are numbered replica by replica, prefill (or colocated) first, then decode; a
// pipelined replica's engines in order.
// Thread safety: none (the cost models' caches).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "serving/router.h"
#include "serving/serving_cluster.h"
#include "serving/step_cost.h"

namespace duet::serving {

struct InstanceSpec {
    int64_t n_blocks = 0, block_tokens = 0;  // its KV pool
    StepCostModel* cost = nullptr;           // times its steps; not owned
};

struct ReplicaSetSpec {
    int dp = 1;
    int pp = 1;                     // pipeline stages: virtual engines per replica (colocated only)
    RouterPolicy router = RouterPolicy::ROUND_ROBIN;
    InstanceSpec first;             // the colocated instance, or the prefill instance
    bool disaggregated = false;
    InstanceSpec decode;            // disaggregated only
    sim::SimLink link;              // prefill -> decode (disaggregated)
    uint64_t kv_bytes_per_token = 0;
    int per_replica() const { return disaggregated ? 2 : pp; }
    int instances() const { return dp * per_replica(); }
    int instance_index(InstanceRef at) const { return at.replica * per_replica() + (at.decode ? 1 : at.engine); }
    // " replica 1 decode", " prefill", " engine 1", "" (one colocated instance): a suffix for trace names.
    std::string instance_name(int index) const;
};

// Called with each step's modelled time, right after the observer saw the step (instance index).
using StepTimed = std::function<void(int instance, int64_t ns)>;

ServingResult run_replica_set(const std::vector<ServingRequest>& requests, const sched::SchedulerOptions& opts,
                              const ReplicaSetSpec& spec, const ClusterObserver& observe = {},
                              const StepTimed& on_timed = {});

}  // namespace duet::serving
