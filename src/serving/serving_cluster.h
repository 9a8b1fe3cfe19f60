#pragma once
// Several instances of the modelled machine serving one request stream (docs/serving.md):
// data-parallel replicas behind a router (serving/router.h), each either one colocated
// instance (prefill and decode in the same steps, as run_serving) or a disaggregated pair: a
// prefill instance and a decode instance joined by a link (DistServe, Zhong et al., OSDI 2024;
// vLLM's disaggregated prefilling).
//
// Every instance runs its own sched::Scheduler over its own KV pool on one shared virtual
// clock; steps of different instances overlap in time. Events at the same instant are handled
// in this order: steps that end, KV transfers that end, arrivals (routed), steps that start,
// so a single colocated replica makes exactly run_serving's decisions.
//
// Pipeline parallelism (a colocated replica with engine_pools): vLLM's virtual engines (v0
// LLMEngine: one scheduler per pipeline stage count, each over 1/pp of the KV blocks). Each
// engine is an instance with its own scheduler and pool and at most one step in flight; a
// request goes to the replica's engine with the fewest unfinished requests (ties: the lowest
// engine), as vLLM's add_request picks its scheduler. A step takes the timer's time (its
// forward through every stage) but holds the pipeline's entry only for `issue`'s time (its
// slowest stage): another engine's step may start then, so up to pp steps are in flight. The
// instance's busy time counts the entry's time.
//
// Disaggregated request i:
//  1. the prefill instance computes the prompt and samples the first token (its scheduler
//     sees a request of one output token; the prompt's blocks then enter its prefix cache);
//  2. the KV of the prompt (prompt_tokens * kv_bytes_per_token) crosses the replica's link:
//     one transfer at a time in completion order (a FIFO queue), each taking
//     SimLink::transfer_ns(bytes) (sim/hardware.h: per_transfer_ns + latency_ns + bytes / bandwidth);
//  3. the first token counts when its KV has arrived (TTFT includes the transfer); the decode
//     instance then admits a sequence of prompt + 1 tokens whose prompt KV is already present
//     (like vLLM's KV connector, it enters as attached KV, as a prefix-cache hit would), so its
//     first step for it is a decode token: TPOT is the decode instance's.
//  The prefill instance keeps the prompt's blocks until its transfer ends (queued transfers hold
//  KV there). A one-token request ends on the prefill instance (nothing to hand over). A sequence
//  the decode instance preempts is recomputed there (the transferred KV is not kept elsewhere).
//  Simplification: the KV is pushed when the prefill ends, whether or not the decode instance has
//  room for it yet (it then waits in the decode queue; its blocks are not counted anywhere).
// Thread safety: pure function of its inputs (pools and timers are the caller's).
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "serving/router.h"
#include "serving/serving_run.h"
#include "sim/hardware.h"

namespace duet::serving {

struct ReplicaSpec {
    sched::KvPool* pool = nullptr;  // the colocated instance's, or the prefill instance's (required)
    StepTimer timer;                // times that instance's steps
    // Disaggregated when decode_pool is set:
    sched::KvPool* decode_pool = nullptr;  // the decode instance's (its prefix cache is not used)
    StepTimer decode_timer;
    sim::SimLink link;                     // prefill instance -> decode instance
    uint64_t kv_bytes_per_token = 0;       // K and V of one token, every layer
    bool disaggregated() const { return decode_pool != nullptr; }
    // Pipeline parallelism (colocated only): the pools and step timers of virtual engines 1, 2, ...
    // (engine 0 has `pool` and `timer`) and how long a step holds the pipeline's entry (required).
    std::vector<sched::KvPool*> engine_pools;
    std::vector<StepTimer> engine_timers;
    StepTimer issue;
    bool pipelined() const { return !engine_pools.empty(); }
};

// Which instance an observed step belongs to.
struct InstanceRef {
    int replica = 0;
    bool decode = false;  // the decode instance of a disaggregated replica
    int engine = 0;       // the virtual engine of a pipelined replica
};
using ClusterObserver =
    std::function<void(InstanceRef at, int64_t t_ns, const std::vector<int64_t>& arrived, const sched::Step& step,
                       const sched::Scheduler& sched, const sched::KvPool& pool)>;

// Runs every request to completion on the replicas ([router.n_replicas()], identical pools:
// a request too long for replica 0 is refused up front, as in run_serving). ServingResult::
// replicas holds each replica's share; steps, preemptions and peaks are over all instances.
ServingResult run_cluster(std::span<const ServingRequest> requests, const sched::SchedulerOptions& opts,
                          std::span<const ReplicaSpec> replicas, Router& router, const ClusterObserver& observe = {});

}  // namespace duet::serving
