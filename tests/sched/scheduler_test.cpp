// The shared batching policy on the modelled pool: composition, admission, preemption, forks.
#include <gtest/gtest.h>

#include "sched/block_pool.h"
#include "sched/compose.h"
#include "sched/scheduler.h"

namespace duet::sched {
namespace {

SchedulerOptions opts(int64_t n_parallel, int64_t budget, int64_t n_ctx = 4096) {
    SchedulerOptions o;
    o.n_parallel = n_parallel;
    o.step_token_budget = budget;
    o.n_ctx = n_ctx;
    return o;
}

TEST(ComposeFeeds, DecodeFirstThenShortestPromptWithinTheBudget) {
    const FeedInput in[] = {{10, 0}, {1, 0}, {3, 0}, {0, 0}, {1, 0}};
    EXPECT_EQ(compose_feeds(in, 8), (std::vector<int64_t>{3, 1, 3, 0, 1}));
    // A prompt passed over kMaxPrefillWaitSteps times goes first.
    const FeedInput starved[] = {{10, kMaxPrefillWaitSteps}, {3, 0}};
    EXPECT_EQ(compose_feeds(starved, 8), (std::vector<int64_t>{8, 0}));
    // Decode tokens are never refused, even past the budget.
    const FeedInput decodes[] = {{1, 0}, {1, 0}, {5, 0}};
    EXPECT_EQ(compose_feeds(decodes, 1), (std::vector<int64_t>{1, 1, 0}));
}

TEST(BlockPool, CopiesASharedPartialBlockOnTheFirstWrite) {
    BlockPool pool(4, 4);
    ASSERT_TRUE(pool.reserve(1, 6));  // 2 blocks
    pool.commit(1, 6);
    pool.share_prefix(2, 1, 6);      // shares both; the second is half full
    EXPECT_EQ(pool.n_free(), 2);
    ASSERT_TRUE(pool.reserve(2, 1));  // copy on write: one fresh block
    EXPECT_EQ(pool.n_free(), 1);
    pool.release(1, false);
    EXPECT_EQ(pool.n_free(), 2);  // block 0 still held by sequence 2
    pool.release(2, false);
    EXPECT_EQ(pool.n_free(), 4);
}

// Runs the scheduler to completion with every request generating `out[id]` tokens; returns
// the steps' chunks.
std::vector<Step> run_all(Scheduler& s, BlockPool& pool, const std::vector<int64_t>& out) {
    std::vector<Step> steps;
    std::vector<int64_t> generated(out.size(), 0);
    while (s.n_waiting() + s.n_running() > 0) {
        Step st = s.plan(pool);
        std::vector<SeqId> stopped;
        for (const Chunk& c : st.chunks)
            if (c.samples && ++generated[size_t(c.id)] == out[size_t(c.id)]) stopped.push_back(c.id);
        s.complete(st, stopped, pool);
        steps.push_back(std::move(st));
        if (steps.size() > 10000) break;
    }
    return steps;
}

TEST(Scheduler, ChunkedPrefillThenDecodeInOneBatch) {
    Scheduler s(opts(4, 8));
    BlockPool pool(64, 16);
    s.add(0, 12);
    s.add(1, 3);
    const std::vector<Step> steps = run_all(s, pool, {2, 2});
    ASSERT_EQ(steps.size(), 3u);
    EXPECT_EQ(steps[0].admitted.size(), 2u);
    // Step 1: the short prompt whole (3), the long one's first 5 tokens.
    EXPECT_EQ(steps[0].chunks, (std::vector<Chunk>{{0, 0, 5, false}, {1, 0, 3, true}}));
    // Step 2: the short one decodes, the long one's last 7 tokens.
    EXPECT_EQ(steps[1].chunks, (std::vector<Chunk>{{0, 5, 7, true}, {1, 3, 1, true}}));
    EXPECT_EQ(steps[2].chunks, (std::vector<Chunk>{{0, 12, 1, true}}));
    EXPECT_EQ(pool.n_free(), 64);
}

TEST(Scheduler, PreemptsTheNewestByRecomputeWhenThePoolRunsDry) {
    // 4 blocks of 4 tokens; two 7-token prompts take 2 blocks each (7 + 1 reserved). Decoding
    // the 9th token needs a third block each: the newest is preempted and recomputed later.
    Scheduler s(opts(2, 64));
    BlockPool pool(4, 4);
    s.add(0, 7);
    s.add(1, 7);
    const std::vector<Step> steps = run_all(s, pool, {4, 4});
    EXPECT_EQ(s.preemptions(), 1u);
    bool seen = false;
    for (const Step& st : steps)
        if (!st.preempted.empty()) {
            EXPECT_EQ(st.preempted, std::vector<SeqId>{1});
            EXPECT_EQ(st.chunks, (std::vector<Chunk>{{0, 8, 1, true}}));
            seen = true;
        }
    EXPECT_TRUE(seen);
    // Re-admitted later with its generated tokens recomputed as a prompt: 7 + tokens sampled.
    const Step& last_admit = [&]() -> const Step& {
        for (auto it = steps.rbegin(); it != steps.rend(); ++it)
            if (!it->admitted.empty()) return *it;
        return steps.front();
    }();
    ASSERT_EQ(last_admit.admitted.size(), 1u);
    EXPECT_EQ(last_admit.admitted[0].id, 1);
    EXPECT_FALSE(last_admit.admitted[0].first);
    EXPECT_EQ(pool.n_free(), 4);
}

TEST(Scheduler, GroupForksThePromptOnceComputed) {
    Scheduler s(opts(3, 64));
    BlockPool pool(16, 4);
    s.add(0, 6, {1, 2});
    Step st = s.plan(pool);
    ASSERT_EQ(st.chunks, (std::vector<Chunk>{{0, 0, 6, true}}));
    s.complete(st, {}, pool);
    EXPECT_EQ(s.running_ids(), (std::vector<SeqId>{0, 1, 2}));
    // 2 blocks for the prompt + the leader's reserved 7th token; the followers share them.
    EXPECT_EQ(pool.n_used(), 2);
    st = s.plan(pool);  // each writes its 7th token: the shared half-full block is copied twice
    EXPECT_EQ(st.chunks, (std::vector<Chunk>{{0, 6, 1, true}, {1, 6, 1, true}, {2, 6, 1, true}}));
    EXPECT_EQ(pool.n_used(), 4);
    const SeqId all[] = {0, 1, 2};
    s.complete(st, all, pool);
    EXPECT_EQ(pool.n_free(), 16);
}

TEST(Scheduler, SlotsBoundTheBatchAndStaticBatchingWaitsForItToEnd) {
    SchedulerOptions o = opts(2, 64);
    o.continuous = false;
    Scheduler s(o);
    BlockPool pool(64, 16);
    for (SeqId i = 0; i < 3; ++i) s.add(i, 4);
    const std::vector<Step> steps = run_all(s, pool, {1, 3, 1});
    ASSERT_EQ(steps[0].admitted.size(), 2u);
    // Request 2 joins only after request 1 ends (3 steps), not when request 0 leaves after 1.
    for (size_t k = 1; k < 3; ++k) EXPECT_TRUE(steps[k].admitted.empty()) << k;
    ASSERT_EQ(steps[3].admitted.size(), 1u);
    EXPECT_EQ(steps[3].admitted[0].id, 2);
}

TEST(Scheduler, ASequenceBeyondTheContextEnds) {
    Scheduler s(opts(1, 64, 8));
    BlockPool pool(64, 4);
    s.add(0, 6);
    const std::vector<Step> steps = run_all(s, pool, {100});
    // 6 prompt tokens, samples at 6, 7, 8 tokens known; the 9th token exceeds n_ctx = 8.
    ASSERT_FALSE(steps.empty());
    EXPECT_EQ(steps.back().ended, std::vector<SeqId>{0});
    EXPECT_EQ(steps.size(), 4u);
}

}  // namespace
}  // namespace duet::sched

