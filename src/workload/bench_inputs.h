#pragma once
// What one baseline-vs-target comparison is asked (TraceBenchInputs) and the checks and knobs
// that fill it from a command's flags: expert parallelism, micro-batches, collectives.
#include <cstdint>
#include <memory>
#include <string>

#include "config/runtime_knobs.h"
#include "sim/expert_routing.h"
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

// Throws duet::Error when the ranks of an expert-parallel run (graph::stage_ranks(tp, ep) x pp)
// need more NPUs than
// the topology has (`npus`) or do not divide them, naming the flags and the keys that give more.
void check_expert_parallel_ranks(int ep, int tp, int pp, int64_t npus);

// --ep / --expert-skew / --routing-stats of a trace-only model (in.model a preset, config.json or
// GGUF hparams; in.tp set): in.ep = ep and in.routing (uniform for a MoE model when neither skew
// >= 0 nor routing_stats is given). Throws duet::Error, exit 2 before any work: --tp and --ep both
// above 1 with tp not dividing ep (graph::check_tp_with_ep), a dense model, an ep that does not
// divide the experts, bad routing.
void set_expert_inputs(TraceBenchInputs& in, int ep, double skew, const std::string& routing_stats,
                       const std::string& dtype);

// Micro-batches of a pipeline-parallel run: the largest divisor of the batch not above pp
// (1 without pipeline parallelism).
int micro_batches_for(int32_t batch, int pp);

// --flashcomm and --hccl-expansion over the settings knobs they override
// (VLLM_ASCEND_ENABLE_FLASHCOMM, HCCL_OP_EXPANSION_MODE; HOST when neither names a mode); a
// mode it does not know is an error naming --hccl-expansion.
void set_collective_knobs(TraceBenchInputs& in, bool flashcomm_flag, const std::string& expansion_flag,
                          const config::RuntimeKnobs& knobs);

}  // namespace duet::workload
