#include "runtime/prefix_cache.h"

#include <algorithm>

#include "sched/block_hash.h"

namespace duet::runtime {

PrefixCache::~PrefixCache() {
    for (auto& [_, e] : entries_) cache_.release(e.block);
}

uint64_t PrefixCache::chain(uint64_t parent, std::span<const int32_t> block_tokens) {
    return sched::chain_block_hash(parent, block_tokens);
}

int64_t PrefixCache::attach(std::span<const int32_t> tokens, int64_t max_tokens, SequenceKv& seq) {
    const int64_t bt = cache_.block_tokens();
    lookup_tokens_ += uint64_t(std::max<int64_t>(0, max_tokens));
    std::vector<BlockId> found;
    uint64_t h = 0;
    for (int64_t b = 0; (b + 1) * bt <= std::min<int64_t>(max_tokens, int64_t(tokens.size())); ++b) {
        auto block_tokens = tokens.subspan(size_t(b * bt), size_t(bt));
        const uint64_t next = chain(h, block_tokens);
        auto it = entries_.find(next);
        if (it == entries_.end() || it->second.parent != h ||
            !std::equal(block_tokens.begin(), block_tokens.end(), it->second.tokens.begin()))
            break;
        it->second.last_use = ++clock_;
        found.push_back(it->second.block);
        h = next;
    }
    if (found.empty()) return 0;
    seq.adopt_blocks(cache_, found, int64_t(found.size()) * bt);
    hit_tokens_ += uint64_t(found.size()) * uint64_t(bt);
    return int64_t(found.size()) * bt;
}

void PrefixCache::insert(std::span<const int32_t> tokens, const SequenceKv& seq) {
    const int64_t bt = cache_.block_tokens();
    const int64_t n_full = std::min<int64_t>(seq.n_tokens(), int64_t(tokens.size())) / bt;
    uint64_t h = 0;
    for (int64_t b = 0; b < n_full; ++b) {
        auto block_tokens = tokens.subspan(size_t(b * bt), size_t(bt));
        const uint64_t next = chain(h, block_tokens);
        auto it = entries_.find(next);
        if (it == entries_.end()) {
            const BlockId id = seq.blocks()[size_t(b)];
            cache_.retain(id);
            entries_.emplace(next, Entry{id, h, {block_tokens.begin(), block_tokens.end()}, ++clock_});
        } else {
            it->second.last_use = ++clock_;
        }
        h = next;
    }
}

int64_t PrefixCache::evict(int64_t n) {
    std::vector<std::pair<uint64_t, uint64_t>> idle;  // (last_use, hash) of blocks only we hold
    for (const auto& [hash, e] : entries_)
        if (cache_.refcount(e.block) == 1) idle.emplace_back(e.last_use, hash);
    std::sort(idle.begin(), idle.end());
    int64_t freed = 0;
    for (const auto& [_, hash] : idle) {
        if (freed >= n) break;
        auto it = entries_.find(hash);
        cache_.release(it->second.block);
        entries_.erase(it);
        ++freed;
    }
    return freed;
}

}  // namespace duet::runtime