namespace duet::sched {
namespace {

// The modelled prefix cache: a released prompt's full blocks are remembered by their tokens and
// attached to a later prompt that starts the same; blocks only the cache holds are evicted.
TEST(BlockPool, PrefixCacheRemembersFullPromptBlocksAndEvictsIdleOnes) {
    BlockPool pool(8, 4);
    std::vector<int32_t> a{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, b{1, 2, 3, 4, 5, 6, 7, 8, 99, 98, 97};
    pool.set_tokens([&](SeqId id) { return std::span<const int32_t>(id == 0 ? a : b); });
    ASSERT_TRUE(pool.reserve(0, 11));
    pool.commit(0, 10);
    pool.release(0, true);  // blocks [1..4], [5..8] remembered; [9, 10] is partial
    EXPECT_EQ(pool.n_cached_blocks(), 2);
    EXPECT_EQ(pool.n_free(), 6);
    EXPECT_EQ(pool.attach_cached(1, 10), 8);
    EXPECT_EQ(pool.common_prefix(0, 1, 100), 8);
    EXPECT_EQ(pool.evict_cached(8), 0);  // both held by sequence 1 too
    pool.release(1, false);
    EXPECT_EQ(pool.evict_cached(1), 1);   // least recently used first
    EXPECT_EQ(pool.n_free(), 7);
    EXPECT_EQ(pool.attach_cached(1, 10), 0);  // the chain's first block is gone
    pool.release(1, false);
}

// Through the scheduler: a request whose prompt starts like a running one's waits for that one's
// prefill, then shares its KV (running-prefix sharing); a later one reuses the cached blocks.
TEST(Scheduler, SharedPromptPrefixesAreComputedOnce) {
    SchedulerOptions o = opts(4, 64);
    Scheduler s(o);
    BlockPool pool(64, 4);
    std::vector<std::vector<int32_t>> prompts{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 20, 21},
                                              {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 30},
                                              {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 40, 41, 42}};
    pool.set_tokens([&](SeqId id) { return std::span<const int32_t>(prompts[size_t(id)]); });
    s.add(0, 14);
    s.add(1, 13);
    Step st = s.plan(pool);
    ASSERT_EQ(st.admitted.size(), 1u);  // 1 waits for 0's first 12 tokens
    EXPECT_EQ(st.chunks, (std::vector<Chunk>{{0, 0, 14, true}}));
    s.complete(st, {}, pool);
    st = s.plan(pool);
    ASSERT_EQ(st.admitted.size(), 1u);
    EXPECT_EQ(st.admitted[0].id, 1);
    EXPECT_EQ(st.admitted[0].cached_tokens, 12);  // shared from the running request
    EXPECT_EQ(st.chunks, (std::vector<Chunk>{{0, 14, 1, true}, {1, 12, 1, true}}));
    const SeqId both[] = {0, 1};
    s.complete(st, both, pool);
    s.add(2, 15);
    st = s.plan(pool);
    ASSERT_EQ(st.admitted.size(), 1u);
    EXPECT_EQ(st.admitted[0].cached_tokens, 12);  // three full blocks from the prefix cache
    EXPECT_EQ(st.chunks, (std::vector<Chunk>{{2, 12, 3, true}}));
}

}  // namespace
}  // namespace duet::sched
