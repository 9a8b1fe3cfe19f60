// `duet bench`: baseline vs target placement on the modelled NPU + PIM, trace-only.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "cli/bench_agent.h"
#include "cli/bench_file_mode.h"
#include "cli/bench_serving.h"
#include "cli/commands.h"
#include "cli/ctx_check.h"
#include "cli/flags.h"
#include "cli/knob_effects.h"
#include "cli/warmup_flags.h"
#include "config/coop_config.h"
#include "config/runtime_knobs.h"
#include "config/settings.h"
#include "core/error.h"
#include "core/log.h"
#include "graph/parallel.h"
#include "hw/pim/pim_device.h"
#include "model/arch_presets.h"
#include "model/hf_config.h"
#include "sim/collective.h"
#include "sim/hw_rig.h"
#include "sim/planner.h"
#include "sim/report.h"
#include "sim/report_files.h"
#include "tune/memory_estimate.h"
#include "workload/modelled_machine.h"
#include "workload/trace_bench.h"
#include "workload/routing_stats.h"
#include "workload/model_limits.h"

namespace duet::cli {

namespace {

// The report's account of [pim] precision = int8 in FILE mode: the Q8_0 matrices held as int8
// with their scales, the other quantised dtypes widened to int8 (no preset has int4 MACs), and
// how the PIM model runs int8 (its MACs, or widened to its 16-bit float MACs where it has none).
nlohmann::json int8_statement(const FileRun& run, const sim::OpTrace& trace, const hw::Device* pim) {
    std::string widened;  // quantised dtypes other than q8_0 in the matmuls
    for (const auto& rec : trace)
        if (rec.kind == sim::OpKind::MATMUL && dtype_is_quantized(rec.weight_dtype) && rec.weight_dtype != DType::Q8_0 &&
            widened.find(dtype_name(rec.weight_dtype)) == std::string::npos)
            widened += std::string(widened.empty() ? "" : ", ") + dtype_name(rec.weight_dtype);
    const auto* dev = dynamic_cast<const hw::pim::PimDevice*>(pim);
    return {{"q8_0_matrices", run.int8_matrices},
            {"scale_bytes", run.int8_scale_bytes},
            {"widened_to_int8", widened},
            {"pim_macs", dev ? dev->quantised_operands() : std::string("no PIM device")}};
}

struct BenchArgs {
    std::string baseline = "npu_only", target = "npu_pim_coop";
    int64_t seq_len = -1, gen_len = 256, batch = -1;  // -1: from settings.json
    std::string model, settings_path, config_path, report, trace, svg, pim, dispatch, topology;
    int64_t npus = -1, pims = -1;  // -1: from [topology]
    int64_t trace_steps = -1;      // -1: every decode step
    int64_t tp = 1, pp = 1;        // docs/scale-out.md
    int64_t ep = -1;               // -1: from [topology] ep
    double expert_skew = -1;       // -1: not given (uniform routing unless --routing-stats)
    std::string routing_stats;
    bool flashcomm = false;        // else VLLM_ASCEND_ENABLE_FLASHCOMM
    std::string hccl_expansion;    // "": HCCL_OP_EXPANSION_MODE, else HOST
    sim::Thresholds th;
    bool fuse = false;
    std::string kv_type;  // "" = settings runtime.dtype; int8 = the int8 KV cache (trace-only)
    bool no_verdict_exit = false;
    int64_t max_memory_mb = int64_t(tune::kDefaultMemoryCapBytes >> 20);  // trace-only plans (tune/memory_estimate.h)
    runtime::WarmupOptions warmup;  // FILE mode
    AgentBenchArgs agent;           // --workload agent (cli/bench_agent.h)
    ServingBenchArgs serving;       // --workload serving (cli/bench_serving.h)
};

// --ep / --expert-skew / --routing-stats are modelled by the trace-only comparison and the serving simulator.
void check_expert_flags_unused(const BenchArgs& a, const std::string& workload) {
    if (a.ep > 1) fail("--ep {} with --workload {}: expert parallelism is modelled by the trace-only comparison and "
                       "--workload serving (allowed: --ep 1)", a.ep, workload);
    if (a.expert_skew >= 0 || !a.routing_stats.empty())
        fail("{} with --workload {}: the routing is modelled by the trace-only comparison and --workload serving "
             "(allowed: no --workload, or --workload serving)",
             a.expert_skew >= 0 ? "--expert-skew" : "--routing-stats", workload);
}

// Expert parallelism and the routing of a trace-only MoE run (docs/scale-out.md).
void set_expert_inputs(const BenchArgs& a, const config::CoopConfig& cfg, const config::Settings& st, bool file_mode,
                       workload::TraceBenchInputs& in) {
    const int ep = int(a.ep != -1 ? a.ep : cfg.topology.ep);
    if (file_mode && ep > 1)
        fail("--ep {} with a model file: bench models expert parallelism trace-only (allowed: an architecture preset or "
             "a config.json)", ep);
    if (file_mode && (a.expert_skew >= 0 || !a.routing_stats.empty()))
        fail("{} with a model file: the engine routes the real tokens (allowed: an architecture preset or a config.json)",
             a.expert_skew >= 0 ? "--expert-skew" : "--routing-stats");
    if (file_mode) return;
    workload::set_expert_inputs(in, ep, a.expert_skew, a.routing_stats, st.runtime.dtype);
}

void run_bench(const BenchArgs& a, const CLI::App& root) {
    if (is_agent_workload(a.agent)) check_expert_flags_unused(a, a.agent.workload);
    if (is_agent_workload(a.agent))
        return run_bench_agent(a.agent, {a.model, a.settings_path, a.config_path, a.dispatch, a.report, a.svg});
    if (a.agent.workload == "serving")
        return run_bench_serving(a.serving, {a.model, a.settings_path, a.config_path, a.pim, a.dispatch, a.report,
                                             a.topology, a.agent.workload_file, a.svg, a.trace, a.trace_steps,
                                             a.baseline, a.target, a.npus, a.pims, a.seq_len, a.gen_len, a.tp, a.pp,
                                             a.ep, a.expert_skew, a.routing_stats, a.flashcomm, a.hccl_expansion,
                                             a.th, a.no_verdict_exit});
    const auto t0 = std::chrono::steady_clock::now();
    const config::EnvMap env = config::process_env();
    config::Settings st = config::load_settings(a.settings_path, env, workload::known_soc_names());
    config::CoopConfig cfg = config::load_coop_config(a.config_path, env);
    cfg.topology = workload::topology_from_flags(cfg.topology, a.topology, a.npus, a.pims);
    if (root.get_option("--log-level")->count() == 0) set_log_level(st.runtime.log_level, "settings runtime.log_level");

    workload::TraceBenchInputs in;
    in.seq_len = a.seq_len != -1 ? a.seq_len : st.runtime.seq_len;
    if (a.batch != -1 && (a.batch < 1 || a.batch > 4096)) fail("--batch = {} is not allowed (allowed: 1 to 4096)", a.batch);
    if (in.seq_len < 1) fail("--seq-len = {} is not allowed (allowed: 1 or more)", in.seq_len);
    in.batch = int32_t(a.batch != -1 ? a.batch : st.runtime.batch_size);
    if (a.model.empty() && root.get_subcommand("bench")->get_option("--model")->count() > 0)
        fail("--model is empty (allowed: an architecture preset or a GGUF file; leave the flag out to use settings "
             "api.model)");
    in.model = a.model.empty() ? st.api.model : a.model;
    in.gen_len = a.gen_len;
    in.baseline = a.baseline;
    in.target = a.target;
    in.pim = a.pim;
    const config::RuntimeKnobs knobs = runtime_knobs_of(st);
    in.dispatch = config::effective_npu_dispatch(a.dispatch, knobs);
    in.prefetch_mlp = knobs.prefetch_mlp;
    in.multi_stream_memory_reuse = knobs.multi_stream_memory_reuse;
    in.tp = int(a.tp);
    in.pp = int(a.pp);
    workload::set_collective_knobs(in, a.flashcomm, a.hccl_expansion, knobs);
    in.thresholds = a.th;
    in.record_events = !a.trace.empty();
    in.fuse = a.fuse;
    in.trace_steps = a.trace_steps;
    const bool file_mode = !model::is_trace_only_model(in.model);  // a preset or config.json: trace-only
    if (file_mode && in.tp * in.pp > 1)
        fail("--tp {} --pp {} with a model file: bench models tensor and pipeline parallelism trace-only (allowed: an "
             "architecture preset, or mpirun -np N duet run --tp N for the real engine)", in.tp, in.pp);
    set_expert_inputs(a, cfg, st, file_mode, in);
    // The model's own limits, before any rig or plan: a preset's context as a file's (run_file_engine).
    const workload::ModelLimits limits = workload::model_limits(in.model);
    workload::check_npu_only_layers(limits, cfg.scheduling.npu_only_layers,
                                    a.config_path + ": scheduling.npu_only_layers");
    if (a.seq_len != -1 || file_mode || in.gen_len >= limits.n_ctx)
        workload::check_context(limits, a.seq_len != -1 ? in.seq_len : 0, in.gen_len);
    else
        in.seq_len = workload::cut_to_context(limits, in.seq_len, in.gen_len);
    if (!file_mode)  // one baseline and one target plan of gen_len forwards, estimated before they are built
        tune::check_memory(tune::plan_memory(in.model, st.runtime.dtype, in.gen_len), uint64_t(a.max_memory_mb) << 20,
                           "this bench of " + in.model, "duet bench --max-memory-mb", "a smaller --gen-len");
    workload::BenchSetup setup = workload::prepare_bench(st, cfg, in, file_mode);
    if (!a.kv_type.empty() && a.kv_type != "f16") {  // the modelled KV cache in int8 blocks (runtime/kv_cache.h)
        if (file_mode) fail("--kv-type {} with a model file: FILE mode traces the engine's f16 KV (allowed: f16)", a.kv_type);
        setup.shape_b.kv_dtype = setup.shape_t.kv_dtype = kv_type_from_flag(a.kv_type);
    }
    sim::Plan plan, plan_t;
    int64_t sim_seq = in.seq_len;
    nlohmann::json functional;
    if (!file_mode) {
        workload::plan_generations(setup, in, plan, plan_t);
    } else {
        if (in.batch != 1) fail("--batch = {} with a model file: FILE mode runs one sequence (allowed: 1)", in.batch);
        const auto& lp = setup.rig->layout->params();
        const auto& org = setup.rig->layout->organisation();
        const bool pim_b = setup.pb != sim::Policy::NPU_ONLY, pim_t = setup.pt != sim::Policy::NPU_ONLY;
        const bool f32_to_f16 = op_precision_converts_f32(st.ascend.op_precision_mode);
        const bool int8 = cfg.pim.precision == config::PimPrecision::INT8;
        FileRun fb = run_file_engine(in.model, in.seq_len, in.gen_len, pim_b, lp, org, in.fuse, a.warmup, f32_to_f16,
                                     nullptr, int8, a.seq_len != -1);
        FileRun ft = run_file_engine(in.model, in.seq_len, in.gen_len, pim_t, lp, org, in.fuse, a.warmup, f32_to_f16,
                                     &fb.tokens, int8);
        // The modelled devices hold what the layout holds: f32 matrices as f16 when the precision mode
        // converts them, in both placements (the NPU's matrix operators run them in f16 too).
        if (f32_to_f16)
            for (sim::OpTrace* tr : {&fb.trace, &ft.trace})
                for (auto& rec : *tr)
                    if (rec.kind == sim::OpKind::MATMUL && rec.weight_dtype == DType::F32) {
                        rec.weight_dtype = DType::F16;
                        rec.weight_bytes /= 2;
                    }
        plan.ops = std::move(fb.trace);
        plan.forwards = sim::split_forwards(plan.ops);
        plan_t.ops = std::move(ft.trace);
        plan_t.forwards = sim::split_forwards(plan_t.ops);
        sim_seq = int64_t(fb.prompt.size());
        for (const auto& rec : plan.ops)  // memory accounting in the weight dtype the devices hold
            if (rec.kind == sim::OpKind::MATMUL) setup.shape_b.weight_dtype = setup.shape_t.weight_dtype = rec.weight_dtype;
        double max_diff = 0;  // teacher-forced: both runs scored on the baseline's tokens
        for (size_t i = 0; i < std::min(fb.logits.size(), ft.logits.size()); ++i)
            max_diff = std::max(max_diff, double(std::fabs(fb.logits[i] - ft.logits[i])));
        auto host = [](const FileRun& f) {
            return nlohmann::json{{"prefill_ms", f.stats.prefill_ms},
                                  {"ttft_ms", f.stats.ttft_ms},
                                  {"decode_ms", f.stats.decode_ms},
                                  {"decode_ms_per_token", f.stats.n_decode > 0 ? f.stats.decode_ms / double(f.stats.n_decode) : 0.0},
                                  {"pim_layout_matrices", f.pim_matrices},
                                  {"f16_from_f32_matrices", f.converted_matrices},
                                  {"warmup", {{"method", f.warmup.method}, {"prefault_bytes", f.warmup.prefault_bytes},
                                              {"prefault_ms", f.warmup.prefault_ms}, {"n_forwards", f.warmup.n_forwards}}}};
        };
        nlohmann::json pim_int8;  // [pim] precision = int8: what the layout and the PIM model did
        if (int8) pim_int8 = int8_statement(ft.int8_matrices ? ft : fb, plan_t.ops, setup.rig->pim.get());
        functional = {{"file", in.model},
                      {"pim_precision", config::pim_precision_name(cfg.pim.precision)},
                      {"pim_int8", pim_int8},
                      {"n_prompt", sim_seq},
                      {"identical", fb.tokens == ft.tokens},
                      {"precision_changed", fb.converted_matrices + ft.converted_matrices > 0},
                      {"op_precision_mode", st.ascend.op_precision_mode},
                      {"max_logit_diff", max_diff},
                      {"tokens_baseline", fb.tokens},
                      {"tokens_target", ft.tokens},
                      {"baseline", host(fb)},
                      {"target", host(ft)}};
    }
    sim::BenchReport r = workload::finish_bench(st, cfg, in, setup, plan, plan_t, sim_seq);
    r.functional = functional;
    log_modelled_execute_times(knobs, in.baseline, r.baseline.timeline);
    log_modelled_execute_times(knobs, in.target, r.target.timeline);
    const std::string& model = in.model;

    std::fputs(sim::format_table(r).c_str(), stdout);
    if (!a.report.empty()) {
        sim::write_file_atomic(a.report, sim::report_to_json(r).dump(2) + "\n");
        std::printf("report: %s\n", a.report.c_str());
    }
    if (!a.trace.empty()) {
        const size_t events = r.baseline.timeline.events.size() + r.target.timeline.events.size();
        std::fprintf(stderr, "trace: writing %zu events (%s decode steps) to %s ...\n", events,
                     a.trace_steps < 0 ? "all" : std::to_string(a.trace_steps).c_str(), a.trace.c_str());
        sim::write_file_atomic(a.trace, sim::chrome_trace_json(r));
        std::printf("trace: %s (open in ui.perfetto.dev or chrome://tracing)\n", a.trace.c_str());
    }
    if (!a.svg.empty()) {
        sim::write_file_atomic(a.svg, sim::svg_chart(r));
        std::printf("chart: %s\n", a.svg.c_str());
    }
    // Same numerics must give the same tokens; a layout that changed precision reports the difference instead.
    if (file_mode && !functional["identical"].get<bool>() && !functional["precision_changed"].get<bool>())
        fail("{}: the generated tokens differ between {} and {} (max logit difference {:.3g}): the PIM layout path "
             "computed different numbers",
             model, in.baseline, in.target, functional["max_logit_diff"].get<double>());
    const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    DUET_LOG_INFO("bench: {} ops per run simulated in {:.1f} ms wall", plan.ops.size(), wall_ms);
    bool all_met = true;  // exit status: 0 all verdicts met, 3 any NOT MET (unless --no-verdict-exit), 2 errors
    for (const auto& v : r.verdicts) all_met = all_met && v.met;
    if (!all_met && !a.no_verdict_exit) throw ExitStatus{3};
}

}  // namespace

void register_bench(CLI::App& app) {
    auto a = std::make_shared<BenchArgs>();
    CLI::App* c = app.add_subcommand(
        "bench",
        "Compare a baseline and a target placement on the modelled NPU + PIM. A preset runs trace-only (shapes,\n"
        "no weights); a GGUF file also runs the engine for real in both policies and checks the tokens agree.\n"
        "Examples:\n  duet bench --baseline npu_only --target npu_pim_coop --seq-len 2048 --gen-len 256 \\\n"
        "             --model llama2-7b --report reports/coop_2k.json --trace timeline.json --svg chart.svg\n"
        "  duet bench --model llama2-7b --pims 2        (decode GEMVs split across two PIM devices)\n"
        "  duet bench --model llama2-70b --npus 8 --pims 8 --tp 8 --hccl-expansion AIV   (tensor parallel, docs/scale-out.md)\n"
        "  duet bench --model llama2-70b --pims 8 --tp 8 --target pim_only --topology cxl.toml   (pim_link = \"cxl2_x16\")\n"
        "  duet bench --model deepseek-v3 --npus 8 --pims 8 --ep 8 --expert-skew 0.5   (expert parallel, docs/scale-out.md)\n"
        "  duet bench -m model.gguf --seq-len 64 --gen-len 32\n"
        "  duet bench --workload agent -m model.gguf --report agent.json --svg agent.svg   (docs/agent.md)\n"
        "  duet bench --workload serving --model llama2-7b --rate 4 --requests 1000 --seq-len 512 --gen-len 128 \\\n"
        "             --slo-ttft-ms 500 --slo-tpot-ms 50 --report serving.json   (docs/serving.md)\n"
        "Exit status: 0 when every verdict is MET, 3 when any is NOT MET (--no-verdict-exit: 0), 2 for errors.");
    a->settings_path = default_settings_path();
    a->config_path = default_config_path();
    text(c, "--baseline", a->baseline, "Baseline policy: npu_only, pim_only, npu_pim_coop, auto");
    text(c, "--target", a->target, "Target policy");
    number(c, "--seq-len", a->seq_len, "Prompt tokens", int64_t(1), kMaxTokens,
           DefaultFrom{"settings runtime.seq_len"});
    number(c, "--gen-len", a->gen_len, help::kGenLen, int64_t(1), int64_t(65536));
    number(c, "--batch", a->batch, "Concurrent sequences", int64_t(1), int64_t(4096),
           DefaultFrom{"settings runtime.batch_size"});
    number(c, "--max-memory-mb", a->max_memory_mb, help::kMaxMemoryMb, int64_t(128), int64_t(1) << 22);
    text(c, "--model,-m", a->model, help::kModelAny, DefaultFrom{"settings api.model"});
    text(c, "--settings", a->settings_path, help::kSettings);
    text(c, "--config", a->config_path, help::kConfig);
    text(c, "--pim", a->pim, help::kPim, DefaultFrom{"pim_hbm2_fimdram"});
    text(c, "--npu-dispatch", a->dispatch, help::kNpuDispatch,
         DefaultFrom{"queue1"});
    text(c, "--kv-type", a->kv_type, help::kKvType, DefaultFrom{"settings runtime.dtype"})
        ->transform(dtype_alias("--kv-type", {"int8"}));
    c->add_flag("--fuse", a->fuse, help::kFuse);
    c->add_option("--report", a->report, "Write the JSON report here (docs/report-schema.md)");
    c->add_option("--trace", a->trace, "Write a Chrome/Perfetto trace of both timelines (one track group per device and link)");
    number(c, "--trace-steps", a->trace_steps, "Decode steps the trace records (prefill is always recorded)",
           int64_t(0), int64_t(1) << 20, DefaultFrom{"all"});
    number(c, "--npus", a->npus, "NPUs in the simulated machine", int64_t(1), int64_t(64),
           DefaultFrom{"config.toml [topology] npus = 1"});
    number(c, "--pims", a->pims, "PIM devices; decode GEMVs are split by rows across them", int64_t(0), int64_t(64),
           DefaultFrom{"config.toml [topology] pims = 1"});
    text(c, "--topology", a->topology,
         "TOML file with a [topology] section (npus, pims, npu_link, pim_link, pim_presets; docs/topology.md)");
    number(c, "--tp", a->tp, "Tensor-parallel ranks: heads and FFN split, all-reduce per block (docs/scale-out.md)",
           int64_t(1), int64_t(1024));
    number(c, "--pp", a->pp, "Pipeline stages: layers split, micro-batches of the batch in flight", int64_t(1),
           int64_t(1024));
    number(c, "--ep", a->ep,
           "Expert-parallel ranks of a MoE model: routed experts split across devices, all-to-all dispatch and "
           "combine per MoE layer (docs/scale-out.md)", int64_t(1), int64_t(1024), DefaultFrom{"config.toml [topology] ep = 1"});
    number(c, "--expert-skew", a->expert_skew,
           "Zipf exponent s of the routing: expert i takes (i+1)^-s of the routed rows, normalised (0: uniform)", 0.0,
           10.0, DefaultFrom{"uniform routing"});
    text(c, "--routing-stats", a->routing_stats,
         "JSON file of per-layer, per-expert routed-row fractions (docs/scale-out.md, \"Routing statistics\")");
    c->add_flag("--flashcomm", a->flashcomm,
                "Reduce-scatter + all-gather in place of each all-reduce, add + norm on 1/tp of the tokens (else "
                "VLLM_ASCEND_ENABLE_FLASHCOMM)");
    text(c, "--hccl-expansion", a->hccl_expansion,
         "Where collectives are expanded, their launch cost: AI_CPU, AIV, HOST, HOST_TS (configs/hw/collectives.toml)",
         DefaultFrom{"HCCL_OP_EXPANSION_MODE, else HOST"});
    c->add_option("--svg", a->svg, "Write an SVG chart: TBT per token and memory breakdown (--workload serving --rate-sweep: p99 TTFT and TPOT against throughput)");
    number(c, "--tbt-reduction-min", a->th.tbt_reduction_min, "Verdict: required TBT reduction (fraction)", 0.0, 1.0);
    number(c, "--ttft-increase-max-ms", a->th.ttft_increase_max_ms, "Verdict: allowed TTFT increase (ms)", 0.0,
           1e6);
    number(c, "--memory-increase-max", a->th.memory_increase_max,
           "Verdict: allowed peak memory increase (fraction, 1 = +100%)", 0.0, 10.0);
    add_warmup_flags(c, a->warmup);
    add_agent_bench_flags(c, a->agent);
    add_serving_bench_flags(c, a->serving);
    c->add_flag("--no-verdict-exit", a->no_verdict_exit, "Exit 0 even when a verdict is NOT MET (exploration)");
    c->callback([a, &app]() { run_bench(*a, app); });
}

}  // namespace duet::cli
