#pragma once
// The hash chain that names a KV block by its tokens and everything before them, shared by the
// engine's prefix cache (runtime/prefix_cache.h) and the simulator's pool (sched/block_pool.h),
// so both remember the same blocks under the same keys. A hit is always confirmed by comparing
// tokens; the hash only finds candidates.
#include <cstdint>
#include <span>

namespace duet::sched {

// FNV-1a over the parent block's hash and this block's token ids, then splitmix64's finaliser.
inline uint64_t chain_block_hash(uint64_t parent, std::span<const int32_t> block_tokens) {
    uint64_t h = 0xcbf29ce484222325ull ^ parent;
    for (int32_t t : block_tokens) {
        h ^= uint32_t(t);
        h *= 0x100000001b3ull;
    }
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    return h ^ (h >> 31);
}

}  // namespace duet::sched
