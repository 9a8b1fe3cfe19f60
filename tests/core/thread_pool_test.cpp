#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace duet {
namespace {

TEST(ThreadPool, ParallelForCoversRangeExactlyOnce) {
    ThreadPool pool(4);
    for (int64_t n : {1, 3, 4, 5, 1000, 1001}) {
        std::vector<std::atomic<int>> hits(n);
        pool.parallel_for(n, 1, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
        });
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
    }
}

TEST(ThreadPool, RunGivesEveryThreadItsIndexManyTimes) {
    ThreadPool pool(3);
    for (int rep = 0; rep < 2000; ++rep) {
        std::atomic<int> mask{0};
        pool.run([&](int t, int n) {
            EXPECT_EQ(n, 3);
            mask.fetch_or(1 << t);
        });
        ASSERT_EQ(mask.load(), 0b111);
    }
}

TEST(ThreadPool, GrainLimitsChunks) {
    ThreadPool pool(4);
    std::atomic<int> calls{0};
    pool.parallel_for(10, 8, [&](int64_t, int64_t) { calls.fetch_add(1); });
    EXPECT_EQ(calls.load(), 2);
}

}  // namespace
}  // namespace duet
