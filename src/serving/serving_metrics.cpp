#include "serving/serving_metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace duet::serving {

double percentile_linear(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const double pos = q * double(v.size() - 1);
    const size_t lo = size_t(std::floor(pos));
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
}

Dist distribution(const std::vector<double>& v) {
    Dist d;
    if (v.empty()) return d;
    d.p50 = percentile_linear(v, 0.50);
    d.p90 = percentile_linear(v, 0.90);
    d.p99 = percentile_linear(v, 0.99);
    d.mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
    return d;
}

ServingSummary summarize(const ServingResult& r, const Slo& slo) {
    ServingSummary s;
    s.requests = int64_t(r.requests.size());
    s.steps = r.steps;
    s.preemptions = r.preemptions;
    s.peak_running = r.peak_running;
    s.peak_kv_blocks_used = r.peak_kv_blocks_used;
    std::vector<double> queue, ttft, tpot, e2e;
    int64_t first_ns = r.end_ns;
    for (const RequestOutcome& o : r.requests) first_ns = std::min(first_ns, o.arrival_ns);
    for (const RequestOutcome& o : r.requests) {
        if (o.queue_ns < 0 && !o.ended_by_context) {
            ++s.refused;
            continue;
        }
        if (o.ended_by_context || o.generated < o.output_tokens) {
            ++s.ended_early;
            continue;
        }
        ++s.completed;
        s.prompt_tokens += o.prompt_tokens;
        s.cached_prompt_tokens += o.cached_tokens;
        s.output_tokens += o.generated;
        queue.push_back(double(o.queue_ns) / 1e6);
        ttft.push_back(double(o.ttft_ns) / 1e6);
        e2e.push_back(double(o.e2e_ns) / 1e6);
        const double tp = o.tpot_ns();
        if (tp >= 0) tpot.push_back(tp / 1e6);
        const bool ttft_ok = slo.ttft_ms < 0 || double(o.ttft_ns) / 1e6 <= slo.ttft_ms;
        const bool tpot_ok = slo.tpot_ms < 0 || tp < 0 || tp / 1e6 <= slo.tpot_ms;
        s.good += ttft_ok && tpot_ok ? 1 : 0;
    }
    s.duration_s = double(r.end_ns - first_ns) / 1e9;
    if (s.duration_s > 0) {
        s.output_tokens_per_s = double(s.output_tokens) / s.duration_s;
        s.total_tokens_per_s = double(s.output_tokens + s.prompt_tokens) / s.duration_s;
        s.requests_per_s = double(s.completed) / s.duration_s;
        s.goodput_rps = double(s.good) / s.duration_s;
    }
    s.queue_ms = distribution(queue);
    s.ttft_ms = distribution(ttft);
    s.tpot_ms = distribution(tpot);
    s.e2e_ms = distribution(e2e);
    return s;
}

namespace {
nlohmann::json dist_json(const Dist& d) { return {{"p50", d.p50}, {"p90", d.p90}, {"p99", d.p99}, {"mean", d.mean}}; }
}  // namespace

nlohmann::json summary_to_json(const ServingSummary& s) {
    return {{"requests", s.requests},
            {"completed", s.completed},
            {"refused", s.refused},
            {"ended_early", s.ended_early},
            {"steps", s.steps},
            {"preemptions", s.preemptions},
            {"peak_running", s.peak_running},
            {"peak_kv_blocks_used", s.peak_kv_blocks_used},
            {"duration_s", s.duration_s},
            {"prompt_tokens", s.prompt_tokens},
            {"output_tokens", s.output_tokens},
            {"cached_prompt_tokens", s.cached_prompt_tokens},
            {"output_tokens_per_s", s.output_tokens_per_s},
            {"total_tokens_per_s", s.total_tokens_per_s},
            {"requests_per_s", s.requests_per_s},
            {"goodput_rps", s.goodput_rps},
            {"good_requests", s.good},
            {"queue_ms", dist_json(s.queue_ms)},
            {"ttft_ms", dist_json(s.ttft_ms)},
            {"tpot_ms", dist_json(s.tpot_ms)},
            {"e2e_ms", dist_json(s.e2e_ms)}};
}

nlohmann::json requests_to_json(const ServingResult& r) {
    nlohmann::json a = nlohmann::json::array();
    auto ms = [](int64_t ns) { return ns < 0 ? nlohmann::json(nullptr) : nlohmann::json(double(ns) / 1e6); };
    for (const RequestOutcome& o : r.requests) {
        const double tp = o.tpot_ns();
        a.push_back({{"arrival_s", double(o.arrival_ns) / 1e9},
                     {"prompt_tokens", o.prompt_tokens},
                     {"output_tokens", o.generated},
                     {"queue_ms", ms(o.queue_ns)},
                     {"ttft_ms", ms(o.ttft_ns)},
                     {"tpot_ms", tp < 0 ? nlohmann::json(nullptr) : nlohmann::json(tp / 1e6)},
                     {"e2e_ms", ms(o.e2e_ns)},
                     {"preemptions", o.preemptions},
                     {"cached_tokens", o.cached_tokens},
                     {"replica", o.replica < 0 ? nlohmann::json(nullptr) : nlohmann::json(o.replica)},
                     {"kv_transfer_ms", ms(o.kv_transfer_ns)}});
    }
    return a;
}

nlohmann::json replicas_to_json(const ServingResult& r, double duration_s, bool disaggregated) {
    nlohmann::json a = nlohmann::json::array();
    auto share = [&](int64_t ns) { return duration_s > 0 ? double(ns) / 1e9 / duration_s : 0.0; };
    for (const ReplicaStats& x : r.replicas) {
        nlohmann::json j = {{"requests", x.requests}, {"steps", x.prefill.steps}, {"busy_share", share(x.prefill.busy_ns)}};
        if (disaggregated) {
            j["decode_steps"] = x.decode.steps;
            j["decode_busy_share"] = share(x.decode.busy_ns);
            j["kv_transfers"] = x.kv_transfers;
            j["kv_transfer_bytes"] = x.kv_transfer_bytes;
            j["link_busy_share"] = share(x.link_busy_ns);
        }
        a.push_back(std::move(j));
    }
    return a;
}

}  // namespace duet::serving
