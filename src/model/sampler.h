#pragma once
// Token sampler with llama.cpp's default chain order:
//   penalties -> top-k -> top-p -> min-p -> temperature -> draw.
// top-p and min-p therefore see the probabilities at temperature 1 (as in llama.cpp);
// temperature only reshapes the distribution of the tokens that survive them.
// temperature == 0 is greedy: argmax of the penalised logits (lowest id on ties).
//
// Penalties over the last repeat_last_n accepted tokens (-1 = all, 0 = none):
//   repetition (llama.cpp / CTRL): logit > 0 ? logit / repeat_penalty : logit * repeat_penalty;
//   frequency, presence (OpenAI):  logit -= count * frequency_penalty + (count > 0) * presence_penalty.
//
// Randomness: std::mt19937_64 seeded with `seed`; the uniform draw is built from the raw
// 64-bit output, so the same seed gives the same choices on every platform.
// Thread safety: a Sampler is per-sequence state; use it from one thread at a time.
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

namespace duet::model {

struct SamplerParams {
    float temperature = 0.8f;       // >= 0; 0 = greedy
    int32_t top_k = 40;             // >= 0; 0 = disabled
    float top_p = 0.95f;            // (0, 1]; 1 = disabled
    float min_p = 0.05f;            // [0, 1]; 0 = disabled
    float repeat_penalty = 1.0f;    // > 0; 1 = disabled
    int32_t repeat_last_n = 64;     // >= -1
    float frequency_penalty = 0.0f; // [-2, 2]
    float presence_penalty = 0.0f;  // [-2, 2]
    uint64_t seed = 0;
};

// Throws duet::Error "sampler: <name> = <value> is out of range (allowed: ...)".
void validate(const SamplerParams& p);

class Sampler {
public:
    Sampler(SamplerParams params, int64_t n_vocab);  // validates
    // logits: [n_vocab] floats, not modified. Returns the chosen token id. Does not accept it.
    int32_t sample(const float* logits);
    // Records a token (prompt or generated) for the penalties.
    void accept(int32_t token);
    // Forgets the history and re-seeds the generator.
    void reset();

    const SamplerParams& params() const { return params_; }
    // The logits after the penalties (for tests and diagnostics).
    std::vector<float> penalized(const float* logits) const;

private:
    SamplerParams params_;
    int64_t n_vocab_;
    std::mt19937_64 rng_;
    std::deque<int32_t> history_;
    double uniform01();
};

}  // namespace duet::model
