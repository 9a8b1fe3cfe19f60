// The rate search of --rate-sweep (serving/rate_sweep.h) on a synthetic placement whose SLOs hold
// up to a known rate: one rate at a time and `width` rates per round find the same threshold to
// within the bracket the header promises, and width 1 is the one-at-a-time search exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "serving/rate_sweep.h"

using namespace duet::serving;

namespace {

// Every request within the SLOs up to `limit` req/s, none above.
ServingSummary at(double rate, double limit) {
    ServingSummary s;
    s.requests = 100;
    s.good = rate <= limit ? 100 : 0;
    s.requests_per_s = rate;
    return s;
}

BatchRun batch(double limit, std::vector<int>& sizes) {
    return [limit, &sizes](const std::vector<double>& rates) {
        sizes.push_back(int(rates.size()));
        std::vector<ServingSummary> out;
        for (double r : rates) out.push_back(at(r, limit));
        return out;
    };
}

}  // namespace

TEST(RateSweep, OneRateAtATimeBracketsTheLimitBySixteenthsOfAnOctave) {
    const SweepResult r = rate_sweep([](double rate) { return at(rate, 10.0); }, 1.0, 0.9, 4);
    EXPECT_LE(r.max_rate_rps, 10.0);
    EXPECT_GT(r.max_rate_rps, 10.0 / std::pow(2.0, 1.0 / 16));
    // 1, 2, 4, 8 meet, 16 misses; then 4 bisections
    EXPECT_EQ(r.points.size(), 5u + 4u);
}

TEST(RateSweep, WidthOneIsTheOneAtATimeSearch) {
    std::vector<int> sizes;
    const SweepResult a = rate_sweep([](double rate) { return at(rate, 7.3); }, 1.0, 0.9, 4);
    const SweepResult b = rate_sweep_batched(batch(7.3, sizes), 1, 1.0, 0.9, 4);
    ASSERT_EQ(a.points.size(), b.points.size());
    for (size_t i = 0; i < a.points.size(); ++i) EXPECT_EQ(a.points[i].rate_rps, b.points[i].rate_rps);
    EXPECT_EQ(a.max_rate_rps, b.max_rate_rps);
    for (int n : sizes) EXPECT_EQ(n, 1);
}

TEST(RateSweep, WiderRoundsBracketAtLeastAsNarrowInFewerRounds) {
    for (int width : {2, 3, 7}) {
        SCOPED_TRACE(width);
        for (double limit : {0.3, 7.3, 100.0}) {
            std::vector<int> sizes;
            const SweepResult r = rate_sweep_batched(batch(limit, sizes), width, 1.0, 0.9, 4);
            EXPECT_LE(r.max_rate_rps, limit);
            EXPECT_GT(r.max_rate_rps, limit / std::pow(2.0, 1.0 / 16)) << "limit " << limit;
            for (size_t i = 1; i < sizes.size(); ++i) EXPECT_EQ(sizes[i], width);  // after the start rate
            std::vector<int> one;
            rate_sweep_batched(batch(limit, one), 1, 1.0, 0.9, 4);
            EXPECT_LT(sizes.size(), one.size()) << "rounds";
        }
    }
}
