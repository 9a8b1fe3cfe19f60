// serving::BatchTwin (serving/batch_twin.h): each sequence's modelled TTFT and TPOT are the
// modelled times of the steps it really waited and ran in, checked against a clock computed by
// hand for a step timer of 10 ns per token + 5 ns per chunk (and twice that for a second policy).
#include <gtest/gtest.h>

#include "serving/batch_twin.h"

namespace duet::serving {
namespace {

double tokens_ns(const sched::Step& s) {
    double ns = 0;
    for (const sched::Chunk& c : s.chunks) ns += 10.0 * double(c.n_tokens) + 5.0;
    return ns;
}

BatchTwin two_policies(size_t max_tracked = 4096) {
    return BatchTwin({{"a", tokens_ns}, {"b", [](const sched::Step& s) { return 2 * tokens_ns(s); }}}, max_tracked);
}

sched::Step step(std::vector<sched::Chunk> chunks) {
    sched::Step s;
    s.chunks = std::move(chunks);
    return s;
}

TEST(BatchTwin, TimesAreThoseOfTheStepsEachSequenceWaitedAndRanIn) {
    BatchTwin t = two_policies();
    const std::vector<sched::SeqId> first = {0}, second = {1}, none = {};
    t.observe(first, step({{0, 0, 8, true}}));                      // 85: seq 0's prompt, its first token
    t.observe(second, step({{0, 8, 1, true}, {1, 0, 4, false}}));   // 60: seq 1's first chunk
    t.observe(none, step({{0, 9, 1, true}, {1, 4, 4, true}}));      // 60: seq 1's first token
    t.observe(none, step({}));                                      // nothing ran: 0
    EXPECT_EQ(t.steps(), 4);
    EXPECT_EQ(t.modelled_ns(), (std::vector<double>{205, 410}));
    const auto s0 = t.take(0);
    ASSERT_TRUE(s0);
    EXPECT_DOUBLE_EQ((*s0)[0].ttft_ns, 85);
    EXPECT_DOUBLE_EQ((*s0)[0].tpot_ns, 60);  // (60 + 60) / 2
    EXPECT_EQ((*s0)[0].tokens, 3);
    EXPECT_DOUBLE_EQ((*s0)[1].ttft_ns, 170);
    EXPECT_DOUBLE_EQ((*s0)[1].tpot_ns, 120);
    const auto s1 = t.take(1);
    ASSERT_TRUE(s1);
    EXPECT_DOUBLE_EQ((*s1)[0].ttft_ns, 120);  // it waited through both of its steps
    EXPECT_DOUBLE_EQ((*s1)[0].tpot_ns, 0);
    EXPECT_EQ((*s1)[0].tokens, 1);
    EXPECT_FALSE(t.take(0));  // read once
    EXPECT_FALSE(t.take(7));  // never arrived
}

TEST(BatchTwin, AQueuedSequenceCountsTheStepsItWaitedThrough) {
    BatchTwin t = two_policies();
    const std::vector<sched::SeqId> both = {0, 1}, none = {};
    t.observe(both, step({{0, 0, 3, true}}));  // 35: seq 1 is not admitted yet
    t.observe(none, step({{0, 3, 1, true}}));  // 15
    t.observe(none, step({{1, 0, 2, true}}));  // 25
    const auto s1 = t.take(1);
    ASSERT_TRUE(s1);
    EXPECT_DOUBLE_EQ((*s1)[0].ttft_ns, 75);
    EXPECT_EQ((*s1)[0].tokens, 1);
}

TEST(BatchTwin, TheOldestSequencesAreDroppedPastTheLimit) {
    BatchTwin t = two_policies(2);
    const std::vector<sched::SeqId> three = {0, 1, 2};
    t.observe(three, step({{0, 0, 1, true}}));
    EXPECT_FALSE(t.take(0));
    EXPECT_TRUE(t.take(1));
    EXPECT_TRUE(t.take(2));
}

}  // namespace
}  // namespace duet::serving
