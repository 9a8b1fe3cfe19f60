#include "sched/block_pool.h"

#include <algorithm>

#include "core/error.h"
#include "sched/block_hash.h"

namespace duet::sched {

BlockPool::BlockPool(int64_t n_blocks, int64_t block_tokens) : block_tokens_(block_tokens) {
    if (n_blocks < 1) fail("KV pool of {} blocks is out of range (allowed: 1 or more)", n_blocks);
    if (block_tokens < 1) fail("KV block of {} tokens is out of range (allowed: 1 or more)", block_tokens);
    refs_.assign(size_t(n_blocks), 0);
    for (int64_t b = n_blocks - 1; b >= 0; --b) free_.push_back(int32_t(b));
}

void BlockPool::share_prefix(SeqId to, SeqId from, int64_t n) {
    const Table& src = seqs_[from];
    DUET_CHECK(n <= src.n_tokens, "sharing {} tokens of a sequence with {}", n, src.n_tokens);
    Table& dst = seqs_[to];
    DUET_CHECK(dst.n_tokens == 0 && dst.blocks.empty(), "sharing into a non-empty sequence");
    const int64_t nb = (n + block_tokens_ - 1) / block_tokens_;
    for (int64_t i = 0; i < nb; ++i) {
        dst.blocks.push_back(src.blocks[size_t(i)]);
        ++refs_[size_t(src.blocks[size_t(i)])];
    }
    dst.n_tokens = n;
}

bool BlockPool::reserve(SeqId id, int64_t n_new) {
    Table& t = seqs_[id];
    const int64_t need = (t.n_tokens + n_new + block_tokens_ - 1) / block_tokens_;
    const bool cow = n_new > 0 && t.n_tokens % block_tokens_ != 0 &&
                     refs_[size_t(t.blocks[size_t(t.n_tokens / block_tokens_)])] > 1;
    const int64_t n_alloc = std::max<int64_t>(0, need - int64_t(t.blocks.size())) + (cow ? 1 : 0);
    if (n_alloc > int64_t(free_.size())) return false;
    auto take = [&] {
        const int32_t b = free_.back();
        free_.pop_back();
        refs_[size_t(b)] = 1;
        return b;
    };
    if (cow) {
        int32_t& slot = t.blocks[size_t(t.n_tokens / block_tokens_)];
        --refs_[size_t(slot)];  // still held by the other sequence
        slot = take();
    }
    while (int64_t(t.blocks.size()) < need) t.blocks.push_back(take());
    return true;
}

void BlockPool::keep_blocks(Table& t, int64_t n_keep) {
    while (int64_t(t.blocks.size()) > n_keep) {
        const int32_t b = t.blocks.back();
        t.blocks.pop_back();
        if (--refs_[size_t(b)] == 0) free_.push_back(b);
    }
}

void BlockPool::trim(SeqId id) {
    Table& t = seqs_[id];
    keep_blocks(t, (t.n_tokens + block_tokens_ - 1) / block_tokens_);
}

void BlockPool::release(SeqId id, bool remember_blocks) {
    auto it = seqs_.find(id);
    if (it == seqs_.end()) return;
    if (remember_blocks && tokens_of_) remember(it->second, tokens_of_(id));
    keep_blocks(it->second, 0);
    seqs_.erase(it);
}

void BlockPool::remember(const Table& t, std::span<const int32_t> tokens) {
    const int64_t full = std::min<int64_t>(t.n_tokens, int64_t(tokens.size())) / block_tokens_;
    uint64_t h = 0;
    for (int64_t i = 0; i < full; ++i) {
        const auto blk = tokens.subspan(size_t(i * block_tokens_), size_t(block_tokens_));
        const uint64_t parent = h;
        h = chain_block_hash(h, blk);
        auto [it, fresh] = cache_.try_emplace(h);
        if (fresh) {
            it->second = {t.blocks[size_t(i)], parent, std::vector<int32_t>(blk.begin(), blk.end()), clock_++};
            ++refs_[size_t(t.blocks[size_t(i)])];
        } else {
            it->second.last_use = clock_++;
        }
    }
}

int64_t BlockPool::attach_cached(SeqId id, int64_t max_tokens) {
    if (!tokens_of_) return 0;
    const std::span<const int32_t> tokens = tokens_of_(id);
    Table& t = seqs_[id];
    DUET_CHECK(t.n_tokens == 0 && t.blocks.empty(), "attaching a prefix to a non-empty sequence");
    const int64_t n_full = std::min<int64_t>(max_tokens, int64_t(tokens.size())) / block_tokens_;
    uint64_t h = 0;
    for (int64_t i = 0; i < n_full; ++i) {
        const auto blk = tokens.subspan(size_t(i * block_tokens_), size_t(block_tokens_));
        const uint64_t parent = h;
        h = chain_block_hash(h, blk);
        auto it = cache_.find(h);
        if (it == cache_.end() || it->second.parent != parent || !std::equal(blk.begin(), blk.end(), it->second.tokens.begin()))
            break;
        it->second.last_use = clock_++;
        t.blocks.push_back(it->second.block);
        ++refs_[size_t(it->second.block)];
    }
    t.n_tokens = int64_t(t.blocks.size()) * block_tokens_;
    return t.n_tokens;
}

int64_t BlockPool::common_prefix(SeqId a, SeqId b, int64_t limit) const {
    if (!tokens_of_) return 0;
    const std::span<const int32_t> x = tokens_of_(a), y = tokens_of_(b);
    const int64_t m = std::min<int64_t>({limit, int64_t(x.size()), int64_t(y.size())});
    int64_t n = 0;
    while (n < m && x[size_t(n)] == y[size_t(n)]) ++n;
    return n;
}

int64_t BlockPool::evict_cached(int64_t n) {
    std::vector<std::pair<uint64_t, uint64_t>> idle;  // (last use, hash) of blocks only the cache holds
    for (const auto& [h, e] : cache_)
        if (refs_[size_t(e.block)] == 1) idle.push_back({e.last_use, h});
    std::sort(idle.begin(), idle.end());
    int64_t freed = 0;
    for (const auto& [use, h] : idle) {
        if (freed == n) break;
        const int32_t b = cache_.at(h).block;
        cache_.erase(h);
        if (--refs_[size_t(b)] == 0) free_.push_back(b);
        ++freed;
    }
    return freed;
}

}  // namespace duet::sched
