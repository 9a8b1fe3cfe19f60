#include "model/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "core/error.h"

namespace duet::model {

namespace {

void check_range(const char* name, double v, bool ok, const char* allowed) {
    if (!ok || std::isnan(v)) fail("sampler: {} = {} is out of range (allowed: {})", name, v, allowed);
}

}  // namespace

void validate(const SamplerParams& p) {
    check_range("temperature", p.temperature, p.temperature >= 0 && std::isfinite(p.temperature), ">= 0, 0 = greedy");
    check_range("top_k", p.top_k, p.top_k >= 0, ">= 0, 0 = disabled");
    check_range("top_p", p.top_p, p.top_p > 0 && p.top_p <= 1, "0 < top_p <= 1, 1 = disabled");
    check_range("min_p", p.min_p, p.min_p >= 0 && p.min_p <= 1, "0 to 1, 0 = disabled");
    check_range("repeat_penalty", p.repeat_penalty, p.repeat_penalty > 0 && std::isfinite(p.repeat_penalty),
                "> 0, 1 = disabled");
    check_range("repeat_last_n", p.repeat_last_n, p.repeat_last_n >= -1, ">= -1, -1 = all tokens, 0 = disabled");
    check_range("frequency_penalty", p.frequency_penalty, p.frequency_penalty >= -2 && p.frequency_penalty <= 2,
                "-2 to 2");
    check_range("presence_penalty", p.presence_penalty, p.presence_penalty >= -2 && p.presence_penalty <= 2,
                "-2 to 2");
    if (p.grammar && !p.grammar_tokens) fail("sampler: a grammar needs the vocabulary's token table");
}

Sampler::Sampler(SamplerParams params, int64_t n_vocab) : params_(params), n_vocab_(n_vocab), rng_(params.seed) {
    validate(params_);
    if (n_vocab <= 0) fail("sampler: n_vocab = {} is out of range (allowed: > 0)", n_vocab);
    if (params_.grammar) {
        if (params_.grammar_tokens->n_vocab() != n_vocab)
            fail("sampler: the grammar's token table has {} tokens, the model {}", params_.grammar_tokens->n_vocab(),
                 n_vocab);
        matcher_ = std::make_unique<grammar::Matcher>(params_.grammar, params_.grammar_tokens);
    }
}

void Sampler::reset() {
    history_.clear();
    rng_.seed(params_.seed);
    if (matcher_) matcher_->reset();
    last_sampled_ = -1;
    n_generated_ = 0;
}

void Sampler::accept(int32_t token) {
    if (token < 0 || token >= n_vocab_)
        fail("sampler: accepted token {} is out of range (allowed: 0 to {})", token, n_vocab_ - 1);
    if (matcher_ && token == last_sampled_) {
        ++n_generated_;
        if (!matcher_->tokens().is_eog(token)) matcher_->accept_token(token);
    }
    last_sampled_ = -1;
    if (params_.repeat_last_n == 0) return;
    history_.push_back(token);
    if (params_.repeat_last_n > 0 && history_.size() > static_cast<size_t>(params_.repeat_last_n)) history_.pop_front();
}

std::vector<float> Sampler::penalized(const float* logits) const {
    std::vector<float> out(logits, logits + n_vocab_);
    std::unordered_map<int32_t, int> count;
    for (int32_t t : history_) ++count[t];
    for (const auto& [tok, c] : count) {
        float& l = out[tok];
        l = l > 0 ? l / params_.repeat_penalty : l * params_.repeat_penalty;
        l -= static_cast<float>(c) * params_.frequency_penalty + params_.presence_penalty;
    }
    return out;
}

double Sampler::uniform01() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

int32_t Sampler::sample(const float* logits) {
    std::vector<float> l = penalized(logits);
    last_sampled_ = matcher_ ? sample_constrained(l) : draw(l);
    return last_sampled_;
}

int32_t Sampler::sample_constrained(std::vector<float>& l) {
    const auto& eog = matcher_->tokens().eog_tokens();
    if (matcher_->must_end() && !eog.empty()) return eog[0];
    const int64_t left = params_.max_tokens > 0 ? params_.max_tokens - n_generated_ : 0;  // this one included
    const int32_t first = draw(l);
    if (left <= 0) {
        if (matcher_->token_allowed(first)) return first;
    } else {
        // keep the first draw when the grammar can still close after it, leaving a token for EOG
        const uint32_t close = matcher_->min_bytes_after(first);
        if (close != grammar::Grammar::kNoEnd && (matcher_->tokens().is_eog(first) || int64_t(close) <= left - 2))
            return first;
        // the cached mask already is the budgeted one while the budget holds its worst token
        if (int64_t(matcher_->max_close_after_allowed()) <= left - 2 && matcher_->allowed_tokens(allowed_) > 0)
            return mask_and_draw(l, allowed_);
        for (const int64_t room : {left - 2, left - 1})
            if (room >= 0 && matcher_->allowed_tokens_within(allowed_, uint32_t(std::min<int64_t>(room, UINT32_MAX - 1))) > 0)
                return mask_and_draw(l, allowed_);
    }
    if (matcher_->allowed_tokens(allowed_) == 0) {
        if (!eog.empty()) return eog[0];
        fail("grammar: no token of the vocabulary can continue the text");
    }
    return mask_and_draw(l, allowed_);
}

int32_t Sampler::mask_and_draw(std::vector<float>& l, const std::vector<uint8_t>& allowed) {
    for (size_t i = 0; i < l.size(); ++i)
        if (!allowed[i]) l[i] = -std::numeric_limits<float>::infinity();
    return draw(l);
}

int32_t Sampler::draw(const std::vector<float>& l) {
    if (params_.temperature == 0.0f) {
        return static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());  // first max on ties
    }
    struct Cand {
        float logit;
        int32_t id;
    };
    std::vector<Cand> c(l.size());
    for (size_t i = 0; i < l.size(); ++i) c[i] = {l[i], static_cast<int32_t>(i)};
    const auto by_logit = [](const Cand& a, const Cand& b) { return a.logit > b.logit || (a.logit == b.logit && a.id < b.id); };
    size_t k = c.size();
    if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < k) k = params_.top_k;
    std::partial_sort(c.begin(), c.begin() + k, c.end(), by_logit);
    c.resize(k);

    // top-p on the temperature-1 distribution: the smallest head whose mass reaches top_p.
    if (params_.top_p < 1.0f) {
        std::vector<double> p(c.size());
        double sum = 0;
        for (size_t i = 0; i < c.size(); ++i) sum += p[i] = std::exp(static_cast<double>(c[i].logit - c[0].logit));
        double cum = 0;
        for (size_t i = 0; i < c.size(); ++i) {
            cum += p[i] / sum;
            if (cum >= params_.top_p) {
                c.resize(i + 1);
                break;
            }
        }
    }
    // min-p: keep p >= min_p * p_max, i.e. logit >= max_logit + log(min_p).
    if (params_.min_p > 0.0f) {
        const double min_logit = c[0].logit + std::log(static_cast<double>(params_.min_p));
        size_t keep = 1;
        while (keep < c.size() && c[keep].logit >= min_logit) ++keep;
        c.resize(keep);
    }
    std::vector<double> w(c.size());
    double sum = 0;
    for (size_t i = 0; i < c.size(); ++i)
        sum += w[i] = std::exp(static_cast<double>(c[i].logit - c[0].logit) / params_.temperature);
    const double u = uniform01() * sum;
    double cum = 0;
    for (size_t i = 0; i < c.size(); ++i) {
        cum += w[i];
        if (u < cum) return c[i].id;
    }
    for (size_t i = c.size(); i-- > 0;)  // u rounded to the very top: the last candidate with weight
        if (w[i] > 0) return c[i].id;
    return c[0].id;
}

}  // namespace duet::model
