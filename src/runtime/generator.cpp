#include "runtime/generator.h"

#include <fmt/format.h>

#include <memory>

#include "core/error.h"
#include "core/timer.h"

namespace duet::runtime {

namespace {

double ms_since(int64_t t0_ns) { return double(now_ns() - t0_ns) / 1e6; }

std::vector<int32_t> run_generation(Engine& engine, SequenceKv& seq, const std::vector<int32_t>& prompt,
                                    const GenerateOptions& opts, const std::function<void(std::string_view)>& on_text,
                                    GenerateStats& st, const std::function<void(int32_t)>& on_token, int64_t t0_ns) {
    const Model& model = engine.model();
    if (prompt.empty()) fail("generate: the prompt is empty (no tokens)");
    if (int64_t(prompt.size()) >= engine.n_ctx())
        fail("generate: the prompt has {} tokens but the context holds {} (raise --ctx)", prompt.size(),
             engine.n_ctx());
    model::Sampler sampler(opts.sampling, model.hparams().n_vocab);
    for (int32_t t : prompt) sampler.accept(t);
    std::unique_ptr<model::StreamDecoder> decoder;
    if (on_text) decoder = std::make_unique<model::StreamDecoder>(model.tokenizer());
    const model::Tokenizer* tok = model.has_tokenizer() ? &model.tokenizer() : nullptr;

    st.load_ms = model.load_ms();
    st.n_prompt = int64_t(prompt.size());
    ForwardOutput out;
    int64_t t = now_ns();
    SeqInput in{std::span<const int32_t>(prompt), &seq, false};
    ForwardStatus fs = engine.forward({&in, 1}, out);
    if (fs == ForwardStatus::KV_FULL)
        fail("generate: the KV cache ({} blocks of {} tokens) cannot hold the {}-token prompt",
             engine.kv_cache().n_blocks(), engine.kv_cache().block_tokens(), prompt.size());
    DUET_CHECK(fs == ForwardStatus::OK);
    st.prefill_ms = ms_since(t);

    std::vector<int32_t> generated;
    st.stop_reason = "length";
    int64_t decode_t0 = 0;
    while (opts.n_predict < 0 || int64_t(generated.size()) < opts.n_predict) {
        const int32_t next = sampler.sample(out.last(0));
        sampler.accept(next);
        if (generated.empty()) {
            st.ttft_ms = ms_since(t0_ns);
            decode_t0 = now_ns();
        }
        if (tok && tok->is_eog(next)) {
            st.stop_reason = "eog";
            break;
        }
        generated.push_back(next);
        if (on_token) on_token(next);
        if (decoder) {
            const std::string piece = decoder->feed(next);
            if (!piece.empty()) on_text(piece);
        }
        if (opts.n_predict >= 0 && int64_t(generated.size()) >= opts.n_predict) break;
        if (seq.n_tokens() + 1 > engine.n_ctx()) {
            st.stop_reason = "context";
            break;
        }
        SeqInput step{std::span<const int32_t>(&generated.back(), 1), &seq, false};
        fs = engine.forward({&step, 1}, out);
        if (fs != ForwardStatus::OK) {
            st.stop_reason = "context";
            break;
        }
        ++st.n_decode;
    }
    if (decode_t0) st.decode_ms = ms_since(decode_t0);
    if (decoder) {
        const std::string rest = decoder->flush();
        if (!rest.empty()) on_text(rest);
    }
    st.n_generated = int64_t(generated.size());
    return generated;
}

}  // namespace

std::string GenerateStats::format() const {
    std::string s;
    s += fmt::format("duet: load time        = {:10.2f} ms\n", load_ms);
    s += fmt::format("duet: prompt eval time = {:10.2f} ms / {:5} tokens ({:8.2f} ms per token, {:8.2f} tokens per second)\n",
                     prefill_ms, n_prompt, n_prompt ? prefill_ms / double(n_prompt) : 0.0, prefill_tok_per_s());
    s += fmt::format("duet: time to first token = {:7.2f} ms\n", ttft_ms);
    s += fmt::format("duet:        eval time = {:10.2f} ms / {:5} runs   ({:8.2f} ms per token, {:8.2f} tokens per second)\n",
                     decode_ms, n_decode, n_decode ? decode_ms / double(n_decode) : 0.0, decode_tok_per_s());
    s += fmt::format("duet: generated {} tokens, stopped by {}\n", n_generated, stop_reason);
    return s;
}

Generator::Generator(Engine& engine) : engine_(engine) {}
Generator::~Generator() { seq_.release(engine_.kv_cache()); }
void Generator::reset() { seq_.release(engine_.kv_cache()); }

std::vector<int32_t> Generator::generate(std::string_view prompt, const GenerateOptions& opts,
                                         const std::function<void(std::string_view)>& on_text, GenerateStats* stats,
                                         const std::function<void(int32_t)>& on_token) {
    const int64_t t0 = now_ns();
    const model::Tokenizer& tok = engine_.model().tokenizer();
    const bool bos = opts.add_bos && tok.add_bos_default() && tok.bos() >= 0;
    const std::vector<int32_t> ids = tok.encode(prompt, bos, opts.parse_special);
    GenerateStats local;
    reset();
    return run_generation(engine_, seq_, ids, opts, on_text, stats ? *stats : local, on_token, t0);
}

std::vector<int32_t> Generator::generate_tokens(const std::vector<int32_t>& prompt, const GenerateOptions& opts,
                                                const std::function<void(std::string_view)>& on_text,
                                                GenerateStats* stats, const std::function<void(int32_t)>& on_token) {
    GenerateStats local;
    reset();
    return run_generation(engine_, seq_, prompt, opts, on_text, stats ? *stats : local, on_token, now_ns());
}

}  // namespace duet::runtime
