#pragma once
// One simulated run's figures, the baseline-vs-target comparison with its three verdicts,
// and the report outputs: the printed table, the JSON report (docs/report-schema.md),
// a Chrome/Perfetto trace and an SVG chart (sim/report_files.h).
// Units: ns for times, bytes for memory, GB/s (1e9 B/s) for bandwidth, pJ for energy.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "sim/memory_accounting.h"
#include "sim/timeline.h"

namespace duet::sim {

struct RunReport {
    std::string policy;
    int32_t batch = 1;
    bool weight_base_shared = true;
    DType weight_dtype = DType::F16;         // the matrices as the devices hold them (ModelShape)
    Timeline timeline;
    MemoryBreakdown memory;
    double tbt_mean_ns = 0, tbt_p50_ns = 0, tbt_p99_ns = 0;
    double decode_energy_per_token_pj = 0;   // decode steps only (every device + conversion)
    double prefill_energy_pj = 0;
    double decode_ext_bw_gbps = 0;           // bytes every device moved over its memory interface / decode wall time
    double decode_ext_bw_util = 0;           // of SimHardware::mem_bw_gbps
    double pim_util = 0;                     // PIM busy / decode wall time, mean over the PIM devices
    double pim_internal_bw_util = 0;         // PIM weight bytes / decode wall / pim_internal_bw_gbps
    double pim_gemv_gbps = 0;                // PIM weight bytes / PIM busy time: the rate its GEMVs reach
    // Mixture-of-Experts runs priced from a routing (sim/expert_load.h): routing, ep, per-device
    // decode loads, experts on PIM / NPU and the row thresholds (docs/report-schema.md). Null otherwise.
    nlohmann::json experts;
    std::vector<std::string> warnings;
};

// Timeline + memory + energy + warnings of one run. Throws duet::Error (cache_limit_mb).
RunReport simulate_run(const ModelShape& shape, const Plan& plan, int64_t context, int32_t batch,
                       const RunOptions& opts, const SimHardware& hw);

struct Thresholds {
    double tbt_reduction_min = 0.80;     // 1 - TBT_target / TBT_baseline must be >= this
    double ttft_increase_max_ms = 20;    // TTFT_target - TTFT_baseline must be < this
    double memory_increase_max = 0.05;   // peak memory ratio - 1 must be < this
};

struct Verdict {
    std::string name;            // "tbt_reduction", "ttft_increase_ms", "memory_increase"
    double value = 0, threshold = 0;
    bool met = false;
    std::string binding_limit;   // when not met: the physical limit that decides it
    std::string line;            // the printed verdict line
};

std::vector<Verdict> judge(const RunReport& base, const RunReport& target, const Thresholds& th,
                           const SimHardware& hw);

struct BenchReport {
    std::string model;
    int64_t seq_len = 0, gen_len = 0;
    int32_t batch = 1;
    std::string npu, pim, memory;  // device names
    Thresholds thresholds;
    RunReport baseline, target;
    std::vector<Verdict> verdicts;
    nlohmann::json config;         // the effective settings + config knobs, for reproduction
    nlohmann::json topology;       // devices and links of the simulated machine (docs/report-schema.md)
    nlohmann::json functional;     // FILE mode only (null otherwise): real tokens and host times
    nlohmann::json pim_precision;  // the PIM weight base's operand type (workload::choose_pim_precision); null: no PIM used
    nlohmann::json parallel;       // tp, pp, micro_batches, flashcomm, hccl_expansion (docs/scale-out.md); null: tp = pp = 1
};

std::string format_table(const BenchReport& r);  // side-by-side table, verdicts, warnings
// The table's lines on a MoE run's experts (sim/report_experts.cpp; "" when neither run has them).
std::string format_expert_lines(const BenchReport& r);

nlohmann::json run_to_json(const RunReport& r);
// Names of the devices that ran at least one operator (prefill or decode), in SimHardware order.
std::vector<std::string> devices_used(const RunReport& r);
// The verdicts as docs/report-schema.md's VERDICT array (name, value, threshold, met,
// binding_limit, line): the one form of `duet bench`, `bench --workload serving` and `duet tune`.
nlohmann::json verdicts_to_json(const std::vector<Verdict>& vs);
std::vector<Verdict> verdicts_from_json(const nlohmann::json& a);  // throws nlohmann's errors on a bad shape
nlohmann::json report_to_json(const BenchReport& r);
// Reads what report_to_json wrote (schema "duet.bench/1"); per-token TBT included, events not.
BenchReport report_from_json(const nlohmann::json& j);

double percentile(std::vector<double> v, double q);  // nearest-rank, q in [0, 1]

}  // namespace duet::sim
