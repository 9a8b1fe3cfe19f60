#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
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

TEST(ThreadPool, ChunkedCoversRangeExactlyOnceInChunksOfARange) {
    ThreadPool pool(3);
    for (int64_t n : {1, 2, 5, 64, 1000, 1001})
        for (int64_t grain : {1, 7, 400})
            for (int64_t chunk : {1, 3, 64}) {
                std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
                std::atomic<bool> ok{true};
                const int64_t ranges = std::min<int64_t>(3, (n + grain - 1) / grain);
                pool.parallel_for_chunked(n, grain, chunk, [&](int64_t b, int64_t e) {
                    // within one thread's range (range r: [n r / ranges, n (r + 1) / ranges)) and at most a chunk
                    int64_t r = 0;
                    while (b >= n * (r + 1) / ranges) ++r;
                    const int64_t rb = n * r / ranges, re = n * (r + 1) / ranges;
                    if (!(e > b && e - b <= chunk && (b - rb) % chunk == 0 && b >= rb && e <= re)) ok = false;
                    for (int64_t i = b; i < e; ++i) hits[size_t(i)].fetch_add(1);
                });
                EXPECT_TRUE(ok.load()) << "n=" << n << " grain=" << grain << " chunk=" << chunk;
                for (int64_t i = 0; i < n; ++i)
                    ASSERT_EQ(hits[size_t(i)].load(), 1) << "n=" << n << " grain=" << grain << " chunk=" << chunk << " i=" << i;
            }
}

// The owner of the second range stalls in its first chunk: the other thread finishes its own
// range and takes the rest of the stalled one from the back.
TEST(ThreadPool, ChunkedLetsAFreeThreadTakeTheRestOfAStalledRange) {
    ThreadPool pool(2);
    std::vector<std::thread::id> who(100);
    pool.parallel_for_chunked(100, 1, 1, [&](int64_t b, int64_t e) {
        if (b == 50) std::this_thread::sleep_for(std::chrono::milliseconds(200));
        for (int64_t i = b; i < e; ++i) who[size_t(i)] = std::this_thread::get_id();
    });
    EXPECT_EQ(who[99], who[0]);
    EXPECT_EQ(who[51], who[0]);
}

}  // namespace
}  // namespace duet
