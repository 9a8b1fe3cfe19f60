#pragma once
// Serving figures of one run (serving/serving_run.h): latency distributions, throughput and
// goodput under SLOs, as vLLM's benchmark_serving and DistServe define them.
//  - percentiles: linear interpolation between closest ranks (numpy.percentile's default,
//    which vLLM's benchmark uses), over the requests that finished;
//  - duration: first arrival -> end of the last step; throughputs divide by it;
//  - goodput: finished requests with TTFT <= slo_ttft_ms and TPOT <= slo_tpot_ms (an unset SLO,
//    < 0, always holds; a one-token request has no TPOT and meets any TPOT SLO), per second.
// Units in the names (ms, s).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <vector>

#include "serving/serving_run.h"

namespace duet::serving {

struct Dist {
    double p50 = 0, p90 = 0, p99 = 0, mean = 0;
};

struct Slo {
    double ttft_ms = -1, tpot_ms = -1;  // < 0: none
};

struct ServingSummary {
    int64_t requests = 0, completed = 0, refused = 0, ended_early = 0;
    int64_t steps = 0;
    uint64_t preemptions = 0;
    int64_t peak_running = 0, peak_kv_blocks_used = 0;
    double duration_s = 0;
    int64_t prompt_tokens = 0, output_tokens = 0;  // of the finished requests
    int64_t cached_prompt_tokens = 0;              // of which reused (prefix cache, running requests)
    double output_tokens_per_s = 0, total_tokens_per_s = 0, requests_per_s = 0, goodput_rps = 0;
    int64_t good = 0;  // requests within the SLOs
    Dist queue_ms, ttft_ms, tpot_ms, e2e_ms;
};

// numpy.percentile(v, 100 q) with the default linear method; 0 for an empty v.
double percentile_linear(std::vector<double> v, double q);
Dist distribution(const std::vector<double>& v);

ServingSummary summarize(const ServingResult& r, const Slo& slo);
// {"output_tokens_per_s", "total_tokens_per_s", "requests_per_s", "goodput_rps", "ttft_ms": {p50, p90,
// p99, mean}, "tpot_ms", "e2e_ms", "queue_ms", "requests", "completed", ...} (docs/report-schema.md).
nlohmann::json summary_to_json(const ServingSummary& s);
// Per request: arrival_s, prompt_tokens, output_tokens, queue_ms, ttft_ms, tpot_ms, e2e_ms, preemptions,
// cached_tokens, replica, kv_transfer_ms (null where the request has none).
nlohmann::json requests_to_json(const ServingResult& r);
// Per replica: requests, steps, busy_share (busy time / duration_s: of the colocated instance, or the
// prefill instance); disaggregated also decode_steps, decode_busy_share, kv_transfers,
// kv_transfer_bytes, link_busy_share.
nlohmann::json replicas_to_json(const ServingResult& r, double duration_s, bool disaggregated);

}  // namespace duet::serving
