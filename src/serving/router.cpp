#include "serving/router.h"

#include <algorithm>

#include "core/error.h"
#include "sched/block_hash.h"

namespace duet::serving {

const char* router_name(RouterPolicy p) {
    switch (p) {
        case RouterPolicy::ROUND_ROBIN: return "round_robin";
        case RouterPolicy::LEAST_OUTSTANDING_TOKENS: return "least_outstanding_tokens";
        case RouterPolicy::PREFIX_AFFINITY: return "prefix_affinity";
    }
    return "?";
}

RouterPolicy router_from_name(const std::string& name, const std::string& where) {
    for (RouterPolicy p :
         {RouterPolicy::ROUND_ROBIN, RouterPolicy::LEAST_OUTSTANDING_TOKENS, RouterPolicy::PREFIX_AFFINITY})
        if (name == router_name(p)) return p;
    fail("{} = \"{}\" is not a router (allowed: round_robin, least_outstanding_tokens, prefix_affinity)", where, name);
}

Router::Router(RouterPolicy policy, int n_replicas, int64_t block_tokens)
    : policy_(policy), n_(n_replicas), block_tokens_(block_tokens) {
    DUET_CHECK(n_replicas >= 1 && block_tokens >= 1);
}

int Router::pick(const ServingRequest& q, std::span<const int64_t> outstanding) {
    DUET_CHECK(int(outstanding.size()) == n_);
    if (policy_ == RouterPolicy::ROUND_ROBIN) return int(next_++ % n_);
    auto least = [&](auto cost) {
        int best = 0;
        for (int r = 1; r < n_; ++r)
            if (cost(r) < cost(best)) best = r;
        return best;
    };
    if (policy_ == RouterPolicy::LEAST_OUTSTANDING_TOKENS)
        return least([&](int r) { return outstanding[size_t(r)]; });
    const int lightest = least([&](int r) { return outstanding[size_t(r)]; });
    // Prefix affinity: the hash chain of every whole prompt block.
    std::vector<uint64_t> chain;
    if (q.tokens) {
        const int64_t n_prompt = std::min<int64_t>(q.prompt_tokens, int64_t(q.tokens->size()));
        uint64_t h = 0;
        for (int64_t b = 0; b + block_tokens_ <= n_prompt; b += block_tokens_) {
            h = sched::chain_block_hash(h, std::span<const int32_t>(q.tokens->data() + b, size_t(block_tokens_)));
            chain.push_back(h);
        }
    }
    int pick = lightest;
    for (size_t k = chain.size(); k-- > 0;) {  // the longest prefix sent before: a chain hash names all of it
        auto it = owner_.find(chain[k]);
        if (it == owner_.end()) continue;
        const int64_t limit = kAffinityLoadFactor * outstanding[size_t(lightest)] + q.prompt_tokens + q.output_tokens;
        if (outstanding[size_t(it->second)] <= limit) pick = it->second;
        break;
    }
    for (uint64_t h : chain) owner_[h] = pick;
    return pick;
}

}  // namespace duet::serving
