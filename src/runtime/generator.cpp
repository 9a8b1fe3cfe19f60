#include "runtime/generator.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>

#include "core/error.h"
#include "core/timer.h"
#include "model/tokenizer/tokenizer.h"

namespace duet::runtime {

const char* stop_reason_name(StopReason r) {
    switch (r) {
        case StopReason::NONE: return "none";
        case StopReason::EOG: return "eog";
        case StopReason::STOP_SEQUENCE: return "stop sequence";
        case StopReason::LENGTH: return "length";
        case StopReason::CONTEXT: return "context";
        case StopReason::INCOMPLETE: return "incomplete";
        case StopReason::CANCELLED: return "cancelled";
        case StopReason::ERROR: return "error";
    }
    return "?";
}

const char* finish_reason(StopReason r) {
    switch (r) {
        case StopReason::EOG:
        case StopReason::STOP_SEQUENCE: return "stop";
        case StopReason::LENGTH:
        case StopReason::CONTEXT:
        case StopReason::INCOMPLETE: return "length";
        case StopReason::CANCELLED: return "cancelled";
        case StopReason::ERROR: return "error";
        case StopReason::NONE: break;
    }
    return "?";
}

StopReason end_of_generation(const model::Sampler& sampler) {
    const model::grammar::Matcher* m = sampler.matcher();
    return m && !m->can_end() ? StopReason::INCOMPLETE : StopReason::EOG;
}

SequenceRun::SequenceRun(const Model& model, const model::SamplerParams& sampling, std::vector<int32_t> prompt,
                         RunLimits limits, SequenceKv& kv, std::function<void(std::string_view)> on_text,
                         std::function<void(int32_t)> on_token)
    : model_(model), tokens_(std::move(prompt)), n_prompt_(int64_t(tokens_.size())), limits_(std::move(limits)),
      kv_(kv), sampler_(std::make_unique<model::Sampler>(sampling, model.hparams().n_vocab)),
      on_text_(std::move(on_text)), on_token_(std::move(on_token)) {
    if (on_text_) decoder_ = std::make_unique<model::StreamDecoder>(model.tokenizer());
    for (int32_t t : tokens_) sampler_->accept(t);
}

SequenceRun::~SequenceRun() = default;

void SequenceRun::advance(const float* logits, int64_t n_ctx) {
    if (limits_.max_tokens == 0) return stop(StopReason::LENGTH);
    const int32_t tok = sampler_->sample(logits);
    sampler_->accept(tok);
    if (on_sample_) on_sample_(tok, logits);
    if (++n_sampled_ == 1) first_token_ns_ = now_ns();
    if (!limits_.ignore_eos && model_.has_tokenizer() && model_.tokenizer().is_eog(tok))
        return stop(end_of_generation(*sampler_));  // never fed back, not part of the output
    tokens_.push_back(tok);
    generated_.push_back(tok);
    if (on_token_) on_token_(tok);
    if (decoder_) {
        text_ += decoder_->feed(tok);
        emit_text(false);
        if (stopped()) return;  // a stop string
    }
    if (limits_.max_tokens > 0 && int64_t(generated_.size()) >= limits_.max_tokens) return stop(StopReason::LENGTH);
    if (kv_.n_tokens() + 1 > n_ctx) stop(StopReason::CONTEXT);
}

void SequenceRun::stop(StopReason r) {
    if (stopped()) return;
    reason_ = r;
    if (decoder_ && r != StopReason::CANCELLED && r != StopReason::ERROR && r != StopReason::STOP_SEQUENCE) {
        // Send what is left: bytes the decoder held and a tail held back as a possible stop.
        text_ += decoder_->flush();
        emit_text(true);
    }
}

void SequenceRun::emit_text(bool final) {
    // Earliest complete stop sequence in the text not yet sent (it may start in held-back text).
    size_t stop_at = std::string::npos;
    for (const auto& st : limits_.stop) {
        const size_t from = sent_ >= st.size() ? sent_ - st.size() + 1 : 0;
        const size_t p = text_.find(st, from);
        if (p != std::string::npos) stop_at = std::min(stop_at, p);
    }
    size_t upto = text_.size();
    if (stop_at != std::string::npos) {
        upto = std::max(stop_at, sent_);
    } else if (!final) {
        // Hold back a tail that could still become a stop sequence.
        size_t hold = 0;
        for (const auto& st : limits_.stop)
            for (size_t n = std::min(st.size() - 1, text_.size() - sent_); n > hold; --n)
                if (text_.compare(text_.size() - n, n, st, 0, n) == 0) {
                    hold = n;
                    break;
                }
        upto = text_.size() - hold;
    }
    if (upto > sent_ && on_text_) on_text_(std::string_view(text_).substr(sent_, upto - sent_));
    sent_ = std::max(sent_, upto);
    if (stop_at != std::string::npos && !stopped()) reason_ = StopReason::STOP_SEQUENCE;
}

ForwardStatus step_runs(Engine& engine, std::span<SequenceRun* const> runs, int64_t token_budget,
                        const std::function<void(SequenceRun&, const float*)>& before_sample) {
    std::vector<sched::FeedInput> in;
    for (SequenceRun* r : runs) in.push_back({r->stopped() ? 0 : r->unfed(), r->prefill_waits_});
    const std::vector<int64_t> feeds = sched::compose_feeds(in, token_budget);
    for (size_t i = 0; i < runs.size(); ++i)
        runs[i]->prefill_waits_ = sched::next_prefill_waits(runs[i]->prefill_waits_, in[i].unfed, feeds[i]);
    return run_feeds(engine, runs, feeds, before_sample);
}

ForwardStatus run_feeds(Engine& engine, std::span<SequenceRun* const> runs, std::span<const int64_t> feeds,
                        const std::function<void(SequenceRun&, const float*)>& before_sample,
                        const std::function<void(SequenceRun&, const std::exception&)>& on_sample_error) {
    DUET_CHECK(feeds.size() == runs.size());
    std::vector<SeqInput> batch;
    std::vector<SequenceRun*> fed;
    for (size_t i = 0; i < runs.size(); ++i) {
        SequenceRun* r = runs[i];
        if (feeds[i] == 0) continue;
        DUET_CHECK(!r->stopped() && feeds[i] <= r->unfed(), "feeding {} tokens to a run with {} unfed", feeds[i],
                   r->unfed());
        const size_t begin = size_t(r->kv_.n_tokens());
        batch.push_back({std::span<const int32_t>(r->tokens_).subspan(begin, size_t(feeds[i])), &r->kv_, false});
        fed.push_back(r);
    }
    if (batch.empty()) return ForwardStatus::OK;
    ForwardOutput out;
    const ForwardStatus st = engine.forward(batch, out);
    if (st != ForwardStatus::OK) return st;
    for (size_t i = 0; i < fed.size(); ++i) {
        if (fed[i]->unfed() > 0) continue;  // prompt chunk, no token yet
        if (before_sample) before_sample(*fed[i], out.last(i));
        try {
            fed[i]->advance(out.last(i), engine.n_ctx());
        } catch (const std::exception& e) {
            if (!on_sample_error) throw;
            fed[i]->stop(StopReason::ERROR);
            on_sample_error(*fed[i], e);
        }
    }
    return st;
}

namespace {

double ms_since(int64_t t0_ns) { return double(now_ns() - t0_ns) / 1e6; }

std::vector<int32_t> run_generation(Engine& engine, SequenceKv& seq, const std::vector<int32_t>& prompt,
                                    int64_t n_cached, const GenerateOptions& opts, const std::function<void(std::string_view)>& on_text,
                                    GenerateStats& st, const std::function<void(int32_t)>& on_token, int64_t t0_ns) {
    const Model& model = engine.model();
    if (prompt.empty()) fail("generate: the prompt is empty (no tokens)");
    if (int64_t(prompt.size()) >= engine.n_ctx())
        fail("generate: the prompt has {} tokens but the context holds {} (raise --ctx)", prompt.size(),
             engine.n_ctx());
    st.load_ms = model.load_ms();
    st.n_prompt = int64_t(prompt.size());
    st.n_prompt_cached = n_cached;
    DUET_CHECK(n_cached < st.n_prompt && seq.n_tokens() == n_cached);

    RunLimits limits;
    limits.max_tokens = opts.n_predict;
    limits.ignore_eos = opts.ignore_eos;
    SequenceRun run(model, opts.sampling, prompt, limits, seq, on_text, on_token);
    SequenceRun* const runs[] = {&run};
    const int64_t t = now_ns();
    // The whole prompt in one forward (the prefill GEMM), then one token a step.
    ForwardStatus fs = step_runs(engine, runs, std::numeric_limits<int64_t>::max());
    if (fs == ForwardStatus::KV_FULL)
        fail("generate: the KV cache ({} blocks of {} tokens) cannot hold the {}-token prompt",
             engine.kv_cache().n_blocks(), engine.kv_cache().block_tokens(), prompt.size());
    DUET_CHECK(fs == ForwardStatus::OK);
    st.prefill_ms = ms_since(t);
    if (run.first_token_ns()) st.ttft_ms = double(run.first_token_ns() - t0_ns) / 1e6;
    const int64_t decode_t0 = now_ns();
    while (!run.stopped()) {
        fs = step_runs(engine, runs, std::numeric_limits<int64_t>::max());
        if (fs != ForwardStatus::OK) {
            run.stop(StopReason::CONTEXT);
            break;
        }
        ++st.n_decode;
    }
    if (run.n_sampled() > 0) st.decode_ms = ms_since(decode_t0);
    st.stop_reason = stop_reason_name(run.stop_reason());
    st.n_generated = int64_t(run.generated().size());
    return run.generated();
}

}  // namespace

std::string GenerateStats::format() const {
    std::string s;
    s += fmt::format("duet: load time        = {:10.2f} ms\n", load_ms);
    const int64_t n_eval = n_prompt - n_prompt_cached;
    s += fmt::format("duet: prompt eval time = {:10.2f} ms / {:5} tokens ({:8.2f} ms per token, {:8.2f} tokens per second)\n",
                     prefill_ms, n_eval, n_eval ? prefill_ms / double(n_eval) : 0.0, prefill_tok_per_s());
    if (n_prompt_cached > 0) s += fmt::format("duet: prompt tokens reused from the cache = {}\n", n_prompt_cached);
    s += fmt::format("duet: time to first token = {:7.2f} ms\n", ttft_ms);
    s += fmt::format("duet:        eval time = {:10.2f} ms / {:5} runs   ({:8.2f} ms per token, {:8.2f} tokens per second)\n",
                     decode_ms, n_decode, n_decode ? decode_ms / double(n_decode) : 0.0, decode_tok_per_s());
    s += fmt::format("duet: generated {} tokens, stopped by {}\n", n_generated, stop_reason);
    return s;
}

Generator::Generator(Engine& engine) : engine_(engine) {}
Generator::~Generator() { seq_.release(engine_.kv_cache()); }

void Generator::reset() {
    seq_.release(engine_.kv_cache());
    cached_.clear();
}

std::vector<int32_t> Generator::run(const std::vector<int32_t>& prompt, const GenerateOptions& opts,
                                    const std::function<void(std::string_view)>& on_text, GenerateStats* stats,
                                    const std::function<void(int32_t)>& on_token, int64_t t0_ns) {
    int64_t keep = 0;
    if (opts.reuse_prefix) {
        // At least the last prompt token is always forwarded: its logits give the first token.
        const size_t limit = std::min(cached_.size(), prompt.empty() ? 0 : prompt.size() - 1);
        while (size_t(keep) < limit && cached_[size_t(keep)] == prompt[size_t(keep)]) ++keep;
    }
    seq_.truncate(engine_.kv_cache(), keep);
    cached_.resize(size_t(keep));
    GenerateStats local;
    std::vector<int32_t> generated;
    try {
        generated = run_generation(engine_, seq_, prompt, keep, opts, on_text, stats ? *stats : local, on_token, t0_ns);
    } catch (...) {
        reset();
        throw;
    }
    cached_ = prompt;
    cached_.insert(cached_.end(), generated.begin(), generated.end());
    cached_.resize(size_t(seq_.n_tokens()));
    return generated;
}

std::vector<int32_t> Generator::generate(std::string_view prompt, const GenerateOptions& opts,
                                         const std::function<void(std::string_view)>& on_text, GenerateStats* stats,
                                         const std::function<void(int32_t)>& on_token) {
    const int64_t t0 = now_ns();
    const model::Tokenizer& tok = engine_.model().tokenizer();
    const bool bos = opts.add_bos && tok.add_bos_default() && tok.bos() >= 0;
    return run(tok.encode(prompt, bos, opts.parse_special), opts, on_text, stats, on_token, t0);
}

std::vector<int32_t> Generator::generate_tokens(const std::vector<int32_t>& prompt, const GenerateOptions& opts,
                                                const std::function<void(std::string_view)>& on_text,
                                                GenerateStats* stats, const std::function<void(int32_t)>& on_token) {
    return run(prompt, opts, on_text, stats, on_token, now_ns());
}

}  // namespace duet::runtime
