// server::memoise_timings (server/timings_cache.h): each (prompt, completion) size is computed once,
// the cached value is the computed one, the cache stays within its bound, and concurrent callers
// get the right values.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "server/timings_cache.h"

namespace duet::server {
namespace {

nlohmann::json value_of(int64_t p, int64_t c) { return {{"p", p}, {"c", c}, {"ttft_ms", double(p) * 0.5 + double(c)}}; }

TEST(TimingsCache, ComputesEachSizeOnce) {
    int calls = 0;
    auto f = memoise_timings([&](int64_t p, int64_t c) {
        ++calls;
        return value_of(p, c);
    });
    EXPECT_EQ(f(12, 4), value_of(12, 4));
    EXPECT_EQ(f(12, 4), value_of(12, 4));
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(f(12, 5), value_of(12, 5));  // a different completion length is a different size
    EXPECT_EQ(f(13, 4), value_of(13, 4));
    EXPECT_EQ(calls, 3);
    EXPECT_EQ(f(12, 4), value_of(12, 4));
    EXPECT_EQ(calls, 3);
}

TEST(TimingsCache, EmptiesItselfWhenFull) {
    int calls = 0;
    auto f = memoise_timings(
        [&](int64_t p, int64_t c) {
            ++calls;
            return value_of(p, c);
        },
        2);
    f(1, 1);
    f(2, 1);
    f(1, 1);
    EXPECT_EQ(calls, 2);
    f(3, 1);  // full: emptied, then (3, 1) kept
    EXPECT_EQ(calls, 3);
    f(3, 1);
    EXPECT_EQ(calls, 3);
    EXPECT_EQ(f(1, 1), value_of(1, 1));  // computed again
    EXPECT_EQ(calls, 4);
}

TEST(TimingsCache, ConcurrentCallersGetTheirOwnSizes) {
    std::atomic<int> calls{0};
    auto f = memoise_timings([&](int64_t p, int64_t c) {
        calls.fetch_add(1);
        return value_of(p, c);
    });
    std::vector<std::thread> threads;
    std::atomic<int> wrong{0};
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 200; ++i) {
                const int64_t p = (i + t) % 10, c = i % 3;
                if (f(p, c) != value_of(p, c)) wrong.fetch_add(1);
            }
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_GE(calls.load(), 30);       // 30 distinct sizes
    EXPECT_LE(calls.load(), 30 * 4);   // each computed by at most every thread once
}

}  // namespace
}  // namespace duet::server
