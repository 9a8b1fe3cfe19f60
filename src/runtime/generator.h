#pragma once
// Text generation. One step loop serves `duet run` (Generator, one sequence) and the server
// (Batcher, many sequences): step_runs() feeds every SequenceRun's unfed tokens in one
// Engine::forward (decode tokens first, then prompt chunks within a token budget) and lets each
// run whose tokens are all fed sample its next token and decide, by the same rules, whether it
// stops (StopReason): an end-of-generation token, a stop string, max tokens, the context.
// Text streams through a StreamDecoder (never splits a UTF-8 character).
//
// Generator: prompt → tokens (BOS per the file's metadata) → one batched prefill forward (GEMM)
// → token-by-token decode (GEMV); measures llama.cpp-style timings. It is the per-sequence
// state (block table + sampler) on a shared Engine and releases its KV blocks when destroyed.
// Thread safety: one thread per engine.
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/sampler.h"
#include "runtime/engine.h"
#include "sched/compose.h"

namespace duet::model {
class StreamDecoder;
}

namespace duet::runtime {

// Why a sequence stopped: one set for `duet run` and the server.
enum class StopReason {
    NONE,           // still generating
    EOG,            // an end-of-generation token was sampled (not part of the output)
    STOP_SEQUENCE,  // a stop string appeared in the text (the text ends before it)
    LENGTH,         // max tokens generated
    CONTEXT,        // the context (n_ctx) or the KV pool is full
    INCOMPLETE,     // end of generation where the grammar cannot end: no token continues the text
                    // (a vocabulary without a token for some byte; docs/grammar.md, closing reserve)
    CANCELLED,      // the client went away
    ERROR,          // the engine step failed
};
const char* stop_reason_name(StopReason r);  // "eog", "stop sequence", "length", "context", "incomplete", ...
// OpenAI's: "stop" (EOG, stop sequence), "length" (also context and incomplete: the text is not
// complete), "cancelled", "error"
const char* finish_reason(StopReason r);
// Why an end-of-generation token ends a sequence: EOG, or INCOMPLETE when its grammar (if any)
// cannot end where the text stands.
StopReason end_of_generation(const model::Sampler& sampler);

struct RunLimits {
    int64_t max_tokens = -1;        // < 0: until EOG or the context is full; 0: none
    bool ignore_eos = false;        // keep generating past end-of-generation tokens
    std::vector<std::string> stop;  // text stop sequences (not included in the output)
};

// One sequence being generated: its tokens (prompt, then every generated token fed back), its
// sampler, its streamed text and its stop rules. The owner holds the SequenceKv (`kv`, which
// must outlive the run) and may release it and re-feed every token later (preemption).
class SequenceRun {
public:
    // on_text (optional) receives complete UTF-8 text, held back while it could still become a
    // stop string; on_token (optional) each generated id.
    SequenceRun(const Model& model, const model::SamplerParams& sampling, std::vector<int32_t> prompt,
                RunLimits limits, SequenceKv& kv, std::function<void(std::string_view)> on_text = {},
                std::function<void(int32_t)> on_token = {});
    ~SequenceRun();
    SequenceRun(const SequenceRun&) = delete;
    SequenceRun& operator=(const SequenceRun&) = delete;

    const std::vector<int32_t>& tokens() const { return tokens_; }
    SequenceKv& kv() { return kv_; }
    int64_t unfed() const { return int64_t(tokens_.size()) - kv_.n_tokens(); }
    int64_t n_prompt() const { return n_prompt_; }
    const std::vector<int32_t>& generated() const { return generated_; }  // the output (no EOG)
    int64_t n_sampled() const { return n_sampled_; }  // generated, plus a final EOG token
    int64_t first_token_ns() const { return first_token_ns_; }  // now_ns() of the first sample; 0: none
    StopReason stop_reason() const { return reason_; }
    bool stopped() const { return reason_ != StopReason::NONE; }

    // Ends the run (first reason wins). Unless CANCELLED or ERROR, the text still held back
    // (decoder bytes, a possible stop-string prefix) is sent.
    void stop(StopReason r);
    // Optional: every sampled id with the logits it was drawn from ([n_vocab], valid during the
    // call only), before the end-of-generation check (logprobs).
    void set_on_sample(std::function<void(int32_t, const float*)> f) { on_sample_ = std::move(f); }
    // All tokens fed: samples the next one from `logits` ([n_vocab]) and applies the stop rules.
    // step_runs calls it; a run that forked another's KV (n > 1 completions) calls it with the
    // logits of the prompt it shares.
    void advance(const float* logits, int64_t n_ctx);

private:
    friend ForwardStatus step_runs(Engine& engine, std::span<SequenceRun* const> runs, int64_t token_budget,
                                   const std::function<void(SequenceRun&, const float*)>& before_sample);
    friend ForwardStatus run_feeds(Engine& engine, std::span<SequenceRun* const> runs, std::span<const int64_t> feeds,
                                   const std::function<void(SequenceRun&, const float*)>& before_sample,
                                   const std::function<void(SequenceRun&, const std::exception&)>& on_sample_error);
    void emit_text(bool final);

