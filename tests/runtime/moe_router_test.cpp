// The MoE router (runtime/moe_router.h) on hand-computed cases: group-limited routing chooses
// other experts than plain top-k, the selection bias moves the choice but not the weights.
#include "runtime/moe_router.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace duet;
using namespace duet::runtime;

namespace {

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// 8 experts in 4 groups of 2: {0, 1} {2, 3} {4, 5} {6, 7}. Sigmoid scores:
//   e0 0.953  e1 0.047 | e2 0.881  e3 0.047 | e4 0.769  e5 0.731 | e6 0.623  e7 0.623
// Plain top-2: e0, e2. Group scores (sum of a group's two): 1.000, 0.928, 1.500, 1.245, so the
// 2 best groups are {4, 5} and {6, 7}, and the top-2 among their experts is e4, e5.
const std::vector<float> kLogits = {3.0f, -3.0f, 2.0f, -3.0f, 1.2f, 1.0f, 0.5f, 0.5f};

MoeRouting deepseek_v3_like(int64_t n_group, int64_t n_group_used) {
    MoeRouting r;
    r.gating = model::ExpertGating::SIGMOID;
    r.n_expert = 8;
    r.k = 2;
    r.n_group = n_group;
    r.n_group_used = n_group_used;
    r.norm = true;
    r.scale = 2.5f;
    return r;
}

struct Routed {
    std::vector<int32_t> ids;
    std::vector<float> w;
};

Routed route(const MoeRouting& r, const float* bias = nullptr) {
    Routed out{std::vector<int32_t>(size_t(r.k)), std::vector<float>(size_t(r.k))};
    MoeRouterScratch scratch;
    route_token(r, kLogits.data(), bias, out.ids.data(), out.w.data(), scratch);
    return out;
}

}  // namespace

TEST(MoeRouter, PlainTopKTakesTheLargestScores) {
    const Routed got = route(deepseek_v3_like(0, 0));
    EXPECT_EQ(got.ids, (std::vector<int32_t>{0, 2}));
    const float s0 = sigmoid(3.0f), s2 = sigmoid(2.0f);
    EXPECT_FLOAT_EQ(got.w[0], 2.5f * s0 / (s0 + s2));
    EXPECT_FLOAT_EQ(got.w[1], 2.5f * s2 / (s0 + s2));
}

TEST(MoeRouter, GroupLimitedRoutingChoosesWithinTheBestGroups) {
    const Routed got = route(deepseek_v3_like(4, 2));
    EXPECT_EQ(got.ids, (std::vector<int32_t>{4, 5}));
    const float s4 = sigmoid(1.2f), s5 = sigmoid(1.0f);
    EXPECT_FLOAT_EQ(got.w[0], 2.5f * s4 / (s4 + s5));
    EXPECT_FLOAT_EQ(got.w[1], 2.5f * s5 / (s4 + s5));
    // one group kept: {4, 5} alone
    EXPECT_EQ(route(deepseek_v3_like(4, 1)).ids, (std::vector<int32_t>{4, 5}));
    // three kept: {0, 1} (1.000) joins, and e0 wins; e4 is next
    EXPECT_EQ(route(deepseek_v3_like(4, 3)).ids, (std::vector<int32_t>{0, 4}));
}

TEST(MoeRouter, EveryGroupKeptIsPlainTopK) {
    EXPECT_EQ(route(deepseek_v3_like(4, 4)).ids, route(deepseek_v3_like(0, 0)).ids);
    EXPECT_EQ(route(deepseek_v3_like(2, 2)).ids, (std::vector<int32_t>{0, 2}));
}

TEST(MoeRouter, GroupsRankByTheBiasedScoresAndWeightsStayUnbiased) {
    // +1 on e3: selection e3 1.047, group {2, 3} 0.881 + 1.047 = 1.928, the best; the kept groups
    // are {2, 3} and {4, 5}, and the top-2 by selection score e3, e2. The weights come from the
    // unbiased scores 0.047 and 0.881.
    const std::vector<float> bias = {0, 0, 0, 1.0f, 0, 0, 0, 0};
    const Routed got = route(deepseek_v3_like(4, 2), bias.data());
    EXPECT_EQ(got.ids, (std::vector<int32_t>{3, 2}));
    const float s3 = sigmoid(-3.0f), s2 = sigmoid(2.0f);
    EXPECT_FLOAT_EQ(got.w[0], 2.5f * s3 / (s2 + s3));
    EXPECT_FLOAT_EQ(got.w[1], 2.5f * s2 / (s2 + s3));
}

TEST(MoeRouter, SoftmaxGatingWithoutNormKeepsTheProbabilities) {
    MoeRouting r = deepseek_v3_like(0, 0);
    r.gating = model::ExpertGating::SOFTMAX;
    r.norm = false;
    r.scale = 1.0f;
    const Routed got = route(r);
    EXPECT_EQ(got.ids, (std::vector<int32_t>{0, 2}));
    float z = 0.0f;
    for (float l : kLogits) z += std::exp(l);
    EXPECT_NEAR(got.w[0], std::exp(3.0f) / z, 1e-6f);
    EXPECT_NEAR(got.w[1], std::exp(2.0f) / z, 1e-6f);
}
