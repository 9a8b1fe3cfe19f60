#include "runtime/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace duet::runtime {

KvCache::KvCache(const KvCacheConfig& cfg) : cfg_(cfg) {
    if (cfg.kv_type != DType::F32 && cfg.kv_type != DType::F16 && cfg.kv_type != DType::Q8_0)
        fail("KV cache type '{}' is not supported (allowed: f32, f16, q8_0 = int8)", dtype_name(cfg.kv_type));
    if (cfg.kv_type == DType::Q8_0 && cfg.head_dim % 32 != 0)
        fail("an int8 KV cache needs head_dim a multiple of 32 (the scale block; head_dim = {})", cfg.head_dim);
    if (cfg.n_layer <= 0 || cfg.n_head_kv <= 0 || cfg.head_dim <= 0)
        fail("KV cache: n_layer, n_head_kv and head_dim must be positive (got {}, {}, {})", cfg.n_layer,
             cfg.n_head_kv, cfg.head_dim);
    if (cfg.block_tokens <= 0 || cfg.block_tokens > 4096)
        fail("KV cache: block_tokens {} is out of range (allowed: 1..4096)", cfg.block_tokens);
    if (cfg.n_blocks <= 0 || cfg.n_blocks > (int64_t(1) << 30))
        fail("KV cache: n_blocks {} is out of range (allowed: 1..2^30)", cfg.n_blocks);
    row_bytes_ = duet::row_bytes(cfg.kv_type, cfg.n_head_kv * cfg.head_dim);
    data_.resize(block_bytes() * size_t(cfg.n_blocks));
    refs_.assign(size_t(cfg.n_blocks), 0);
    free_.reserve(size_t(cfg.n_blocks));
    // Highest id at the bottom of the stack, so blocks are handed out 0, 1, 2, ...
    for (int64_t b = cfg.n_blocks - 1; b >= 0; --b) free_.push_back(BlockId(b));
}

int64_t KvCache::blocks_for(int64_t n_ctx, int64_t n_seq, int64_t block_tokens) {
    return (n_ctx + block_tokens - 1) / block_tokens * n_seq;
}

bool KvCache::allocate(int64_t n, std::vector<BlockId>& out) {
    DUET_CHECK(n >= 0);
    if (n > n_free()) return false;
    for (int64_t i = 0; i < n; ++i) {
        const BlockId b = free_.back();
        free_.pop_back();
        refs_[size_t(b)] = 1;
        out.push_back(b);
    }
    return true;
}

void KvCache::retain(BlockId b) {
    DUET_CHECK(b >= 0 && b < n_blocks() && refs_[size_t(b)] > 0, "retain of free block {}", b);
    ++refs_[size_t(b)];
}

void KvCache::release(BlockId b) {
    DUET_CHECK(b >= 0 && b < n_blocks() && refs_[size_t(b)] > 0, "release of free block {}", b);
    if (--refs_[size_t(b)] == 0) free_.push_back(b);
}

int KvCache::refcount(BlockId b) const {
    DUET_CHECK(b >= 0 && b < n_blocks());
    return refs_[size_t(b)];
}

uint8_t* KvCache::block_base(int64_t layer, BlockId b) {
    DUET_CHECK(b >= 0 && b < n_blocks() && layer >= 0 && layer < cfg_.n_layer);
    return data_.data() + size_t(b) * block_bytes() + size_t(layer) * n_halves() * layer_half_bytes();
}

uint8_t* KvCache::v_block(int64_t layer, BlockId b) {
    DUET_CHECK(!cfg_.latent, "KV cache: a latent cache has no V rows");
    return block_base(layer, b) + layer_half_bytes();
}

void KvCache::copy_block(BlockId from, BlockId to) {
    std::memcpy(block_base(0, to), block_base(0, from), block_bytes());
}

bool SequenceKv::reserve(KvCache& cache, int64_t n_new) {
    DUET_CHECK(n_new >= 0);
    const int64_t bt = cache.block_tokens();
    const int64_t have = int64_t(blocks_.size());
    const int64_t need = (n_tokens_ + n_new + bt - 1) / bt;
    // Copy on write: appending into a partially filled block that another sequence shares.
    const bool cow = n_new > 0 && n_tokens_ % bt != 0 && cache.refcount(blocks_[size_t(n_tokens_ / bt)]) > 1;
    const int64_t n_alloc = std::max<int64_t>(0, need - have) + (cow ? 1 : 0);
    std::vector<BlockId> fresh;
    if (!cache.allocate(n_alloc, fresh)) return false;
    size_t next = 0;
    if (cow) {
        const size_t i = size_t(n_tokens_ / bt);
        cache.copy_block(blocks_[i], fresh[next]);
        cache.release(blocks_[i]);
        blocks_[i] = fresh[next++];
    }
    while (next < fresh.size()) blocks_.push_back(fresh[next++]);
    return true;
}

void SequenceKv::truncate(KvCache& cache, int64_t n) {
    DUET_CHECK(n >= 0);
    if (n > n_tokens_) n = n_tokens_;
    const int64_t keep = (n + cache.block_tokens() - 1) / cache.block_tokens();
    while (int64_t(blocks_.size()) > keep) {
        cache.release(blocks_.back());
        blocks_.pop_back();
    }
    n_tokens_ = n;
}

void SequenceKv::share_prefix(KvCache& cache, const SequenceKv& other, int64_t n) {
    DUET_CHECK(blocks_.empty() && n_tokens_ == 0, "share_prefix into a non-empty sequence");
    DUET_CHECK(n >= 0 && n <= other.n_tokens_);
    const int64_t nb = (n + cache.block_tokens() - 1) / cache.block_tokens();
    for (int64_t i = 0; i < nb; ++i) {
        cache.retain(other.blocks_[size_t(i)]);
        blocks_.push_back(other.blocks_[size_t(i)]);
    }
    n_tokens_ = n;
}

void SequenceKv::adopt_blocks(KvCache& cache, const std::vector<BlockId>& blocks, int64_t n_tokens) {
    DUET_CHECK(blocks_.empty() && n_tokens_ == 0, "adopt_blocks into a non-empty sequence");
    DUET_CHECK(n_tokens >= 0 && n_tokens <= int64_t(blocks.size()) * cache.block_tokens(),
               "adopt_blocks: {} tokens do not fit {} blocks", n_tokens, blocks.size());
    for (BlockId b : blocks) cache.retain(b);
    blocks_ = blocks;
    n_tokens_ = n_tokens;
}

}  // namespace duet::runtime