    const Model& model_;
    std::vector<int32_t> tokens_;
    int64_t n_prompt_ = 0;
    RunLimits limits_;
    SequenceKv& kv_;
    std::unique_ptr<model::Sampler> sampler_;
    std::unique_ptr<model::StreamDecoder> decoder_;  // set when on_text is
    std::function<void(std::string_view)> on_text_;
    std::function<void(int32_t)> on_token_;
    std::function<void(int32_t, const float*)> on_sample_;
    std::vector<int32_t> generated_;
    int64_t n_sampled_ = 0;
    int64_t first_token_ns_ = 0;
    std::string text_;   // decoded text so far
    size_t sent_ = 0;    // bytes of text_ handed to on_text
    int64_t prefill_waits_ = 0;  // consecutive steps this run's prompt got no tokens
    StopReason reason_ = StopReason::NONE;
};

using sched::kMaxPrefillWaitSteps;

// One engine step over the runs that have tokens to feed (stopped runs are skipped), composed by
// the shared policy of sched/compose.h (decode tokens first, one each, then prompt chunks within
// token_budget tokens, shortest remaining prompt first, a prompt passed over
// kMaxPrefillWaitSteps steps in a row first), in one forward (run_feeds). On KV_FULL nothing was
// computed or changed: the caller frees memory and calls again, or stops runs. CTX_EXCEEDED
// cannot happen for runs the caller keeps within the context (advance() stops them first).
// before_sample (optional) sees each run about to sample, with its logits.
ForwardStatus step_runs(Engine& engine, std::span<SequenceRun* const> runs, int64_t token_budget,
                        const std::function<void(SequenceRun&, const float*)>& before_sample = {});

// Executes a step whose composition was decided elsewhere (sched::Scheduler for the batcher):
// feeds[i] tokens of runs[i] (0: none) in one Engine::forward, in this order; each run whose
// tokens are then all fed samples its next token (before_sample first) and may stop.
// on_sample_error (optional): a run whose own sampling throws (advance: its sampler or grammar,
// its callbacks) is stopped with ERROR and handed to it with the exception, and the other runs
// sample as usual; the forward itself was complete, so every run's KV is valid. Without it the
// exception propagates, as one from the forward or from before_sample always does.
ForwardStatus run_feeds(Engine& engine, std::span<SequenceRun* const> runs, std::span<const int64_t> feeds,
                        const std::function<void(SequenceRun&, const float*)>& before_sample = {},
                        const std::function<void(SequenceRun&, const std::exception&)>& on_sample_error = {});

struct GenerateOptions {
    int64_t n_predict = 128;          // tokens to generate at most; < 0: until EOG or context full
    model::SamplerParams sampling;    // temperature 0 = greedy
    bool parse_special = false;       // text like "<|im_start|>" becomes control tokens (chat)
    bool add_bos = true;              // prepend BOS when the tokenizer's metadata asks for it
    // Keep the KV of the longest common prefix of this prompt and the tokens already cached by
    // this Generator (a multi-turn conversation resending its history) and prefill only the
    // rest. Off by default: a shorter prefill is a different GEMM shape, so logits may differ
    // from a full prefill in the last float bits.
    bool reuse_prefix = false;
    bool ignore_eos = false;          // generate n_predict tokens even past end-of-generation (scripted replays)
};

struct GenerateStats {
    double load_ms = 0;         // model load (from Model::load_ms)
    int64_t n_prompt = 0;       // prompt tokens
    int64_t n_prompt_cached = 0;  // of which reused from the cache (reuse_prefix), not prefilled
    double prefill_ms = 0;      // the prefill forward
    double ttft_ms = 0;         // prompt in → first generated token out (tokenize + prefill + sample)
    int64_t n_decode = 0;       // decode forwards (generated tokens after the first)
    double decode_ms = 0;
    int64_t n_generated = 0;    // tokens generated, including the first
    std::string stop_reason;    // stop_reason_name(): "eog", "length", "context"

    double prefill_tok_per_s() const {
        return prefill_ms > 0 ? double(n_prompt - n_prompt_cached) * 1e3 / prefill_ms : 0;
    }
    double decode_tok_per_s() const { return decode_ms > 0 ? double(n_decode) * 1e3 / decode_ms : 0; }
    // The llama.cpp-style timing block ("load time = ... ms" etc.), several lines.
    std::string format() const;
};

class Generator {
public:
    explicit Generator(Engine& engine);
    ~Generator();
    Generator(const Generator&) = delete;
    Generator& operator=(const Generator&) = delete;

    // on_text receives each piece of decoded text as soon as it is complete UTF-8; on_token
    // (optional) each generated id. Returns the generated ids. Throws duet::Error for an
    // empty prompt or one longer than the context; a KV pool too small for the prompt is
    // also an error here (a single sequence owns the engine).
    std::vector<int32_t> generate(std::string_view prompt, const GenerateOptions& opts,
                                  const std::function<void(std::string_view)>& on_text,
                                  GenerateStats* stats = nullptr,
                                  const std::function<void(int32_t)>& on_token = {});
    // Same from token ids (no tokenizer needed unless on_text is set).
    std::vector<int32_t> generate_tokens(const std::vector<int32_t>& prompt, const GenerateOptions& opts,
                                         const std::function<void(std::string_view)>& on_text,
                                         GenerateStats* stats = nullptr,
                                         const std::function<void(int32_t)>& on_token = {});

    // Forgets the sequence (frees its KV blocks).
    void reset();
    SequenceKv& sequence() { return seq_; }
    // The tokens whose K/V the sequence holds (prompt + generated, as far as forwarded).
    const std::vector<int32_t>& cached_tokens() const { return cached_; }

private:
    std::vector<int32_t> run(const std::vector<int32_t>& prompt, const GenerateOptions& opts,
                             const std::function<void(std::string_view)>& on_text, GenerateStats* stats,
                             const std::function<void(int32_t)>& on_token, int64_t t0_ns);

    Engine& engine_;
    SequenceKv seq_;
    std::vector<int32_t> cached_;
};

}  // namespace duet::runtime
