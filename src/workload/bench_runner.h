#pragma once
// The trace-only co-inference comparison behind `duet bench`, the `duet` object of every
// server response and the server's "bench" tasks: one place that turns settings + config +
// an architecture (preset name or GGUF file) into a sim::BenchReport.
#include <memory>
#include <string>
#include <vector>

#include "config/coop_config.h"
#include "config/runtime_knobs.h"
#include "config/settings.h"
#include "sim/expert_routing.h"
#include "sim/hw_rig.h"
#include "graph/model_shape.h"
#include "sim/planner.h"
#include "sim/report.h"

namespace duet::workload {

struct TraceBenchInputs {
    std::string model;  // architecture preset or GGUF file (its hparams only: no weights are read)
    int64_t seq_len = 2048;
    int64_t gen_len = 256;
    int32_t batch = 1;
    std::string baseline = "npu_only", target = "npu_pim_coop";
    std::string pim;       // PIM preset ("" = the one the NPU's memory implies)
    std::string dispatch;  // NPU dispatch mode ("" = preset default)
    sim::Thresholds thresholds;
    bool record_events = false;  // keep per-op events (for --trace)
    bool fuse = false;           // plan the fused graph (graph::fuse_all)
    int64_t trace_steps = -1;    // with record_events: decode steps recorded (-1: all)
    // Scale-out (docs/scale-out.md): tensor-parallel ranks, pipeline stages, FlashComm and
    // HCCL_OP_EXPANSION_MODE (AI_CPU, AIV, HOST, HOST_TS) of the modelled collectives.
    int tp = 1, pp = 1;
    // Expert parallelism (ranks sharing the routed experts) and the routing the experts are priced
    // with (sim/expert_routing.h); routing null: uniform, for a trace-only MoE model.
    int ep = 1;
    std::shared_ptr<const sim::ExpertRouting> routing;
    bool flashcomm = false;
    std::string hccl_expansion = "HOST";
    bool prefetch_mlp = false;         // VLLM_ASCEND_ENABLE_PREFETCH_MLP (sim::RunOptions)
    int multi_stream_memory_reuse = 1; // MULTI_STREAM_MEMORY_REUSE (sim::RunOptions)
    bool serving_step_cost = true;     // the serving stack's per-step host work (sim::RunOptions)
};

// Throws duet::Error when the ep x tp x pp ranks of an expert-parallel run need more NPUs than
// the topology has (`npus`) or do not divide them, naming the flags and the keys that give more.
void check_expert_parallel_ranks(int ep, int tp, int pp, int64_t npus);

// --ep / --expert-skew / --routing-stats of a trace-only model (in.model a preset, config.json or
// GGUF hparams; in.tp set): in.ep = ep and in.routing (uniform for a MoE model when neither skew
// >= 0 nor routing_stats is given). Throws duet::Error, exit 2 before any work: --tp with --ep
// (tensor parallelism is not modelled for experts or latent attention: the ep ranks run
// data-parallel attention), a dense model, an ep that does not divide the experts, bad routing.
void set_expert_inputs(TraceBenchInputs& in, int ep, double skew, const std::string& routing_stats,
                       const std::string& dtype);

// Micro-batches of a pipeline-parallel run: the largest divisor of the batch not above pp
// (1 without pipeline parallelism).
int micro_batches_for(int32_t batch, int pp);

// The PIM weight base's operand type for config.toml [pim] precision. `configured` AUTO: bf16
// for runtime_dtype bf16; else f16, or bf16 (automatic = true) when pim0 (a
// hw::pim::PimDevice of preset `pim_preset`) has bf16 MACs and no f16 MACs. `supported` is false
// when pim0 has no MACs of the chosen type (i8 is always supported: widened by the PIM model);
// `note` then names the knob, else states an automatic choice ("" when neither).
struct PimPrecisionChoice {
    config::PimPrecision precision = config::PimPrecision::FP16;
    bool automatic = false;
    bool supported = true;
    std::string note;
};
PimPrecisionChoice choose_pim_precision(config::PimPrecision configured, const std::string& runtime_dtype,
                                        const hw::Device* pim0, const std::string& pim_preset);

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
};
// Validates the policies against the settings and the available devices and builds the rig.
BenchSetup prepare_bench(const config::Settings& st, const config::CoopConfig& cfg, const TraceBenchInputs& in,
                         bool file_mode);
// Trace-only plans of both runs from the shapes.
void plan_generations(const BenchSetup& s, const TraceBenchInputs& in, sim::Plan& plan_b, sim::Plan& plan_t);
// --flashcomm and --hccl-expansion over the settings knobs they override
// (VLLM_ASCEND_ENABLE_FLASHCOMM, HCCL_OP_EXPANSION_MODE; HOST when neither names a mode); a
// mode it does not know is an error naming --hccl-expansion.
void set_collective_knobs(TraceBenchInputs& in, bool flashcomm_flag, const std::string& expansion_flag,
                          const config::RuntimeKnobs& knobs);
// The run options of one side of the comparison (policy `p`) as finish_bench simulates it.
sim::RunOptions bench_run_options(const config::CoopConfig& cfg, sim::Policy p, const TraceBenchInputs& in);
// Simulates both plans and judges them; `seq_len` is the prompt length actually planned. A
// caller that already simulated the baseline with bench_run_options(cfg, s.pb, in) on the same
// rig and plan (tune: it is the same for many points) passes it as `baseline`.
sim::BenchReport finish_bench(const config::Settings& st, const config::CoopConfig& cfg, const TraceBenchInputs& in,
                              const BenchSetup& s, const sim::Plan& plan_b, const sim::Plan& plan_t, int64_t seq_len,
                              const sim::RunReport* baseline = nullptr);

// The effective settings + config knobs as JSON values (report "config").
nlohmann::json config_json(const config::Settings& st, const config::CoopConfig& cfg);
// The devices and links of the machine (report "topology", docs/report-schema.md).
nlohmann::json topology_json(const sim::SimHardware& hw);

// --model PRESET|FILE -> the shape the planner needs (weights in `dtype`, settings' names).
graph::ModelShape bench_model_shape(const std::string& model, const std::string& dtype);
// NPUs of the modelled topology: settings ascend.device_id must be below it. 1 until the
// topology work ([topology] in config.toml) models more.
int64_t modelled_npu_count(const config::CoopConfig& cfg);
// NPU preset names soc_version may take (aliases included).
std::vector<std::string> known_soc_names();

// The hardware rig for these settings, config (its [topology] included) and overrides, built
// once per process and configuration and then shared (a bench, every sweep point and every
// served request reuse it instead of re-reading the presets). Thread safe; at most 16 rigs are
// kept (the oldest configuration is dropped first). `host_cpu`: the machine has cpu0 (pim_only).
std::shared_ptr<const sim::HardwareRig> cached_hardware_rig(const config::Settings& st, const config::CoopConfig& cfg,
                                                            const std::string& pim_preset,
                                                            const std::string& npu_dispatch, bool host_cpu = false);
// How many rigs cached_hardware_rig has built so far in this process (for tests).
int64_t hardware_rigs_built();

// The [topology] section after `duet bench --topology FILE --npus N --pims M` (each optional:
// file empty, counts -1). Throws duet::Error naming the flag or file key, value and what is allowed.
config::TopologySection topology_from_flags(const config::TopologySection& base, const std::string& file, int64_t npus,
                                            int64_t pims);

// Throws duet::Error for bad inputs (unknown policy, preset, inconsistent precision).
sim::BenchReport run_trace_bench(const config::Settings& st, const config::CoopConfig& cfg,
                                 const TraceBenchInputs& in);

}  // namespace duet::workload
