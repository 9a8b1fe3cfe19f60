// kernels::ReadProbe (kernels/membw.h), the read probe bench_engine interleaves with decode steps:
// its byte and time accounting over passes that wrap around the buffer, and its argument check.
#include <gtest/gtest.h>

#include "core/error.h"
#include "kernels/membw.h"

namespace duet::kernels {
namespace {

TEST(ReadProbe, CountsTheBytesAndTimeOfEveryPass) {
    ThreadPool pool(2);
    ReadProbe probe(pool, size_t(8) << 20, size_t(3) << 20);  // 2 whole slices, then back to the start
    EXPECT_EQ(probe.slice_bytes(), size_t(3) << 20);
    EXPECT_EQ(probe.gbps(), 0.0);
    int64_t sum_ns = 0;
    for (int i = 0; i < 5; ++i) {
        const int64_t ns = probe.pass();
        EXPECT_GT(ns, 0);
        sum_ns += ns;
    }
    EXPECT_EQ(probe.total_bytes(), 5.0 * double(size_t(3) << 20));
    EXPECT_EQ(probe.total_ns(), sum_ns);
    EXPECT_DOUBLE_EQ(probe.gbps(), probe.total_bytes() / double(sum_ns));
}

TEST(ReadProbe, RejectsASliceLargerThanTheBuffer) {
    ThreadPool pool(1);
    try {
        ReadProbe probe(pool, size_t(1) << 20, size_t(2) << 20);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "ReadProbe: slice_bytes 2097152 is larger than buffer_bytes 1048576");
    }
}

}  // namespace
}  // namespace duet::kernels
