#pragma once
// The modelled paged KV pool under the simulator: n_blocks blocks of block_tokens tokens with
// reference counts, per-sequence block tables, a shared partially filled block copied on the
// first write — the arithmetic of runtime/kv_cache.h (SequenceKv::reserve) without the bytes.
//
// Prefix cache (runtime/prefix_cache.h's rules, on block ids only): when the caller names each
// sequence's prompt token ids (set_tokens), a released sequence's full prompt blocks are
// remembered by the hash chain of their tokens (tokens compared on every hit), a new sequence
// attaches the longest remembered prefix, and blocks only the cache holds are evicted least
// recently used first. The ids cover what the caller knows: the prompt (and, for an agent
// session's transcript, the output too); blocks beyond them are not remembered.
// Without token ids attach_cached and common_prefix find nothing and release forgets the blocks.
// Thread safety: none (one scheduler).
#include <cstdint>
#include <functional>
#include <span>
#include <unordered_map>
#include <vector>

#include "sched/kv_pool.h"

namespace duet::sched {

class BlockPool final : public KvPool {
public:
    BlockPool(int64_t n_blocks, int64_t block_tokens);  // throws duet::Error when either is < 1

    int64_t block_tokens() const override { return block_tokens_; }
    int64_t n_blocks() const override { return int64_t(refs_.size()); }
    int64_t n_free() const override { return int64_t(free_.size()); }
    int64_t n_used() const { return n_blocks() - n_free(); }

    // The token ids of a sequence, prompt first (empty: unknown); enables the prefix cache.
    void set_tokens(std::function<std::span<const int32_t>(SeqId)> tokens_of) { tokens_of_ = std::move(tokens_of); }
    int64_t n_cached_blocks() const { return int64_t(cache_.size()); }

    int64_t attach_cached(SeqId id, int64_t max_tokens) override;
    int64_t common_prefix(SeqId a, SeqId b, int64_t limit) const override;
    void share_prefix(SeqId to, SeqId from, int64_t n) override;
    bool reserve(SeqId id, int64_t n_new) override;
    void trim(SeqId id) override;
    void commit(SeqId id, int64_t n) override { seqs_[id].n_tokens += n; }
    void release(SeqId id, bool remember) override;
    int64_t evict_cached(int64_t n) override;

private:
    struct Table {
        std::vector<int32_t> blocks;
        int64_t n_tokens = 0;
    };
    struct Entry {
        int32_t block;
        uint64_t parent;
        std::vector<int32_t> tokens;
        uint64_t last_use;
    };
    void keep_blocks(Table& t, int64_t n_keep);
    void remember(const Table& t, std::span<const int32_t> tokens);

    int64_t block_tokens_;
    std::vector<int32_t> refs_;
    std::vector<int32_t> free_;
    std::unordered_map<SeqId, Table> seqs_;
    std::function<std::span<const int32_t>(SeqId)> tokens_of_;
    std::unordered_map<uint64_t, Entry> cache_;  // hash chain -> remembered block
    uint64_t clock_ = 0;
};

}  // namespace duet::sched
