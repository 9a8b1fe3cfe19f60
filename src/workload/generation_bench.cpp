#include "workload/generation_bench.h"

#include <chrono>
#include <cstdio>

#include "config/coop_config.h"
#include "config/runtime_knobs.h"
#include "config/settings.h"
#include "core/error.h"
#include "core/log.h"
#include "model/hf_config.h"
#include "sim/report_files.h"
#include "workload/ctx_check.h"
#include "workload/file_bench.h"
#include "workload/knob_effects.h"
#include "workload/model_limits.h"
#include "workload/modelled_machine.h"
#include "workload/trace_bench.h"

namespace duet::workload {

namespace {

struct BenchConfig {
    config::Settings st;
    config::CoopConfig cfg;
};

// settings.json and config.toml with the environment's overrides and the topology flags.
BenchConfig load_bench_config(const GenerationBenchOptions& o) {
    const config::EnvMap env = config::process_env();
    BenchConfig c{config::load_settings(o.bench.settings_path, env, known_soc_names()),
                  config::load_coop_config(o.bench.config_path, env)};
    c.cfg.topology = topology_from_flags(c.cfg.topology, o.bench.topology, o.bench.npus, o.bench.pims);
    if (o.log_level_from_settings) set_log_level(c.st.runtime.log_level, "settings runtime.log_level");
    return c;
}

// The comparison's model and sizes from the options and settings defaults, checked.
TraceBenchInputs sized_inputs(const GenerationBenchOptions& o, const config::Settings& st) {
    TraceBenchInputs in;
    in.seq_len = o.bench.seq_len != -1 ? o.bench.seq_len : st.runtime.seq_len;
    if (o.batch != -1 && (o.batch < 1 || o.batch > 4096)) fail("--batch = {} is not allowed (allowed: 1 to 4096)", o.batch);
    if (in.seq_len < 1) fail("--seq-len = {} is not allowed (allowed: 1 or more)", in.seq_len);
    in.batch = int32_t(o.batch != -1 ? o.batch : st.runtime.batch_size);
    if (o.bench.model.empty() && o.model_given)
        fail("--model is empty (allowed: an architecture preset or a GGUF file; leave the flag out to use settings "
             "api.model)");
    in.model = o.bench.model.empty() ? st.api.model : o.bench.model;
    in.gen_len = o.bench.gen_len;
    return in;
}

// The rest of the inputs: policies, devices, parallelism and tracing, with the runtime knobs.
void set_run_inputs(const GenerationBenchOptions& o, const config::RuntimeKnobs& knobs, TraceBenchInputs& in) {
    in.baseline = o.bench.baseline;
    in.target = o.bench.target;
    in.pim = o.bench.pim;
    in.dispatch = config::effective_npu_dispatch(o.bench.dispatch, knobs);
    in.prefetch_mlp = knobs.prefetch_mlp;
    in.multi_stream_memory_reuse = knobs.multi_stream_memory_reuse;
    in.tp = int(o.bench.tp);
    in.pp = int(o.bench.pp);
    set_collective_knobs(in, o.bench.flashcomm, o.bench.hccl_expansion, knobs);
    in.thresholds = o.bench.th;
    in.record_events = !o.bench.trace.empty();
    in.fuse = o.fuse;
    in.trace_steps = o.bench.trace_steps;
}

// Expert parallelism and the routing of a trace-only MoE run (docs/scale-out.md); refused with a file.
void set_bench_expert_inputs(const GenerationBenchOptions& o, const config::CoopConfig& cfg,
                             const config::Settings& st, bool file_mode, TraceBenchInputs& in) {
    const int ep = int(o.bench.ep != -1 ? o.bench.ep : cfg.topology.ep);
    if (file_mode && ep > 1)
        fail("--ep {} with a model file: bench models expert parallelism trace-only (allowed: an architecture preset or "
             "a config.json)", ep);
    if (file_mode && (o.bench.expert_skew >= 0 || !o.bench.routing_stats.empty()))
        fail("{} with a model file: the engine routes the real tokens (allowed: an architecture preset or a config.json)",
             o.bench.expert_skew >= 0 ? "--expert-skew" : "--routing-stats");
    if (file_mode) return;
    set_expert_inputs(in, ep, o.bench.expert_skew, o.bench.routing_stats, st.runtime.dtype);
}

// The model's own limits, before any rig or plan: a preset's context as a file's (run_file_engine).
void check_model_limits(const GenerationBenchOptions& o, const BenchConfig& c, bool file_mode, TraceBenchInputs& in) {
    const ModelLimits limits = model_limits(in.model);
    check_npu_only_layers(limits, c.cfg.scheduling.npu_only_layers, o.bench.config_path + ": scheduling.npu_only_layers");
    if (o.bench.seq_len != -1 || file_mode || in.gen_len >= limits.n_ctx)
        check_context(limits, o.bench.seq_len != -1 ? in.seq_len : 0, in.gen_len);
    else
        in.seq_len = cut_to_context(limits, in.seq_len, in.gen_len);
    if (!file_mode && o.check_plan_memory)  // one baseline and one target plan of gen_len forwards
        o.check_plan_memory(in.model, c.st.runtime.dtype, in.gen_len);
}

// --kv-type: the modelled KV cache in int8 blocks (runtime/kv_cache.h) or f32; FILE mode traces f16.
void set_kv_type(const std::string& kv_type, bool file_mode, BenchSetup& setup) {
    if (kv_type.empty() || kv_type == "f16") return;
    if (file_mode) fail("--kv-type {} with a model file: FILE mode traces the engine's f16 KV (allowed: f16)", kv_type);
    setup.shape_b.kv_dtype = setup.shape_t.kv_dtype = kv_type_from_flag(kv_type);
}

// The table on stdout, then the report, trace and chart files asked for.
void write_bench_outputs(const GenerationBenchOptions& o, const sim::BenchReport& r) {
    std::fputs(sim::format_table(r).c_str(), stdout);
    if (!o.bench.report.empty()) {
        sim::write_file_atomic(o.bench.report, sim::report_to_json(r).dump(2) + "\n");
        std::printf("report: %s\n", o.bench.report.c_str());
    }
    if (!o.bench.trace.empty()) {
        const size_t events = r.baseline.timeline.events.size() + r.target.timeline.events.size();
        std::fprintf(stderr, "trace: writing %zu events (%s decode steps) to %s ...\n", events,
                     o.bench.trace_steps < 0 ? "all" : std::to_string(o.bench.trace_steps).c_str(), o.bench.trace.c_str());
        sim::write_file_atomic(o.bench.trace, sim::chrome_trace_json(r));
        std::printf("trace: %s (open in ui.perfetto.dev or chrome://tracing)\n", o.bench.trace.c_str());
    }
    if (!o.bench.svg.empty()) {
        sim::write_file_atomic(o.bench.svg, sim::svg_chart(r));
        std::printf("chart: %s\n", o.bench.svg.c_str());
    }
}

bool all_met(const sim::BenchReport& r) {
    bool met = true;
    for (const auto& v : r.verdicts) met = met && v.met;
    return met;
}

}  // namespace

bool run_generation_bench(const GenerationBenchOptions& o) {
    const auto t0 = std::chrono::steady_clock::now();
    const BenchConfig c = load_bench_config(o);
    TraceBenchInputs in = sized_inputs(o, c.st);
    const config::RuntimeKnobs knobs = runtime_knobs_of(c.st);
    set_run_inputs(o, knobs, in);
    const bool file_mode = !model::is_trace_only_model(in.model);  // a preset or config.json: trace-only
    if (file_mode && in.tp * in.pp > 1)
        fail("--tp {} --pp {} with a model file: bench models tensor and pipeline parallelism trace-only (allowed: an "
             "architecture preset, or mpirun -np N duet run --tp N for the real engine)", in.tp, in.pp);
    set_bench_expert_inputs(o, c.cfg, c.st, file_mode, in);
    check_model_limits(o, c, file_mode, in);
    BenchSetup setup = prepare_bench(c.st, c.cfg, in, file_mode);
    set_kv_type(o.kv_type, file_mode, setup);
    FileBenchPlans plans;
    plans.n_prompt = in.seq_len;
    if (!file_mode)
        plan_generations(setup, in, plans.plan_b, plans.plan_t);
    else
        plans = run_file_bench(c.st, c.cfg, in, setup, o.warmup, o.bench.seq_len != -1);
    sim::BenchReport r = finish_bench(c.st, c.cfg, in, setup, plans.plan_b, plans.plan_t, plans.n_prompt);
    r.functional = plans.functional;
    log_modelled_execute_times(knobs, in.baseline, r.baseline.timeline);
    log_modelled_execute_times(knobs, in.target, r.target.timeline);
    write_bench_outputs(o, r);
    if (file_mode) check_file_tokens(plans.functional, in);
    const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    DUET_LOG_INFO("bench: {} ops per run simulated in {:.1f} ms wall", plans.plan_b.ops.size(), wall_ms);
    return all_met(r);
}

}  // namespace duet::workload
