#pragma once
// The baseline-vs-target comparison behind `duet bench`, the `duet` object of every server
// response, the server's "bench" tasks and every `duet tune` point: settings + config + an
// architecture (preset name or GGUF file) to a sim::BenchReport. FILE mode (workload/file_bench.h)
// shares prepare_bench and finish_bench and replaces the plans by the engine's traces.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "config/coop_config.h"
#include "config/settings.h"
#include "graph/model_shape.h"
#include "graph/parallel.h"
#include "sim/hw_rig.h"
#include "sim/planner.h"
#include "sim/report.h"
#include "workload/bench_inputs.h"

namespace duet::workload {

// The parts of a comparison that FILE mode and trace-only mode share.
struct BenchSetup {
    sim::Policy pb = sim::Policy::NPU_ONLY, pt = sim::Policy::NPU_PIM_COOP;
    graph::ModelShape shape_b, shape_t;  // weights per policy (the PIM base holds [pim] precision)
    std::shared_ptr<const sim::HardwareRig> rig;  // shared with the rig cache: immutable
    // The PIM weight base's operand type when a policy uses the PIM (report "pim_precision",
    // docs/report-schema.md; null otherwise): config.toml [pim] precision = "auto" takes
    // runtime.dtype, and bf16 for f16 when pim0's preset has bf16 MACs but no f16 MACs.
    nlohmann::json pim_precision;
    // Set when the chosen operand type is one pim0 has no MACs for: the PIM runs no operator.
    // Names the knob (config.toml [pim] precision); added to the target run's warnings.
    std::string pim_idle_warning;
    // config.toml / --topology [topology] tp_split: how the tensor-parallel ranks divide a layer
    graph::TpPartition tp_partition = graph::TpPartition::MEGATRON;
};
// Validates the policies against the settings and the available devices and builds the rig.
BenchSetup prepare_bench(const config::Settings& st, const config::CoopConfig& cfg, const TraceBenchInputs& in,
                         bool file_mode);
// Trace-only plans of both runs from the shapes.
void plan_generations(const BenchSetup& s, const TraceBenchInputs& in, sim::Plan& plan_b, sim::Plan& plan_t);
// The run options of one side of the comparison (policy `p`) as finish_bench simulates it.
sim::RunOptions bench_run_options(const config::CoopConfig& cfg, sim::Policy p, const TraceBenchInputs& in);
// Simulates both plans and judges them; `seq_len` is the prompt length actually planned. A
// caller that already simulated the baseline with bench_run_options(cfg, s.pb, in) on the same
// rig and plan (tune: it is the same for many points) passes it as `baseline`.
sim::BenchReport finish_bench(const config::Settings& st, const config::CoopConfig& cfg, const TraceBenchInputs& in,
                              const BenchSetup& s, const sim::Plan& plan_b, const sim::Plan& plan_t, int64_t seq_len,
                              const sim::RunReport* baseline = nullptr);

// prepare_bench, plan_generations and finish_bench of a trace-only model. Throws duet::Error for
// bad inputs (unknown policy, preset, inconsistent precision).
sim::BenchReport run_trace_bench(const config::Settings& st, const config::CoopConfig& cfg,
                                 const TraceBenchInputs& in);

}  // namespace duet::workload
