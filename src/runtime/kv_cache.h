#pragma once
// Paged KV cache (vLLM's PagedAttention layout): a fixed pool of blocks, each holding K and V
// of `block_tokens` consecutive positions for every layer, and per-sequence block tables
// (SequenceKv) that map position t to block table[t / block_tokens], row t % block_tokens.
// A contiguous cache is the special case of one sequence whose table happens to be in order.
//
// Blocks are reference-counted: a sequence that starts with another's prefix retains the
// prefix's blocks instead of copying them (issue 5's prefix cache). A shared block is never
// written: before a sequence appends into a partially filled block with refcount > 1, it
// copies that block (copy on write) — see SequenceKv::reserve.
//
// Exhaustion is an expected outcome, not an error: allocate/reserve return false and leave
// the cache and the sequence unchanged.
//
// Storage of one block, per layer: K rows [block_tokens][n_head_kv * head_dim] then V rows of the
// same shape, in kv_type (F32, F16, or Q8_0 = int8: each row in blocks of 32 int8 values with one
// f16 scale, amax / 127, 34 bytes per 32 values; head_dim must be a multiple of 32 so a head is
// whole blocks). Memory: n_blocks * block_bytes(), allocated once. A latent cache (multi-head latent
// attention, config `latent`) has no V half: one row per position and layer, [n_head_kv * head_dim]
// = the latent and the RoPE key (kv_lora_rank + qk_rope_head_dim), read through k_block().
//
// Thread safety: none; the engine (one thread) owns the cache and all its sequences.
#include <cstdint>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/dtype.h"

namespace duet::runtime {

struct KvCacheConfig {
    int64_t n_layer = 0;
    int64_t n_head_kv = 0;
    int64_t head_dim = 0;
    int64_t block_tokens = 16;
    int64_t n_blocks = 0;
    DType kv_type = DType::F16;  // F32 or F16
    bool latent = false;         // one row per position and layer (no V rows): the MLA latent cache
};

using BlockId = int32_t;

class KvCache {
public:
    explicit KvCache(const KvCacheConfig& cfg);  // throws duet::Error on a bad config
    KvCache(const KvCache&) = delete;
    KvCache& operator=(const KvCache&) = delete;

    const KvCacheConfig& config() const { return cfg_; }
    int64_t block_tokens() const { return cfg_.block_tokens; }
    int64_t n_blocks() const { return cfg_.n_blocks; }
    int64_t n_free() const { return int64_t(free_.size()); }
    int64_t n_used() const { return n_blocks() - n_free(); }
    // Bytes of one row (one position, one layer, K or V): n_head_kv * head_dim elements.
    size_t row_bytes() const { return row_bytes_; }
    // Bytes of one block across all layers, K and V (the latent row alone in a latent cache).
    size_t block_bytes() const { return n_halves() * size_t(cfg_.n_layer) * size_t(cfg_.block_tokens) * row_bytes_; }
    uint64_t total_bytes() const { return uint64_t(block_bytes()) * uint64_t(cfg_.n_blocks); }

    // Takes n blocks with refcount 1 and appends their ids to out. All or nothing: returns false
    // (and takes none) when fewer than n are free.
    bool allocate(int64_t n, std::vector<BlockId>& out);
    void retain(BlockId b);   // refcount + 1 (sharing)
    void release(BlockId b);  // refcount - 1; at 0 the block returns to the pool
    int refcount(BlockId b) const;
    void copy_block(BlockId from, BlockId to);  // all layers, K and V

    // First row of block b for one layer.
    uint8_t* k_block(int64_t layer, BlockId b) { return block_base(layer, b); }
    uint8_t* v_block(int64_t layer, BlockId b);  // DUET_CHECKs the cache is not latent

    // Blocks needed for n_ctx positions of n_seq sequences (rounded up per sequence).
    static int64_t blocks_for(int64_t n_ctx, int64_t n_seq, int64_t block_tokens);

private:
    size_t layer_half_bytes() const { return size_t(cfg_.block_tokens) * row_bytes_; }
    size_t n_halves() const { return cfg_.latent ? 1 : 2; }
    uint8_t* block_base(int64_t layer, BlockId b);

    KvCacheConfig cfg_;
    size_t row_bytes_ = 0;
    AlignedBuffer<uint8_t> data_;
    std::vector<int32_t> refs_;   // [n_blocks]
    std::vector<BlockId> free_;   // stack of free block ids
};

// The block table of one sequence: which blocks hold its positions 0 .. n_tokens()-1.
// Owns one reference on each of its blocks; call release() (or let the owner do it) before
// the cache goes away. Movable, not copyable (copying would double-release).
class SequenceKv {
public:
    SequenceKv() = default;
    SequenceKv(SequenceKv&&) noexcept = default;
    SequenceKv& operator=(SequenceKv&&) noexcept = default;
    SequenceKv(const SequenceKv&) = delete;
    SequenceKv& operator=(const SequenceKv&) = delete;

    int64_t n_tokens() const { return n_tokens_; }
    const std::vector<BlockId>& blocks() const { return blocks_; }

    // Makes room for positions n_tokens() .. n_tokens() + n_new - 1: allocates missing blocks
    // and copies a shared, partially filled last block (copy on write). Returns false when the
    // pool cannot supply them; the sequence and the cache are then unchanged. Does not change
    // n_tokens(): the engine advances it with commit() after writing K/V.
    bool reserve(KvCache& cache, int64_t n_new);
    void commit(int64_t n_new) { n_tokens_ += n_new; }

    // Forgets positions >= n (rewind); releases blocks no longer needed.
    void truncate(KvCache& cache, int64_t n);
    // Releases every block; n_tokens() becomes 0.
    void release(KvCache& cache) { truncate(cache, 0); }

    // Starts this (empty) sequence with the first n positions of `other`, sharing its blocks
    // (refcount + 1 each, no copy). n <= other.n_tokens().
    void share_prefix(KvCache& cache, const SequenceKv& other, int64_t n);

    // Starts this (empty) sequence with whole blocks another owner holds (the prefix cache):
    // positions 0 .. n_tokens-1 live in `blocks`, each retained (refcount + 1, no copy).
    // n_tokens <= blocks.size() * block_tokens.
    void adopt_blocks(KvCache& cache, const std::vector<BlockId>& blocks, int64_t n_tokens);

private:
    std::vector<BlockId> blocks_;
    int64_t n_tokens_ = 0;
};

}  // namespace duet::runtime
