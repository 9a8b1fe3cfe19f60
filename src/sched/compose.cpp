#include "sched/compose.h"

#include <algorithm>
#include <numeric>

namespace duet::sched {

std::vector<int64_t> compose_feeds(std::span<const FeedInput> in, int64_t token_budget) {
    std::vector<int64_t> feed(in.size(), 0);
    int64_t budget = token_budget;
    for (size_t i = 0; i < in.size(); ++i)
        if (in[i].unfed == 1) {
            feed[i] = 1;
            --budget;
        }
    std::vector<size_t> prompts;
    for (size_t i = 0; i < in.size(); ++i)
        if (in[i].unfed > 1) prompts.push_back(i);
    std::stable_sort(prompts.begin(), prompts.end(), [&](size_t a, size_t b) {
        const bool sa = in[a].prefill_waits >= kMaxPrefillWaitSteps, sb = in[b].prefill_waits >= kMaxPrefillWaitSteps;
        if (sa != sb) return sa;
        return in[a].unfed < in[b].unfed;
    });
    for (size_t i : prompts) {
        feed[i] = std::clamp<int64_t>(budget, 0, in[i].unfed);
        budget -= feed[i];
    }
    return feed;
}

}  // namespace duet::sched
