// Paged KV cache: block accounting, exhaustion as a return value, refcounted sharing, copy on write.
#include "runtime/kv_cache.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/error.h"

using namespace duet;
using namespace duet::runtime;

namespace {
KvCacheConfig small(int64_t n_blocks, DType t = DType::F32) {
    KvCacheConfig c;
    c.n_layer = 2;
    c.n_head_kv = 2;
    c.head_dim = 4;
    c.block_tokens = 4;
    c.n_blocks = n_blocks;
    c.kv_type = t;
    return c;
}
}  // namespace

TEST(KvCache, SizesFollowTheConfig) {
    KvCache f32(small(3));
    EXPECT_EQ(f32.row_bytes(), 2u * 4u * 4u);
    EXPECT_EQ(f32.block_bytes(), 2u * 2u * 4u * 32u);  // K+V, layers, block_tokens, row
    EXPECT_EQ(f32.total_bytes(), 3u * f32.block_bytes());
    KvCache f16(small(3, DType::F16));
    EXPECT_EQ(f16.row_bytes(), 16u);
    EXPECT_EQ(KvCache::blocks_for(9, 2, 4), 6);
    EXPECT_EQ(KvCache::blocks_for(8, 1, 4), 2);
}

TEST(KvCache, RejectsBadConfig) {
    KvCacheConfig c = small(3, DType::Q4_0);
    try {
        KvCache bad(c);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "KV cache type 'q4_0' is not supported (allowed: f32, f16, q8_0 = int8)");
    }
    try {
        KvCache bad(small(3, DType::Q8_0));  // head_dim 4
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "an int8 KV cache needs head_dim a multiple of 32 (the scale block; head_dim = 4)");
    }
    EXPECT_THROW(KvCache(small(0)), Error);
}

// int8 (Q8_0): 34 bytes per 32 values, 0.53x the f16 cache's bytes.
TEST(KvCache, Int8TakesAboutHalfTheF16Bytes) {
    KvCacheConfig c = small(3, DType::Q8_0);
    c.head_dim = 64;
    KvCache i8(c);
    c.kv_type = DType::F16;
    KvCache f16(c);
    EXPECT_EQ(i8.row_bytes(), 2u * 2u * 34u);  // 2 heads x 64 values = 4 blocks of 34 bytes
    EXPECT_EQ(f16.row_bytes(), 2u * 64u * 2u);
    EXPECT_EQ(i8.total_bytes() * 64, f16.total_bytes() * 34);
}

TEST(KvCache, AllocateIsAllOrNothing) {
    KvCache c(small(4));
    std::vector<BlockId> got;
    ASSERT_TRUE(c.allocate(3, got));
    EXPECT_EQ(got, (std::vector<BlockId>{0, 1, 2}));
    EXPECT_EQ(c.n_free(), 1);
    EXPECT_FALSE(c.allocate(2, got));  // exhaustion is a return value
    EXPECT_EQ(got.size(), 3u);
    EXPECT_EQ(c.n_free(), 1);
    c.release(got[1]);
    EXPECT_EQ(c.n_free(), 2);
    EXPECT_EQ(c.refcount(got[1]), 0);
    ASSERT_TRUE(c.allocate(2, got));
    EXPECT_EQ(c.n_free(), 0);
}

TEST(KvCache, SequenceReserveCommitTruncate) {
    KvCache c(small(4));
    SequenceKv s;
    ASSERT_TRUE(s.reserve(c, 5));  // 5 positions -> 2 blocks
    EXPECT_EQ(s.blocks().size(), 2u);
    EXPECT_EQ(s.n_tokens(), 0);
    s.commit(5);
    ASSERT_TRUE(s.reserve(c, 3));  // 8 positions still fit in 2 blocks
    EXPECT_EQ(s.blocks().size(), 2u);
    s.commit(3);
    EXPECT_FALSE(s.reserve(c, 9));  // needs 3 more, only 2 free: nothing changes
    EXPECT_EQ(s.blocks().size(), 2u);
    EXPECT_EQ(c.n_free(), 2);
    s.truncate(c, 4);
    EXPECT_EQ(s.blocks().size(), 1u);
    EXPECT_EQ(c.n_free(), 3);
    s.release(c);
    EXPECT_EQ(c.n_free(), 4);
    EXPECT_EQ(s.n_tokens(), 0);
}

TEST(KvCache, SharedPrefixIsRefcountedAndCopiedOnWrite) {
    KvCache c(small(6));
    SequenceKv a;
    ASSERT_TRUE(a.reserve(c, 6));
    a.commit(6);  // blocks 0 (full) and 1 (2 of 4 rows)
    std::memset(c.k_block(1, a.blocks()[1]), 0x5a, c.row_bytes());
    SequenceKv b;
    b.share_prefix(c, a, 6);
    EXPECT_EQ(b.blocks(), a.blocks());
    EXPECT_EQ(c.refcount(a.blocks()[0]), 2);
    EXPECT_EQ(c.refcount(a.blocks()[1]), 2);
    EXPECT_EQ(c.n_used(), 2);
    // b appends into the shared partial block: it gets its own copy, a keeps the original.
    ASSERT_TRUE(b.reserve(c, 1));
    EXPECT_EQ(b.blocks()[0], a.blocks()[0]);
    EXPECT_NE(b.blocks()[1], a.blocks()[1]);
    EXPECT_EQ(c.refcount(a.blocks()[1]), 1);
    EXPECT_EQ(c.refcount(b.blocks()[1]), 1);
    EXPECT_EQ(std::memcmp(c.k_block(1, a.blocks()[1]), c.k_block(1, b.blocks()[1]), c.row_bytes()), 0);
    b.commit(1);
    a.release(c);
    EXPECT_EQ(c.refcount(b.blocks()[0]), 1);
    EXPECT_EQ(c.n_used(), 2);
    b.release(c);
    EXPECT_EQ(c.n_free(), 6);
}

TEST(KvCache, FullSharedBlocksAreNotCopied) {
    KvCache c(small(4));
    SequenceKv a, b;
    ASSERT_TRUE(a.reserve(c, 4));
    a.commit(4);
    b.share_prefix(c, a, 4);
    ASSERT_TRUE(b.reserve(c, 1));  // starts a new block, the shared one stays shared
    EXPECT_EQ(b.blocks().size(), 2u);
    EXPECT_EQ(b.blocks()[0], a.blocks()[0]);
    EXPECT_EQ(c.refcount(a.blocks()[0]), 2);
    a.release(c);
    b.release(c);
    EXPECT_EQ(c.n_free(), 4);
}

TEST(KvCache, BlocksDoNotOverlap) {
    KvCache c(small(2, DType::F16));
    uint8_t* k0 = c.k_block(0, 0);
    uint8_t* v0 = c.v_block(0, 0);
    uint8_t* k1 = c.k_block(1, 0);
    uint8_t* kb = c.k_block(0, 1);
    const size_t half = 4 * c.row_bytes();
    EXPECT_EQ(size_t(v0 - k0), half);
    EXPECT_EQ(size_t(k1 - k0), 2 * half);
    EXPECT_EQ(size_t(kb - k0), c.block_bytes());
}
