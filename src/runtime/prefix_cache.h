#pragma once
// Prefix cache over the paged KV cache (vLLM's automatic prefix caching): full KV blocks of
// finished or running sequences are remembered by the hash chain of the tokens they hold,
// so a request that starts with the same tokens (an agent resending its conversation)
// shares those blocks instead of recomputing them.
//
// Block i of a token sequence is identified by h_i = H(h_{i-1}, tokens[i*B .. (i+1)*B)); the
// cache keeps one reference on each remembered block and checks the tokens on every hit, so a
// hash collision can never hand out wrong KV. Only full blocks are shared; shared blocks are
// never written (a sequence appends into fresh blocks), so sharing is copy-free.
//
// Blocks held only by the cache (refcount 1) are evicted least recently used first when the
// pool runs short (evict()).
//
// Thread safety: none; owned and driven by the batcher's engine thread.
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "runtime/kv_cache.h"

namespace duet::runtime {

class PrefixCache {
public:
    explicit PrefixCache(KvCache& cache) : cache_(cache) {}
    ~PrefixCache();  // releases every remembered block
    PrefixCache(const PrefixCache&) = delete;
    PrefixCache& operator=(const PrefixCache&) = delete;

    // Attaches to the empty sequence `seq` the longest remembered prefix of `tokens` made of
    // whole blocks and no longer than max_tokens. Returns the number of tokens reused.
    int64_t attach(std::span<const int32_t> tokens, int64_t max_tokens, SequenceKv& seq);

    // Remembers the full blocks of seq, whose positions hold `tokens` (tokens.size() may exceed
    // seq.n_tokens(): only positions whose KV is written count).
    void insert(std::span<const int32_t> tokens, const SequenceKv& seq);

    // Releases up to n blocks that only the cache holds, oldest use first. Returns how many.
    int64_t evict(int64_t n);

    int64_t n_blocks() const { return int64_t(entries_.size()); }
    uint64_t lookup_tokens() const { return lookup_tokens_; }  // tokens asked about by attach()
    uint64_t hit_tokens() const { return hit_tokens_; }        // tokens attach() reused

private:
    struct Entry {
        BlockId block;
        uint64_t parent;
        std::vector<int32_t> tokens;
        uint64_t last_use;
    };
    static uint64_t chain(uint64_t parent, std::span<const int32_t> block_tokens);

    KvCache& cache_;
    std::unordered_map<uint64_t, Entry> entries_;
    uint64_t clock_ = 0;
    uint64_t lookup_tokens_ = 0, hit_tokens_ = 0;
};

}  // namespace duet::runtime
