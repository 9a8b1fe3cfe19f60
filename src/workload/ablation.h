#pragma once
// The ablation of the agent workload (issue 15): each optimisation switched on alone over an
// all-off baseline, and all of them together, on the real engine (a model file) and on the NPU
// model (the file's shape or a preset), side by side. Ratios are all-on (or one-on) ÷ all-off;
// the targets are TTFT <= 0.5x and peak memory <= 0.75x (judged, never tuned for).
//
// Thread safety: run on one thread; the real replays use the engine's pool.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "workload/agent_modelled.h"
#include "workload/agent_real.h"

namespace duet::workload {

// The optimisations, in table order. A side that has no mechanism for one says so (applies = false).
// W8A16 and W8A8 are the modelled weight quantisation (all_on uses W8A8, the stronger of the two).
// KV_INT8: the int8 KV cache (runtime/kv_cache.h), real and modelled, where head_dim allows it.
enum class Optimisation { PREFIX_REUSE, WARMUP, FUSION, PAGED_KV, STATIC_PLAN, KV_INT8, W8A16, W8A8 };
inline constexpr Optimisation kOptimisations[] = {Optimisation::PREFIX_REUSE, Optimisation::WARMUP,
                                                  Optimisation::FUSION,       Optimisation::PAGED_KV,
                                                  Optimisation::STATIC_PLAN,  Optimisation::KV_INT8,
                                                  Optimisation::W8A16,        Optimisation::W8A8};
// "prefix_reuse", "warmup", "fusion", "paged_kv", "static_plan", "kv_int8", "w8a16", "w8a8"
const char* optimisation_name(Optimisation o);

struct AblationRow {
    std::string name;            // "all_off", an optimisation name, "all_on"
    bool applies = true;         // false: this side has no such switch (the row repeats all_off)
    std::string note;            // why it does not apply
    double ttft_mean_ms = 0, ttft_first_ms = 0;
    uint64_t peak_memory_bytes = 0;
    double ttft_ratio = 1, peak_memory_ratio = 1;  // ÷ all_off
};

struct Targets {
    double ttft_ratio_max = 0.5;
    double peak_memory_ratio_max = 0.75;
};

struct AblationSide {
    std::string what;            // "real: tiny.gguf (host, 2 threads)" / "modelled: llama2-7b on Ascend910B"
    std::vector<AblationRow> rows;  // all_off, one per optimisation, all_on
    double ttft_ratio = 1, peak_memory_ratio = 1;  // all_on ÷ all_off
    bool ttft_met = false, memory_met = false;
    std::string ttft_binding, memory_binding;  // when missed: the term that decides it
    const AblationRow& row(const std::string& name) const;
};

struct AgentAblation {
    std::string workload;        // trace source
    int64_t n_calls = 0, session_tokens = 0;
    Targets targets;
    std::optional<AblationSide> real, modelled;
};

// Real side: 2 + |optimisations| session replays of the file.
// head_dim: the model's (the int8 KV row needs a multiple of 32, else it does not apply).
AblationSide ablate_real(const std::string& model_path, const AgentTrace& trace, const RealOptions& opts,
                         const Targets& targets, int64_t head_dim);
// Modelled side on the simulated machine (NPU only).
// `base`: the run options every replay starts from (runtime knobs: MLP prefetch, multi-stream reuse).
AblationSide ablate_modelled(const graph::ModelShape& shape, const AgentTrace& trace, const sim::SimHardware& hw,
                             int64_t max_ctx, const std::string& what, const Targets& targets,
                             const sim::RunOptions& base = {});

std::string format_ablation(const AgentAblation& a);   // the terminal table and the verdicts
nlohmann::json ablation_json(const AgentAblation& a);  // {"schema": "duet.agent/1", "agent": {"real", "modelled"}}
std::string ablation_svg(const AgentAblation& a);      // ratio bars per optimisation, real and modelled

}  // namespace duet::workload
