// `duet bench`: baseline vs target placement on the modelled NPU + PIM, trace-only.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cli/bench_file_mode.h"
#include "cli/commands.h"
#include "config/coop_config.h"
#include "config/settings.h"
#include "core/error.h"
#include "core/log.h"
#include "format/gguf.h"
#include "hw/npu/npu_device.h"
#include "hw/npu/npu_preset.h"
#include "layout/pim_layout.h"
#include "model/arch_presets.h"
#include "model/hparams.h"
#include "sim/hw_rig.h"
#include "sim/planner.h"
#include "sim/report.h"
#include "sim/report_files.h"

namespace duet::cli {

// --model PRESET|FILE -> the shape the planner needs. Shared with doctor.
sim::ModelShape bench_model_shape(const std::string& model, const std::string& dtype) {
    model::Hparams hp;
    if (const model::Hparams* p = model::find_arch_preset(model)) {
        hp = *p;
    } else if (std::filesystem::exists(model)) {
        hp = model::hparams_from_gguf(format::GgufFile::open(model));
    } else {
        fail("--model = \"{}\" is neither an architecture preset nor a file (presets: {})", model,
             model::arch_preset_list());
    }
    sim::ModelShape s;
    s.name = model;
    s.n_vocab = hp.n_vocab;
    s.n_embd = hp.n_embd;
    s.n_layer = hp.n_layer;
    s.n_head = hp.n_head;
    s.n_head_kv = hp.n_head_kv;
    s.n_ff = hp.n_ff;
    s.head_dim = hp.head_dim;
    s.tied_output = hp.tied_output;
    s.weight_dtype = dtype == "bfloat16" ? DType::BF16 : dtype == "float32" ? DType::F32 : DType::F16;
    s.kv_dtype = s.weight_dtype == DType::F32 ? DType::F32 : s.weight_dtype;
    return s;
}

// NPU preset names soc_version may take (aliases included, without their "(alias of ...)" note).
std::vector<std::string> known_soc_names() {
    std::vector<std::string> out;
    for (std::string n : hw::npu::known_soc_versions()) out.push_back(n.substr(0, n.find(' ')));
    return out;
}

namespace {

struct BenchArgs {
    std::string baseline = "npu_only", target = "npu_pim_coop";
    int64_t seq_len = 0, gen_len = 256, batch = 0;
    std::string model, settings_path, config_path, report, trace, svg, pim, dispatch;
    sim::Thresholds th;
};

void run_bench(const BenchArgs& a, const CLI::App& root) {
    const auto t0 = std::chrono::steady_clock::now();
    const config::EnvMap env = config::process_env();
    config::Settings st = config::load_settings(a.settings_path, env, known_soc_names());
    config::CoopConfig cfg = config::load_coop_config(a.config_path, env);
    if (root.get_option("--log-level")->count() == 0) set_log_level(st.runtime.log_level, "settings runtime.log_level");

    const int64_t seq_len = a.seq_len > 0 ? a.seq_len : st.runtime.seq_len;
    const int32_t batch = int32_t(a.batch > 0 ? a.batch : st.runtime.batch_size);
    const std::string model = a.model.empty() ? st.api.model : a.model;
    sim::Policy pb = sim::policy_from_name(a.baseline, "--baseline");
    sim::Policy pt = sim::policy_from_name(a.target, "--target");
    if (!st.ascend.enable_pim_coop && pt != sim::Policy::NPU_ONLY)
        fail("settings ascend.enable_pim_coop = false but --target = \"{}\" uses the PIM (allowed: set enable_pim_coop "
             "to true, or --target npu_only)", a.target);

    sim::ModelShape shape = bench_model_shape(model, st.runtime.dtype);
    auto rig = sim::make_hardware_rig(st, cfg, a.pim, a.dispatch);
    for (sim::Policy p : {pb, pt})
        if (p != sim::Policy::NPU_ONLY && !rig->hw.pim)
            fail("policy {} needs a PIM model, but PIM preset '{}' is unavailable: {}", sim::policy_name(p),
                 rig->pim_preset, rig->pim_unavailable);

    const bool file_mode = model::find_arch_preset(model) == nullptr;
    const std::string want = cfg.pim.precision == "bf16" ? "bfloat16" : "float16";
    if (!file_mode && (pb != sim::Policy::NPU_ONLY || pt != sim::Policy::NPU_ONLY) && st.runtime.dtype != want)
        fail("settings runtime.dtype = \"{}\" but config.toml pim.precision = \"{}\": the baseline and the PIM base "
             "would hold different weights (allowed: runtime.dtype float16 with pim.precision fp16, bfloat16 with bf16)",
             st.runtime.dtype, cfg.pim.precision);
    // [pim] precision: the weight base holds the model in the PIM's operand type
    auto shape_for = [&](sim::Policy p) {
        sim::ModelShape s = shape;
        if (p != sim::Policy::NPU_ONLY) s.weight_dtype = cfg.pim.precision == "bf16" ? DType::BF16 : DType::F16;
        return s;
    };
    sim::ModelShape shape_b = shape_for(pb), shape_t = shape_for(pt);
    sim::Plan plan, plan_t;
    int64_t sim_seq = seq_len;
    nlohmann::json functional;
    if (!file_mode) {
        plan = sim::plan_generation(shape_b, seq_len, a.gen_len, batch);
        plan_t = shape_t.weight_dtype == shape_b.weight_dtype ? plan : sim::plan_generation(shape_t, seq_len, a.gen_len, batch);
    } else {
        if (batch != 1) fail("--batch = {} with a model file: FILE mode runs one sequence (allowed: 1)", batch);
        const auto& lp = rig->layout->params();
        const auto& org = rig->layout->organisation();
        FileRun fb = run_file_engine(model, seq_len, a.gen_len, pb != sim::Policy::NPU_ONLY, lp, org);
        FileRun ft = run_file_engine(model, seq_len, a.gen_len, pt != sim::Policy::NPU_ONLY, lp, org);
        plan.ops = std::move(fb.trace);
        plan.forwards = sim::split_forwards(plan.ops);
        plan_t.ops = std::move(ft.trace);
        plan_t.forwards = sim::split_forwards(plan_t.ops);
        sim_seq = int64_t(fb.prompt.size());
        for (const auto& rec : plan.ops)  // memory accounting in the file's own weight dtype
            if (rec.kind == sim::OpKind::MATMUL) {
                shape_b.weight_dtype = shape_t.weight_dtype = rec.weight_dtype;
                break;
            }
        auto host = [](const FileRun& f) {
            return nlohmann::json{{"prefill_ms", f.stats.prefill_ms},
                                  {"ttft_ms", f.stats.ttft_ms},
                                  {"decode_ms", f.stats.decode_ms},
                                  {"decode_ms_per_token", f.stats.n_decode > 0 ? f.stats.decode_ms / double(f.stats.n_decode) : 0.0},
                                  {"pim_layout_matrices", f.pim_matrices},
                                  {"plain_matrices", f.plain_matrices}};
        };
        functional = {{"file", model},         {"n_prompt", sim_seq},           {"identical", fb.tokens == ft.tokens},
                      {"tokens_baseline", fb.tokens}, {"tokens_target", ft.tokens}, {"baseline", host(fb)},
                      {"target", host(ft)}};
    }
    const bool events = !a.trace.empty();
    sim::RunOptions ob = sim::run_options_from(cfg, pb), ot = sim::run_options_from(cfg, pt);
    ob.record_events = ot.record_events = events;

    sim::BenchReport r;
    r.model = model;
    r.seq_len = sim_seq;
    r.gen_len = a.gen_len;
    r.batch = batch;
    r.npu = rig->npu->name() + " (" + hw::npu::dispatch_name(rig->npu->options().dispatch) + ")";
    r.pim = rig->hw.pim ? rig->pim_preset : "none";
    r.memory = rig->hw.memory_name;
    r.thresholds = a.th;
    r.functional = functional;
    r.baseline = sim::simulate_run(shape_b, plan, sim_seq + a.gen_len, batch, ob, rig->hw);
    r.target = sim::simulate_run(shape_t, plan_t, sim_seq + a.gen_len, batch, ot, rig->hw);
    if (pt != sim::Policy::NPU_ONLY && r.target.memory.block_index_bytes > 0)
        layout::check_index_ratio(r.target.memory.block_index_bytes, r.target.memory.weights_bytes,
                                  rig->layout->params());
    r.verdicts = sim::judge(r.baseline, r.target, a.th, rig->hw);
    nlohmann::json cfg_json;
    for (const auto& f : config::settings_fields()) cfg_json["settings"][f.dotted()] = f.show(st);
    for (const auto& f : config::coop_config_fields()) cfg_json["config"][f.dotted()] = f.show(cfg);
    r.config = cfg_json;

    std::fputs(sim::format_table(r).c_str(), stdout);
    if (!a.report.empty()) {
        sim::write_file_atomic(a.report, sim::report_to_json(r).dump(2) + "\n");
        std::printf("report: %s\n", a.report.c_str());
    }
    if (!a.trace.empty()) {
        sim::write_file_atomic(a.trace, sim::chrome_trace_json(r));
        std::printf("trace: %s (open in ui.perfetto.dev or chrome://tracing)\n", a.trace.c_str());
    }
    if (!a.svg.empty()) {
        sim::write_file_atomic(a.svg, sim::svg_chart(r));
        std::printf("chart: %s\n", a.svg.c_str());
    }
    if (file_mode && !functional["identical"].get<bool>())
        fail("{}: the generated tokens differ between {} and {}: the PIM layout path computed different numbers",
             model, a.baseline, a.target);
    const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    DUET_LOG_INFO("bench: {} ops per run simulated in {:.1f} ms wall", plan.ops.size(), wall_ms);
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
        "  duet bench -m model.gguf --seq-len 64 --gen-len 32");
    a->settings_path = std::string(DUET_DEFAULT_CONFIG_DIR) + "/settings.json";
    a->config_path = std::string(DUET_DEFAULT_CONFIG_DIR) + "/config.toml";
    c->add_option("--baseline", a->baseline, "Baseline policy: npu_only, pim_only, npu_pim_coop, auto")->capture_default_str();
    c->add_option("--target", a->target, "Target policy")->capture_default_str();
    c->add_option("--seq-len", a->seq_len, "Prompt tokens (default: settings runtime.seq_len)");
    c->add_option("--gen-len", a->gen_len, "Generated tokens (first from prefill)")->capture_default_str();
    c->add_option("--batch", a->batch, "Concurrent sequences (default: settings runtime.batch_size)");
    c->add_option("--model,-m", a->model, "Architecture preset or GGUF file (default: settings api.model)");
    c->add_option("--settings", a->settings_path, "settings.json")->capture_default_str();
    c->add_option("--config", a->config_path, "config.toml")->capture_default_str();
    c->add_option("--pim", a->pim, "PIM preset (default: pim_hbm2_fimdram)");
    c->add_option("--npu-dispatch", a->dispatch,
                  "NPU host launch mode: eager, queue0, queue1 (default, TASK_QUEUE_ENABLE=1), queue2, graph");
    c->add_option("--report", a->report, "Write the JSON report here (docs/report-schema.md)");
    c->add_option("--trace", a->trace, "Write a Chrome/Perfetto trace of both timelines");
    c->add_option("--svg", a->svg, "Write an SVG chart: TBT per token and memory breakdown");
    c->add_option("--tbt-reduction-min", a->th.tbt_reduction_min, "Verdict: required TBT reduction (fraction)")
        ->capture_default_str();
    c->add_option("--ttft-increase-max-ms", a->th.ttft_increase_max_ms, "Verdict: allowed TTFT increase")
        ->capture_default_str();
    c->add_option("--memory-increase-max", a->th.memory_increase_max, "Verdict: allowed memory increase (fraction)")
        ->capture_default_str();
    c->callback([a, &app]() { run_bench(*a, app); });
}

}  // namespace duet::cli
