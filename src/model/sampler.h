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
// Grammar constraint (optional, SamplerParams::grammar): only tokens the grammar accepts next
// may be drawn, and end-of-generation only once the text is complete (grammar/matcher.h).
// The unconstrained chain draws first; when its token is accepted it is kept, otherwise the
// rejected tokens' logits become -inf and the chain draws again. Without truncation
// (top-k/top-p/min-p off) this samples exactly the renormalised masked distribution: the
// first draw lands on allowed token t with p(t), else the redraw picks t with p(t) / p(allowed).
// Most steps then cost one token check instead of a full vocabulary mask.
//
// Closing within the budget (SamplerParams::max_tokens > 0): with R tokens left (this one
// included) a token is kept only when the grammar can still be completed after it in R - 2
// bytes, leaving one token for end-of-generation; if no token qualifies, in R - 1 bytes (the text
// completes exactly at the limit); if none does either, the plain grammar mask applies (the budget
// never could hold the shortest completion). A byte of the shortest completion is at most one
// token when the vocabulary has a token for each byte (byte-fallback SPM, byte-level BPE), so the
// output then always closes whenever max_tokens >= the grammar's min_bytes_to_end() + 1 at the start.
//
// Thread safety: a Sampler is per-sequence state; use it from one thread at a time.
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <vector>

#include "model/grammar/matcher.h"

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
    std::shared_ptr<const grammar::Grammar> grammar;           // optional output constraint
    std::shared_ptr<const grammar::TokenTable> grammar_tokens; // required with grammar (same vocabulary)
    int64_t max_tokens = 0;  // with a grammar: the tokens the generation may produce (0 = no closing reserve)
};

// Throws duet::Error "sampler: <name> = <value> is out of range (allowed: ...)".
void validate(const SamplerParams& p);

class Sampler {
public:
    Sampler(SamplerParams params, int64_t n_vocab);  // validates
    // logits: [n_vocab] floats, not modified. Returns the chosen token id. Does not accept it.
    int32_t sample(const float* logits);
    // Records a token (prompt or generated) for the penalties. Accepting the token sample()
    // just returned also advances the grammar.
    void accept(int32_t token);
    // Forgets the history and re-seeds the generator.
    void reset();

    const SamplerParams& params() const { return params_; }
    // The logits after the penalties (for tests and diagnostics).
    std::vector<float> penalized(const float* logits) const;
    // The grammar's state (nullptr without a grammar).
    const grammar::Matcher* matcher() const { return matcher_.get(); }

private:
    SamplerParams params_;
    int64_t n_vocab_;
    std::mt19937_64 rng_;
    std::deque<int32_t> history_;
    std::unique_ptr<grammar::Matcher> matcher_;
    int32_t last_sampled_ = -1;  // the token sample() returned, until accept() takes it
    int64_t n_generated_ = 0;    // sampled tokens accepted since reset (counts toward max_tokens)
    std::vector<uint8_t> allowed_;
    double uniform01();
    int32_t draw(const std::vector<float>& logits);
    int32_t sample_constrained(std::vector<float>& logits);
    int32_t mask_and_draw(std::vector<float>& logits, const std::vector<uint8_t>& allowed);
};

}  // namespace duet::model
