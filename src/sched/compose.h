#pragma once
// What one engine step feeds each sequence (chunked prefill, Sarathi-style): the step's
// composition policy, shared by `duet run` (runtime/generator.h), the server's batcher and the
// simulator (sched/scheduler.h).
//
// The policy, stated: decode first (every sequence with exactly one unfed token advances one
// token each step, so time between tokens is bounded by one step), then the prompt token budget
// goes to the prompt with the fewest tokens left, then the next (shortest remaining prefill
// first: a short request is not held behind a long prompt); a prompt passed over
// kMaxPrefillWaitSteps steps in a row goes first (bounded wait for long prompts). Decode tokens
// count against the budget too; they are never refused.
#include <cstdint>
#include <span>
#include <vector>

namespace duet::sched {

// Steps a prompt may be passed over before it is fed ahead of shorter ones.
inline constexpr int64_t kMaxPrefillWaitSteps = 4;

struct FeedInput {
    int64_t unfed = 0;          // tokens known but not yet computed (0: nothing to feed)
    int64_t prefill_waits = 0;  // consecutive steps this prompt got no tokens
};

// Tokens to feed each input this step ([inputs.size()], 0 = none). Pure.
std::vector<int64_t> compose_feeds(std::span<const FeedInput> inputs, int64_t token_budget);

// prefill_waits after a step that fed `fed` tokens to a sequence with `unfed` tokens unfed
// before it: reset when fed, one more when a prompt (unfed > 1) was passed over.
inline int64_t next_prefill_waits(int64_t waits, int64_t unfed, int64_t fed) {
    if (unfed <= 1) return waits;
    return fed > 0 ? 0 : waits + 1;
}

}  // namespace duet::sched
