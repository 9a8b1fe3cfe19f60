#pragma once
// The router in front of data-parallel replicas (`duet bench --workload serving --dp N
// --router R`, docs/serving.md): every arriving request goes to one replica, each an
// independent copy of the modelled machine with its own scheduler and KV pool.
//  - round_robin: replica 0, 1, ..., N-1, 0, ... in arrival order;
//  - least_outstanding_tokens: the replica with the fewest tokens still to compute, counting
//    per unfinished request its prompt (until its first token) and its outputs not yet
//    generated (ties: the lowest index);
//  - prefix_affinity: the replica that was last sent the longest prefix of this prompt made of
//    whole KV blocks (found by the blocks' hash chains, the keys of sched/block_hash.h that the
//    pools cache blocks under: one chain hash names the whole prefix before it), while that
//    replica is not overloaded: its outstanding tokens at most kAffinityLoadFactor times the
//    least loaded replica's plus this request's tokens; otherwise (or for a prefix never seen)
//    the least loaded replica. The replica chosen becomes the holder of every block of the
//    prompt. This is the shape of SGLang's cache-aware router (cache affinity while the load is
//    balanced, the least loaded worker when it is not), with the load in tokens rather than
//    requests. The router knows what it sent, not what a pool still caches (SGLang's router
//    keeps its own approximate tree too).
// Thread safety: none (one per run).
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "serving/serving_run.h"

namespace duet::serving {

enum class RouterPolicy { ROUND_ROBIN, LEAST_OUTSTANDING_TOKENS, PREFIX_AFFINITY };

const char* router_name(RouterPolicy p);  // "round_robin", ...
// Throws duet::Error "<where> = \"x\" is not a router (allowed: round_robin, least_outstanding_tokens, prefix_affinity)".
RouterPolicy router_from_name(const std::string& name, const std::string& where);

// Assumption, not measured: how much more work than the least loaded replica the prefix's
// holder may have before the request goes elsewhere (SGLang's router uses a relative and an
// absolute imbalance threshold on request counts; this is one relative factor on tokens plus
// the request itself as the absolute slack).
inline constexpr int64_t kAffinityLoadFactor = 2;

class Router {
public:
    // block_tokens: the replicas' KV block size (prefix affinity hashes whole blocks).
    Router(RouterPolicy policy, int n_replicas, int64_t block_tokens);
    RouterPolicy policy() const { return policy_; }
    int n_replicas() const { return n_; }
    // The replica for `q`, given each replica's outstanding tokens ([n_replicas]); prefix
    // affinity then records that replica as the holder of q's prompt blocks.
    int pick(const ServingRequest& q, std::span<const int64_t> outstanding);

private:
    RouterPolicy policy_;
    int n_;
    int64_t block_tokens_;
    int64_t next_ = 0;                                  // round robin
    std::unordered_map<uint64_t, int> owner_;  // hash chain of a prompt block -> the replica it was last sent to
};

}  // namespace duet::serving
