#include "cli/bench_agent.h"

#include <cstdio>
#include <filesystem>

#include "cli/flags.h"
#include "cli/knob_effects.h"
#include "config/coop_config.h"
#include "config/runtime_knobs.h"
#include "config/settings.h"
#include "core/error.h"
#include "format/gguf.h"
#include "hw/npu/npu_device.h"
#include "model/arch_presets.h"
#include "model/hf_config.h"
#include "model/hparams.h"
#include "sim/report_files.h"
#include "workload/ablation.h"
#include "workload/rig_cache.h"
#include "workload/modelled_machine.h"
#include "workload/model_limits.h"

namespace duet::cli {

void add_agent_bench_flags(CLI::App* c, AgentBenchArgs& a) {
    text(c, "--workload", a.workload,
         "generation: baseline vs target policy; agent: the multi-turn agent session's ablation (docs/agent.md); "
         "serving: a request stream through the continuous batcher (docs/serving.md)");
    c->add_option("--workload-file", a.workload_file,
                  "With --workload agent: JSONL session to replay (docs/agent.md), instead of the built-in one; with "
                  "--workload serving: a JSONL request trace or ShareGPT JSON (docs/serving.md)");
    number(c, "--turns", a.turns, "With --workload agent: turns of the built-in session", int64_t(1), int64_t(1000));
    number(c, "--threads", a.threads, help::kEngineThreads, 0,
           int(kMaxThreads));
    number(c, "--max-ctx", a.max_ctx,
           "With --workload agent: the max-length KV reservation paged KV is compared to (0: the model's trained "
           "context, at least the session)",
           int64_t(0), kMaxCtx);
}

bool is_agent_workload(const AgentBenchArgs& a) {
    if (a.workload != "generation" && a.workload != "agent" && a.workload != "serving")
        fail("--workload = \"{}\" is not allowed (allowed: generation, agent, serving)", a.workload);
    return a.workload == "agent";
}

void run_bench_agent(const AgentBenchArgs& a, const AgentBenchCommon& c) {
    const config::EnvMap env = config::process_env();
    const config::Settings st = config::load_settings(c.settings_path, env, workload::known_soc_names());
    const config::CoopConfig cfg = config::load_coop_config(c.config_path, env);
    const config::RuntimeKnobs knobs = runtime_knobs_of(st);
    const workload::AgentTrace trace =
        a.workload_file.empty() ? workload::default_agent_trace(a.turns) : workload::load_agent_trace(a.workload_file);
    const std::string model = c.model.empty() ? st.api.model : c.model;
    const bool file_mode = !model::is_trace_only_model(model);  // a preset or config.json: trace-only
    if (file_mode && !std::filesystem::exists(model))
        fail("--model = \"{}\" is neither an architecture preset, a Hugging Face config.json nor a file (presets: {})",
             model, model::arch_preset_list());
    const model::Hparams hp =
        file_mode ? model::hparams_from_gguf(format::GgufFile::open(model)) : model::trace_only_hparams(model);

    workload::AgentAblation ab;
    ab.workload = trace.source;
    ab.n_calls = int64_t(workload::agent_requests(trace).size());
    ab.session_tokens = workload::session_tokens(trace);
    const int64_t max_ctx = std::max(a.max_ctx > 0 ? a.max_ctx : hp.n_ctx_train, ab.session_tokens + 1);
    if (file_mode) {
        workload::RealOptions ro;
        ro.threads = a.threads;
        ro.max_ctx = max_ctx;
        ro.pin_threads = knobs.cpu_affinity != 0;  // CPU_AFFINITY_CONF
        apply_engine_knobs(knobs, ro.engine);
        std::fprintf(stderr, "agent: replaying %lld calls on %s, %zu configurations ...\n", (long long)ab.n_calls,
                     model.c_str(), std::size(workload::kOptimisations));  // all_off, all_on, the optimisations
                                                                          // but w8a16/w8a8 (modelled only)
        ab.real = workload::ablate_real(model, trace, ro, ab.targets, hp.head_dim);
        ab.real->what = fmt::format("{} on this host ({} threads, cold page cache at each load, KV reservation {} "
                                    "positions{})", model, a.threads > 0 ? std::to_string(a.threads) : "all", max_ctx,
                                    ro.pin_threads ? ", threads pinned (CPU_AFFINITY_CONF)" : "");
    }
    const graph::ModelShape shape = workload::bench_model_shape(model, st.runtime.dtype);
    const auto rig = workload::cached_hardware_rig(st, cfg, "", config::effective_npu_dispatch(c.dispatch, knobs));
    sim::RunOptions base;
    base.prefetch_mlp = knobs.prefetch_mlp;
    base.multi_stream_memory_reuse = knobs.multi_stream_memory_reuse;
    ab.modelled = workload::ablate_modelled(
        shape, trace, rig->hw, max_ctx,
        fmt::format("{} ({}) on {} ({} dispatch), npu_only, KV reservation {} positions", model,
                    st.runtime.dtype, rig->npu->name(), hw::npu::dispatch_name(rig->npu->options().dispatch), max_ctx),
        ab.targets, base);

    std::fputs(workload::format_ablation(ab).c_str(), stdout);
    if (!c.report.empty()) {
        sim::write_file_atomic(c.report, workload::ablation_json(ab).dump(2) + "\n");
        std::printf("report: %s\n", c.report.c_str());
    }
    if (!c.svg.empty()) {
        sim::write_file_atomic(c.svg, workload::ablation_svg(ab));
        std::printf("chart: %s\n", c.svg.c_str());
    }
}

}  // namespace duet::cli
