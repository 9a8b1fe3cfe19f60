#include "workload/agent_bench.h"

#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

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
#include "workload/knob_effects.h"
#include "workload/model_limits.h"
#include "workload/modelled_machine.h"
#include "workload/rig_cache.h"

namespace duet::workload {

void run_agent_bench(const AgentBenchOptions& o) {
    const config::EnvMap env = config::process_env();
    const config::Settings st = config::load_settings(o.settings_path, env, known_soc_names());
    const config::CoopConfig cfg = config::load_coop_config(o.config_path, env);
    const config::RuntimeKnobs knobs = runtime_knobs_of(st);
    const AgentTrace trace =
        o.workload_file.empty() ? default_agent_trace(o.turns) : load_agent_trace(o.workload_file);
    const std::string model = o.model.empty() ? st.api.model : o.model;
    const bool file_mode = !model::is_trace_only_model(model);  // a preset or config.json: trace-only
    if (file_mode && !std::filesystem::exists(model))
        fail("--model = \"{}\" is neither an architecture preset, a Hugging Face config.json nor a file (presets: {})",
             model, model::arch_preset_list());
    const model::Hparams hp =
        file_mode ? model::hparams_from_gguf(format::GgufFile::open(model)) : model::trace_only_hparams(model);

    AgentAblation ab;
    ab.workload = trace.source;
    ab.n_calls = int64_t(agent_requests(trace).size());
    ab.session_tokens = session_tokens(trace);
    const int64_t max_ctx = std::max(o.max_ctx > 0 ? o.max_ctx : hp.n_ctx_train, ab.session_tokens + 1);
    if (file_mode) {
        RealOptions ro;
        ro.threads = o.threads;
        ro.max_ctx = max_ctx;
        ro.pin_threads = knobs.cpu_affinity != 0;  // CPU_AFFINITY_CONF
        apply_engine_knobs(knobs, ro.engine);
        std::fprintf(stderr, "agent: replaying %lld calls on %s, %zu configurations ...\n", (long long)ab.n_calls,
                     model.c_str(), std::size(kOptimisations));  // all_off, all_on, the optimisations
                                                                 // but w8a16/w8a8 (modelled only)
        ab.real = ablate_real(model, trace, ro, ab.targets, hp.head_dim);
        ab.real->what = fmt::format("{} on this host ({} threads, cold page cache at each load, KV reservation {} "
                                    "positions{})", model, o.threads > 0 ? std::to_string(o.threads) : "all", max_ctx,
                                    ro.pin_threads ? ", threads pinned (CPU_AFFINITY_CONF)" : "");
    }
    const graph::ModelShape shape = bench_model_shape(model, st.runtime.dtype);
    const auto rig = cached_hardware_rig(st, cfg, "", config::effective_npu_dispatch(o.dispatch, knobs));
    sim::RunOptions base;
    base.prefetch_mlp = knobs.prefetch_mlp;
    base.multi_stream_memory_reuse = knobs.multi_stream_memory_reuse;
    ab.modelled = ablate_modelled(
        shape, trace, rig->hw, max_ctx,
        fmt::format("{} ({}) on {} ({} dispatch), npu_only, KV reservation {} positions", model,
                    st.runtime.dtype, rig->npu->name(), hw::npu::dispatch_name(rig->npu->options().dispatch), max_ctx),
        ab.targets, base);

    std::fputs(format_ablation(ab).c_str(), stdout);
    if (!o.report.empty()) {
        sim::write_file_atomic(o.report, ablation_json(ab).dump(2) + "\n");
        std::printf("report: %s\n", o.report.c_str());
    }
    if (!o.svg.empty()) {
        sim::write_file_atomic(o.svg, ablation_svg(ab));
        std::printf("chart: %s\n", o.svg.c_str());
    }
}

}  // namespace duet::workload
