#pragma once
// The routed experts' work per rank and per step, from a routing distribution (sim/expert_routing.h),
// and the per-expert placement between NPU and PIM (docs/scale-out.md, "Expert parallelism").
//
// The planner lowers a MOE_MATMUL for uniform routing on one device (graph/op_record.h). Here
// each MoE record of a trace-only plan is re-priced for expert-parallel rank e of ep, holding the
// contiguous experts [e·E/ep, (e+1)·E/ep) (graph::ep_shard), when the forward brings T tokens over
// the whole EP group (T = n_new x the sequences of one micro-batch):
//   expert i (fraction f_i, p_i = min(1, k·f_i)): rows r_i = T·p_i, active a_i = 1 - (1 - p_i)^T,
//   rows when active c_i = r_i / a_i (expected values; not a sample of the routing)
//   MOE_MATMUL   m = sum of r_i over the rank's experts (rounded up), n_expert_active = sum of a_i
//                (rounded up), weights read once per active expert; 0 rows: the record does nothing
//   SWIGLU       of the experts' gate/up: m = those rows, n = the rank's features of one expert
//   ALL_TO_ALL   m = ep x the largest message one rank sends one peer, ⌈T_r·k·S_max⌉ rows, T_r the
//                rank's own tokens and S_max the largest share of the rows one rank's experts take
// The busiest rank (most rows) sets the step: its all-to-all partners wait for it (sim/timeline.h).
// With `on_pim` set (a placement that may use PIM), each MOE_MATMUL becomes two records, the
// experts placed on the NPU and those on PIM (OpRecord::expert_group; either may have 0 rows).
// Each expert is decided by itself, by `on_pim` on a record of the layer's active experts (the
// rank's sum of a_i, rounded up) all with that expert's ⌈c_i⌉ rows: the placement's own rule for
// a grouped matmul of that shape (sim/placement.h; `auto`: the device whose modelled time is
// shorter), so an expert with few rows can go to PIM while one with many stays on the NPU. The
// PIM group runs beside the NPU group (sibling records). Every rank's plan keeps the
// same records in the same order, so the timeline can walk them in step.
// Under tensor parallelism (tp ranks, ep = 1) every rank holds a 1/tp slice of every expert
// (graph/shard_tensor_parallel.h): its records already carry the local n or k, every rank sees
// every routed row, so the same rows and active experts apply with the local widths, and the
// ranks are alike (rank 0's plan stands for them all). With tp == ep on the same ranks
// (graph/parallel.h) rank e holds its E/ep experts whole and sees every token (no all-to-all in
// its plan): its records are priced as an EP rank's over T = all the tokens, at full widths.
// With 1 < tp < ep (ep / tp attention groups) a rank's experts see T = every group's tokens and
// it dispatches 1/tp of its group's tokens (ExpertLoadOptions::tp).
// Thread safety: pure functions.
#include <functional>
#include <memory>

#include <nlohmann/json.hpp>

#include "sim/expert_routing.h"
#include "sim/hardware.h"
#include "sim/planner.h"
#include "sim/run_options.h"

namespace duet::sim {

// Per expert of one rank (experts [first, first + count)) for `tokens` tokens.
struct ExpertLoad {
    std::vector<double> rows, active;  // r_i and a_i above
};
ExpertLoad expert_load(const std::vector<double>& fractions, int64_t k, double tokens, int64_t first, int64_t count);

// True when the experts of `experts` (a MOE_MATMUL record: n_expert_active experts of
// m / n_expert_active rows each) run on PIM.
using ExpertOnPim = std::function<bool(const OpRecord& experts)>;

// One rank's experts in one decode step, per MoE layer (means over the layers).
struct RankExpertLoad {
    double rows = 0, active = 0;    // routed rows its experts receive; experts with rows
    double on_pim = 0, on_npu = 0;  // of the active experts, placed on PIM / on the NPU
    int64_t layers = 0;             // MoE layers summed (before the means are taken)
};

// Re-prices the MoE records of plan `p` (one stage) for EP rank `rank`, in place (see above).
// `decode`: when set, the rank's figures of the plan's last decode step are added to it.
void apply_expert_load(Plan& p, const ModelShape& s, const ExpertLoadOptions& o, int rank, const ExpertOnPim& on_pim,
                       RankExpertLoad* decode);

// The rows of one expert below which `on_pim` puts it on PIM, for the MoE record `r` (a group of
// its n_expert_active experts): the smallest row count (1 to 256) that goes to the NPU; 1 = never
// PIM; -1 = PIM up to 256 rows.
int64_t pim_row_threshold(const OpRecord& r, const ExpertOnPim& on_pim);

// The report's "experts" object (docs/report-schema.md): routing, ep, tp, experts per device, the
// per-device decode loads, the busiest device, the experts on PIM and NPU and the thresholds.
nlohmann::json expert_report_json(const ExpertLoadOptions& o, const ModelShape& s, const std::vector<RankExpertLoad>& ranks,
                                  const nlohmann::json& thresholds, int tp = 1);

// Every stage plan of `plan` (and Plan::next_stages) re-priced for EP rank 0, with the plans of
// ranks 1..ep-1 in Plan::ep_ranks, split by device when opts' placement may use PIM (decided on
// rank 0's sub-machine, sim/scale_out.h). `report` receives expert_report_json. Needs
// opts.experts.routing and a MoE shape (else returns `plan` unchanged and leaves `report` null).
Plan plan_with_expert_loads(const Plan& plan, const ModelShape& s, const RunOptions& opts, const SimHardware& hw,
                            nlohmann::json& report);

}  // namespace duet::sim
