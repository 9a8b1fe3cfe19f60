// CPU_AFFINITY_CONF's mechanism (runtime/cpu_affinity.h): after pinning, every pool thread may
// run on exactly one CPU, the i-th of the allowed set (modulo its size).
#include <gtest/gtest.h>

#include <thread>

#include "core/thread_pool.h"
#include "runtime/cpu_affinity.h"

using namespace duet;
using namespace duet::runtime;

TEST(CpuAffinity, PinsEachPoolThreadToOneAllowedCpu) {
    const std::vector<int> cpus = allowed_cpus();
    ASSERT_FALSE(cpus.empty());
    std::thread t([&] {  // pin a fresh thread's pool: the test's main thread keeps its affinity
        ThreadPool pool(3);
        const auto before = pool_thread_affinity(pool);
        EXPECT_EQ(before[1], cpus);  // unpinned: the whole allowed set
        const std::vector<int> chosen = pin_pool_threads(pool);
        ASSERT_EQ(chosen.size(), 3u);
        const auto after = pool_thread_affinity(pool);
        for (size_t i = 0; i < 3; ++i) {
            EXPECT_EQ(chosen[i], cpus[i % cpus.size()]);
            EXPECT_EQ(after[i], std::vector<int>{chosen[i]}) << "thread " << i;
        }
    });
    t.join();
}
