#pragma once
// The results of `duet bench --workload serving` for one placement (ServingSide) and how they are
// shown: the lines above and below the side-by-side table, the table, the three verdicts judged at
// the load given, the report's workload and per-placement JSON (docs/report-schema.md) and the
// step trace. run_serving_bench (workload/serving_bench.cpp) fills them.
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "parallel/communicator.h"
#include "serving/kv_capacity.h"
#include "serving/rate_sweep.h"
#include "serving/replica_set.h"
#include "serving/serving_layout.h"
#include "serving/serving_metrics.h"
#include "serving/serving_run.h"
#include "serving/step_cost.h"
#include "serving/step_trace.h"
#include "sim/report.h"
#include "workload/bench_inputs.h"
#include "workload/serving_bench.h"
#include "workload/serving_trace.h"

namespace duet::workload {

// One device's share of a serving run during which it computed (of one replica's machine).
struct DeviceBusy {
    std::string name;  // "npu0", "decode pim0", "prefill npu1"
    sim::DeviceKind kind = sim::DeviceKind::NPU;
    double share = 0;
};

struct ServingSide {
    sim::Policy policy;
    serving::KvCapacity kv;
    serving::ServingResult result;
    serving::ServingSummary summary;
    int64_t evaluations = 0, lookups = 0, pim_steps = 0;
    double expert_rows = 0, expert_rows_pim = 0;  // of the run (not the sweep): routed rows, those on PIM
    // The placement's crossover (a policy that uses PIM): decode steps of up to pim_last_batch
    // sequences at crossover_context positions run a weight matmul on PIM (StepCostModel::
    // last_pim_matmul_batch; the decode instance's when disaggregated); -1: not computed (npu_only).
    int64_t pim_last_batch = -1, crossover_context = 0;
    std::vector<DeviceBusy> device_busy;  // of the run (not the sweep)
    std::unique_ptr<serving::StepCostModel> cost;  // shared by the run and the sweep: one step-time cache
    serving::SweepResult sweep;
    std::vector<std::vector<serving::StepEvent>> trace;  // --trace: the first steps of each instance
    // --disaggregate: the prefill instance's KV capacity and step times (kv above is the decode instance's)
    serving::KvCapacity prefill_kv;
    std::unique_ptr<serving::StepCostModel> prefill_cost;
};

// "1.23 GiB"
std::string gib(uint64_t b);
// Baseline and target side by side: throughput, latency percentiles, KV and replica figures.
void print_table(const ServingSide& b, const ServingSide& t, const serving::ServingLayout& lay);
// Peak device memory of a replica: everything but the KV cache (of both instances when
// disaggregated), plus the KV blocks in use at the peak of the fullest instance.
double peak_memory_bytes(const ServingSide& s);
// The three verdicts of `duet bench` (sim/report.h) judged at the load given.
std::vector<sim::Verdict> judge_serving(const ServingSide& b, const ServingSide& t, const sim::Thresholds& th);
// serving.baseline / serving.target of the report.
nlohmann::json side_json(const ServingSide& s, const serving::ServingLayout& lay, const nlohmann::json& experts);
// The routed experts' rows of the run's steps and the share PIM computed (report "experts"); null without routing.
nlohmann::json experts_json(const ServingSide& s, const TraceBenchInputs& in);


// The lines above the table: the workload (`source`, `arrivals`), and the instances the machine is
// split into.
void print_header(const ServingLoad& a, const std::string& model, size_t n_requests, const std::string& source,
                  const std::string& arrivals, int64_t n_ctx, const serving::ServingLayout& lay,
                  serving::RouterPolicy router);
// The lines below the table: experts, verdicts, SLOs and the rate sweep; its chart to `svg` ("":
// none) on rank 0.
void print_results(const ServingLoad& a, const std::string& svg, const TraceBenchInputs& in,
                   const ServingSide (&sides)[2], const std::vector<sim::Verdict>& verdicts, const serving::Slo& slo,
                   int sweep_width, const parallel::Communicator& comm);
// The report's "workload" object: what was served, on what machine layout, under which SLOs.
nlohmann::json workload_json(const ServingLoad& a, const std::string& source, size_t n_requests,
                             const ArrivalSpec& spec, int64_t n_ctx, const serving::ServingLayout& lay,
                             serving::RouterPolicy router);
// --trace: each instance's recorded steps as a track, the baseline's first.
void write_trace(const std::string& path, const ServingSide (&sides)[2], const serving::ReplicaSetSpec& replicas);

}  // namespace duet::workload
