#pragma once
// Text generation for one sequence: prompt → tokens (BOS per the file's metadata) → one
// batched prefill forward (GEMM) → token-by-token decode (GEMV) with the sampler, stopping
// at an end-of-generation token or after n_predict tokens, streaming text through a
// StreamDecoder (never splits a UTF-8 character). Measures llama.cpp-style timings.
//
// A Generator is the per-sequence state (block table + sampler) on a shared Engine; it
// releases its KV blocks when destroyed. Thread safety: one thread per engine.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "model/sampler.h"
#include "runtime/engine.h"

namespace duet::runtime {

struct GenerateOptions {
    int64_t n_predict = 128;          // tokens to generate at most; < 0: until EOG or context full
    model::SamplerParams sampling;    // temperature 0 = greedy
    bool parse_special = false;       // text like "<|im_start|>" becomes control tokens (chat)
    bool add_bos = true;              // prepend BOS when the tokenizer's metadata asks for it
};

struct GenerateStats {
    double load_ms = 0;         // model load (from Model::load_ms)
    int64_t n_prompt = 0;       // prompt tokens
    double prefill_ms = 0;      // the prefill forward
    double ttft_ms = 0;         // prompt in → first generated token out (tokenize + prefill + sample)
    int64_t n_decode = 0;       // decode forwards (generated tokens after the first)
    double decode_ms = 0;
    int64_t n_generated = 0;    // tokens generated, including the first
    std::string stop_reason;    // "eog", "length", "context"

    double prefill_tok_per_s() const { return prefill_ms > 0 ? double(n_prompt) * 1e3 / prefill_ms : 0; }
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

private:
    Engine& engine_;
    SequenceKv seq_;
};

}  // namespace duet::runtime
