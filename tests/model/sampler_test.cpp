// Sampler: greedy, seeded reproducibility, frequencies vs an independent computation of the
// filtered distribution, exact penalty arithmetic, parameter validation.
#include "model/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "../error_message.h"

namespace duet::model {
namespace {

using test::error_of;

std::vector<float> random_logits(int n, uint64_t seed) {
    std::mt19937_64 g(seed);
    std::normal_distribution<float> d(0, 2);
    std::vector<float> l(n);
    for (auto& x : l) x = d(g);
    return l;
}

TEST(Sampler, GreedyPicksArgmaxLowestIdOnTies) {
    SamplerParams p;
    p.temperature = 0;
    Sampler s(p, 5);
    const float l[5] = {0.5f, 3.0f, -1.0f, 3.0f, 2.9f};
    EXPECT_EQ(s.sample(l), 1);
    Sampler s100(p, 100);
    for (int i = 0; i < 20; ++i) {
        auto r = random_logits(100, i);
        EXPECT_EQ(s100.sample(r.data()), std::max_element(r.begin(), r.end()) - r.begin());
    }
}

TEST(Sampler, TopK1EqualsGreedy) {
    SamplerParams p;
    p.temperature = 1.5f;
    p.top_k = 1;
    p.top_p = 1;
    p.min_p = 0;
    Sampler s(p, 1000);
    for (int i = 0; i < 50; ++i) {
        auto r = random_logits(1000, 100 + i);
        EXPECT_EQ(s.sample(r.data()), std::max_element(r.begin(), r.end()) - r.begin());
    }
}

std::vector<int32_t> draw(Sampler& s, int n, int vocab) {
    std::vector<int32_t> out;
    for (int i = 0; i < n; ++i) {
        auto r = random_logits(vocab, i);
        out.push_back(s.sample(r.data()));
        s.accept(out.back());
    }
    return out;
}

TEST(Sampler, SameSeedSameChoices) {
    SamplerParams p;
    p.temperature = 1.0f;
    p.top_k = 0;
    p.min_p = 0;
    p.repeat_penalty = 1.1f;
    p.seed = 42;
    Sampler a(p, 500), b(p, 500);
    const auto sa = draw(a, 200, 500);
    EXPECT_EQ(sa, draw(b, 200, 500));
    a.reset();
    EXPECT_EQ(sa, draw(a, 200, 500));
    p.seed = 43;
    Sampler c(p, 500);
    EXPECT_NE(sa, draw(c, 200, 500));
}

// Independent reference: sort by logit, softmax at T = 1, keep the top-k, the smallest head
// with mass >= top_p, and those with p >= min_p * p_max; then softmax(logit / T) over the kept.
std::vector<double> expected_distribution(const std::vector<float>& l, const SamplerParams& p) {
    const int n = static_cast<int>(l.size());
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return l[a] > l[b]; });
    if (p.top_k > 0) order.resize(std::min(n, p.top_k));
    double z = 0;
    for (int i : order) z += std::exp(l[i]);
    std::vector<int> kept;
    double cum = 0;
    const double pmax = std::exp(l[order[0]]) / z;
    for (int i : order) {
        const double pi = std::exp(l[i]) / z;
        if (pi < p.min_p * pmax) break;
        kept.push_back(i);
        cum += pi;
        if (cum >= p.top_p) break;
    }
    std::vector<double> out(n, 0.0);
    double zt = 0;
    for (int i : kept) zt += std::exp(l[i] / p.temperature);
    for (int i : kept) out[i] = std::exp(l[i] / p.temperature) / zt;
    return out;
}

void expect_frequencies(const std::vector<float>& l, const SamplerParams& p) {
    const auto want = expected_distribution(l, p);
    Sampler s(p, static_cast<int64_t>(l.size()));
    const int kDraws = 200000;
    std::vector<int> count(l.size(), 0);
    for (int i = 0; i < kDraws; ++i) ++count[s.sample(l.data())];
    for (size_t i = 0; i < l.size(); ++i) {
        if (want[i] == 0) {
            EXPECT_EQ(count[i], 0) << "token " << i << " should be filtered out";
        } else {
            // 5 standard deviations of a binomial frequency.
            const double tol = 5 * std::sqrt(want[i] * (1 - want[i]) / kDraws);
            EXPECT_NEAR(static_cast<double>(count[i]) / kDraws, want[i], tol) << "token " << i;
        }
    }
}

const std::vector<float> kLogits = {2.0f, 1.5f, 1.0f, 0.5f, 0.0f, -0.5f, -1.0f, -3.0f};

TEST(Sampler, FrequenciesMatchTemperatureSoftmax) {
    SamplerParams p;
    p.top_k = 0, p.top_p = 1, p.min_p = 0, p.temperature = 0.7f;
    expect_frequencies(kLogits, p);
    p.temperature = 1.6f;
    expect_frequencies(kLogits, p);
}

TEST(Sampler, FrequenciesMatchTopK) {
    SamplerParams p;
    p.top_k = 3, p.top_p = 1, p.min_p = 0, p.temperature = 1.0f;
    expect_frequencies(kLogits, p);
}

