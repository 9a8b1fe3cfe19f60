#include "runtime/moe_router.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace duet::runtime {

MoeRouting MoeRouting::of(const model::Hparams& hp) {
    MoeRouting r;
    r.gating = hp.expert_gating;
    r.n_expert = hp.n_expert;
    r.k = hp.n_expert_used;
    r.n_group = hp.n_expert_groups;
    r.n_group_used = hp.n_expert_groups_used;
    r.norm = hp.expert_weights_norm;
    r.scale = hp.expert_weights_scale;
    return r;
}

namespace {

// Descending by value, ties to the lower index: the order both top-k steps use.
void top_k(const std::vector<float>& v, int64_t k, std::vector<int32_t>& order) {
    order.resize(v.size());
    for (size_t i = 0; i < v.size(); ++i) order[i] = int32_t(i);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
        return v[size_t(a)] > v[size_t(b)] || (v[size_t(a)] == v[size_t(b)] && a < b);
    });
}

// Step 3: the experts outside the n_group_used best groups get a selection score of -inf.
void limit_groups(const MoeRouting& r, MoeRouterScratch& s) {
    const int64_t per_group = r.n_expert / r.n_group;
    s.group_score.assign(size_t(r.n_group), 0.0f);
    for (int64_t g = 0; g < r.n_group; ++g) {
        const float* v = s.select.data() + g * per_group;
        float first = -std::numeric_limits<float>::infinity(), second = first;
        for (int64_t i = 0; i < per_group; ++i) {
            if (v[i] > first) {
                second = first;
                first = v[i];
            } else if (v[i] > second) {
                second = v[i];
            }
        }
        s.group_score[size_t(g)] = first + second;
    }
    top_k(s.group_score, r.n_group_used, s.group_order);
    for (int64_t j = r.n_group_used; j < r.n_group; ++j) {
        float* v = s.select.data() + int64_t(s.group_order[size_t(j)]) * per_group;
        std::fill(v, v + per_group, -std::numeric_limits<float>::infinity());
    }
}

}  // namespace

void route_token(const MoeRouting& r, const float* logits, const float* bias, int32_t* ids, float* weights,
                 MoeRouterScratch& s) {
    const int64_t n = r.n_expert;
    DUET_CHECK(r.k >= 1 && r.k <= n, "moe router: top-{} of {} experts", r.k, n);
    s.score.resize(size_t(n));
    s.select.resize(size_t(n));
    if (r.gating == model::ExpertGating::SOFTMAX) {
        const float mx = *std::max_element(logits, logits + n);
        float sum = 0.0f;
        for (int64_t e = 0; e < n; ++e) sum += s.score[size_t(e)] = std::exp(logits[e] - mx);
        for (float& v : s.score) v /= sum;
    } else {
        for (int64_t e = 0; e < n; ++e) s.score[size_t(e)] = 1.0f / (1.0f + std::exp(-logits[e]));
    }
    for (int64_t e = 0; e < n; ++e) s.select[size_t(e)] = bias ? s.score[size_t(e)] + bias[e] : s.score[size_t(e)];
    if (r.n_group > 1 && r.n_group_used < r.n_group) {
        DUET_CHECK(n % r.n_group == 0 && n / r.n_group >= 2 && r.n_group_used >= 1 &&
                       r.n_group_used * (n / r.n_group) >= r.k,
                   "moe router: {} experts in {} groups, {} kept, top-{}", n, r.n_group, r.n_group_used, r.k);
        limit_groups(r, s);
    }
    top_k(s.select, r.k, s.order);
    float sum = 0.0f;
    for (int64_t j = 0; j < r.k; ++j) sum += s.score[size_t(s.order[size_t(j)])];
    const float norm = r.norm ? 1.0f / sum : 1.0f;
    for (int64_t j = 0; j < r.k; ++j) {
        ids[j] = s.order[size_t(j)];
        weights[j] = s.score[size_t(ids[j])] * norm * r.scale;
    }
}

}  // namespace duet::runtime
