#pragma once
// The modelled paged KV pool under the simulator: n_blocks blocks of block_tokens tokens with
// reference counts, per-sequence block tables, a shared partially filled block copied on the
// first write — the arithmetic of runtime/kv_cache.h (SequenceKv::reserve) without the bytes.
// It has no prefix cache: sequences carry no token ids here, so attach_cached and
// common_prefix find nothing and release(remember) forgets the blocks.
// Thread safety: none (one scheduler).
#include <cstdint>
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

    int64_t attach_cached(SeqId, int64_t) override { return 0; }
    int64_t common_prefix(SeqId, SeqId, int64_t) const override { return 0; }
    void share_prefix(SeqId to, SeqId from, int64_t n) override;
    bool reserve(SeqId id, int64_t n_new) override;
    void trim(SeqId id) override;
    void commit(SeqId id, int64_t n) override { seqs_[id].n_tokens += n; }
    void release(SeqId id, bool remember) override;
    int64_t evict_cached(int64_t) override { return 0; }

private:
    struct Table {
        std::vector<int32_t> blocks;
        int64_t n_tokens = 0;
    };
    void keep_blocks(Table& t, int64_t n_keep);

    int64_t block_tokens_;
    std::vector<int32_t> refs_;
    std::vector<int32_t> free_;
    std::unordered_map<SeqId, Table> seqs_;
};

}  // namespace duet::sched
