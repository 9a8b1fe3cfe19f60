#pragma once
// `--rate-sweep`: the highest request rate at which a placement still meets the SLOs, and the
// latency–throughput curve on the way there.
//
// A rate meets the SLOs when at least `attainment` of the requests finish within both of them
// (DistServe's SLO attainment; 0.9 by default). The search doubles the rate from `start_rps`
// while it meets them (halves it while it does not), then bisects geometrically between the
// last rate that met them and the first that did not, `refine` times. Every rate tried is a
// point of the curve. Deterministic: the caller's run is (seeded arrivals, modelled steps).
#include <functional>
#include <string>
#include <vector>

#include "serving/serving_metrics.h"

namespace duet::serving {

struct SweepPoint {
    double rate_rps = 0;
    ServingSummary summary;
    bool meets = false;
};

struct SweepResult {
    std::vector<SweepPoint> points;  // by rate
    double max_rate_rps = 0;         // highest rate tried that met the SLOs; 0: none did
};

bool meets_slo(const ServingSummary& s, double attainment);

SweepResult rate_sweep(const std::function<ServingSummary(double rate_rps)>& run, double start_rps, double attainment,
                       int refine);

// The same search `width` rates at a time (`mpirun -np N` spreads them over the ranks): the
// bracketing tries the next `width` doublings (halvings) together, and each refinement round
// splits the bracket at width geometric points, ceil(refine / log2(width + 1)) rounds, so the
// bracket ends at least as narrow as `refine` bisections leave it. width 1 is rate_sweep.
// `run_batch` returns the summaries of its rates in order.
using BatchRun = std::function<std::vector<ServingSummary>(const std::vector<double>& rates_rps)>;
SweepResult rate_sweep_batched(const BatchRun& run_batch, int width, double start_rps, double attainment, int refine);

// Two panels, p99 TTFT and p99 TPOT (ms) against achieved requests/s, one line per placement
// (names[i] for sweeps[i]), the SLOs as dashed lines (< 0: none).
// {"max_rate_rps", "points": [{rate_rps, meets, requests_per_s, output_tokens_per_s, goodput_rps,
// ttft_ms_p99, tpot_ms_p99}]} (docs/report-schema.md).
nlohmann::json sweep_to_json(const SweepResult& r);
std::string sweep_svg(const std::string& title, const std::vector<std::string>& names,
                      const std::vector<SweepResult>& sweeps, const Slo& slo);

}  // namespace duet::serving