TEST(Sampler, FrequenciesMatchTopP) {
    SamplerParams p;
    p.top_k = 0, p.top_p = 0.8f, p.min_p = 0, p.temperature = 0.9f;
    const auto want = expected_distribution(kLogits, p);
    EXPECT_EQ(std::count_if(want.begin(), want.end(), [](double x) { return x > 0; }), 4);  // the cut is real
    expect_frequencies(kLogits, p);
}

TEST(Sampler, FrequenciesMatchMinP) {
    SamplerParams p;
    p.top_k = 0, p.top_p = 1, p.min_p = 0.2f, p.temperature = 1.3f;
    const auto want = expected_distribution(kLogits, p);
    EXPECT_EQ(std::count_if(want.begin(), want.end(), [](double x) { return x > 0; }), 4);  // e^-1.5 > 0.2 > e^-2
    expect_frequencies(kLogits, p);
}

TEST(Sampler, PenaltiesFollowLlamaCppAndOpenAi) {
    SamplerParams p;
    p.repeat_penalty = 1.5f;
    p.frequency_penalty = 0.5f;
    p.presence_penalty = 0.25f;
    p.repeat_last_n = 3;
    Sampler s(p, 6);
    const float l[6] = {1.0f, 2.0f, 3.0f, 2.0f, -1.0f, 0.0f};
    for (int t : {1, 3, 3, 4}) s.accept(t);  // window of 3: {3, 3, 4}; token 1 has left it
    const auto out = s.penalized(l);
    EXPECT_FLOAT_EQ(out[0], 1.0f);
    EXPECT_FLOAT_EQ(out[1], 2.0f);
    EXPECT_FLOAT_EQ(out[2], 3.0f);
    EXPECT_FLOAT_EQ(out[3], 2.0f / 1.5f - 2 * 0.5f - 0.25f);  // positive: divided
    EXPECT_FLOAT_EQ(out[4], -1.0f * 1.5f - 0.5f - 0.25f);    // negative: multiplied
    EXPECT_FLOAT_EQ(out[5], 0.0f);
    p.repeat_last_n = 0;
    Sampler off(p, 6);
    off.accept(2);
    EXPECT_FLOAT_EQ(off.penalized(l)[2], 3.0f);
    p.repeat_last_n = -1;
    Sampler all(p, 6);
    for (int i = 0; i < 1000; ++i) all.accept(i == 0 ? 0 : 5);
    EXPECT_FLOAT_EQ(all.penalized(l)[0], 1.0f / 1.5f - 0.5f - 0.25f);
}

TEST(Sampler, PenaltyChangesTheGreedyChoice) {
    SamplerParams p;
    p.temperature = 0;
    p.repeat_penalty = 2.0f;
    Sampler s(p, 3);
    const float l[3] = {1.0f, 1.8f, 0.0f};
    EXPECT_EQ(s.sample(l), 1);
    s.accept(1);
    EXPECT_EQ(s.sample(l), 0);  // 1.8 / 2 = 0.9 < 1.0
}

TEST(Sampler, InvalidParametersNameTheParameterAndRange) {
    auto with = [](auto f) {
        SamplerParams p;
        f(p);
        return error_of([&] { Sampler s(p, 10); });
    };
    EXPECT_EQ(with([](SamplerParams& p) { p.temperature = -1; }),
              "sampler: temperature = -1 is out of range (allowed: >= 0, 0 = greedy)");
    EXPECT_EQ(with([](SamplerParams& p) { p.top_k = -2; }), "sampler: top_k = -2 is out of range (allowed: >= 0, 0 = disabled)");
    EXPECT_EQ(with([](SamplerParams& p) { p.top_p = 0; }),
              "sampler: top_p = 0 is out of range (allowed: 0 < top_p <= 1, 1 = disabled)");
    EXPECT_EQ(with([](SamplerParams& p) { p.min_p = 1.5f; }), "sampler: min_p = 1.5 is out of range (allowed: 0 to 1, 0 = disabled)");
    EXPECT_EQ(with([](SamplerParams& p) { p.repeat_penalty = 0; }),
              "sampler: repeat_penalty = 0 is out of range (allowed: > 0, 1 = disabled)");
    EXPECT_EQ(with([](SamplerParams& p) { p.repeat_last_n = -2; }),
              "sampler: repeat_last_n = -2 is out of range (allowed: >= -1, -1 = all tokens, 0 = disabled)");
    EXPECT_EQ(with([](SamplerParams& p) { p.frequency_penalty = 2.5f; }),
              "sampler: frequency_penalty = 2.5 is out of range (allowed: -2 to 2)");
    EXPECT_EQ(with([](SamplerParams& p) { p.presence_penalty = -3; }),
              "sampler: presence_penalty = -3 is out of range (allowed: -2 to 2)");
    EXPECT_EQ(with([](SamplerParams& p) { p.temperature = NAN; }),
              "sampler: temperature = nan is out of range (allowed: >= 0, 0 = greedy)");
    EXPECT_EQ(error_of([] { Sampler s(SamplerParams{}, 0); }), "sampler: n_vocab = 0 is out of range (allowed: > 0)");
    EXPECT_EQ(error_of([] {
                  Sampler s(SamplerParams{}, 4);
                  s.accept(4);
              }),
              "sampler: accepted token 4 is out of range (allowed: 0 to 3)");
}

}  // namespace
}  // namespace duet::model
