#pragma once
// The prompt the engine comparison tests (fusion, the PIM layout of experts and heads) run, and
// its forward: one batched prefill into a fresh sequence, every position's logits.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "runtime/engine.h"

namespace duet::test {

// Nine token ids spread over a vocabulary of n_vocab.
inline std::vector<int32_t> probe_prompt(int64_t n_vocab) {
    std::vector<int32_t> prompt;
    for (int i = 0; i < 9; ++i) prompt.push_back(int32_t((i * 11 + 3) % n_vocab));
    return prompt;
}

// The prompt's forward into sequence `s` (its KV stays in `s`): the logits of every position.
inline std::vector<float> prompt_logits(runtime::Engine& e, const std::vector<int32_t>& prompt, runtime::SequenceKv& s) {
    runtime::SeqInput in{prompt, &s, true};
    runtime::ForwardOutput out;
    EXPECT_EQ(e.forward({&in, 1}, out), runtime::ForwardStatus::OK);
    return out.logits;
}

}  // namespace duet::test
