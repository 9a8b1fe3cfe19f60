#include "cli/bench_runner.h"

#include <filesystem>

#include "core/error.h"
#include "format/gguf.h"
#include "hw/npu/npu_device.h"
#include "hw/npu/npu_preset.h"
#include "layout/pim_layout.h"
#include "model/arch_presets.h"
#include "model/hparams.h"
#include "runtime/model_shape.h"

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
    const DType w = dtype == "bfloat16" ? DType::BF16 : dtype == "float32" ? DType::F32 : DType::F16;
    return runtime::model_shape(hp, w, w, model);
}

// NPU preset names soc_version may take (aliases included, without their "(alias of ...)" note).
std::vector<std::string> known_soc_names() {
    std::vector<std::string> out;
    for (std::string n : hw::npu::known_soc_versions()) out.push_back(n.substr(0, n.find(' ')));
    return out;
}

int64_t modelled_npu_count(const config::CoopConfig&) { return 1; }

BenchSetup prepare_bench(const config::Settings& st, const config::CoopConfig& cfg, const TraceBenchInputs& in,
                         bool file_mode) {
    {
        config::Diagnostics diag;  // throws: device_id must name a modelled NPU
        config::check_device_id(st, modelled_npu_count(cfg), config::process_env(), diag);
    }
    BenchSetup s;
    s.pb = sim::policy_from_name(in.baseline, "--baseline");
    s.pt = sim::policy_from_name(in.target, "--target");
    if (!st.ascend.enable_pim_coop && s.pt != sim::Policy::NPU_ONLY)
        fail("settings ascend.enable_pim_coop = false but --target = \"{}\" uses the PIM (allowed: set enable_pim_coop "
             "to true, or --target npu_only)", in.target);
    const sim::ModelShape shape = bench_model_shape(in.model, st.runtime.dtype);
    s.rig = sim::make_hardware_rig(st, cfg, in.pim, in.dispatch);
    for (sim::Policy p : {s.pb, s.pt})
        if (p != sim::Policy::NPU_ONLY && !s.rig->hw.pim)
            fail("policy {} needs a PIM model, but PIM preset '{}' is unavailable: {}", sim::policy_name(p),
                 s.rig->pim_preset, s.rig->pim_unavailable);
    const std::string want = cfg.pim.precision == "bf16" ? "bfloat16" : "float16";
    if (!file_mode && (s.pb != sim::Policy::NPU_ONLY || s.pt != sim::Policy::NPU_ONLY) && st.runtime.dtype != want)
        fail("settings runtime.dtype = \"{}\" but config.toml pim.precision = \"{}\": the baseline and the PIM base "
             "would hold different weights (allowed: runtime.dtype float16 with pim.precision fp16, bfloat16 with bf16)",
             st.runtime.dtype, cfg.pim.precision);
    // [pim] precision: the weight base holds the model in the PIM's operand type
    auto shape_for = [&](sim::Policy p) {
        sim::ModelShape m = shape;
        if (p != sim::Policy::NPU_ONLY) m.weight_dtype = cfg.pim.precision == "bf16" ? DType::BF16 : DType::F16;
        return m;
    };
    s.shape_b = shape_for(s.pb);
    s.shape_t = shape_for(s.pt);
    return s;
}

void plan_generations(const BenchSetup& s, const TraceBenchInputs& in, sim::Plan& plan_b, sim::Plan& plan_t) {
    plan_b = sim::plan_generation(s.shape_b, in.seq_len, in.gen_len, in.batch);
    plan_t = s.shape_t.weight_dtype == s.shape_b.weight_dtype
                 ? plan_b
                 : sim::plan_generation(s.shape_t, in.seq_len, in.gen_len, in.batch);
}

sim::BenchReport finish_bench(const config::Settings& st, const config::CoopConfig& cfg, const TraceBenchInputs& in,
                              const BenchSetup& s, const sim::Plan& plan_b, const sim::Plan& plan_t, int64_t seq_len) {
    sim::RunOptions ob = sim::run_options_from(cfg, s.pb), ot = sim::run_options_from(cfg, s.pt);
    ob.record_events = ot.record_events = in.record_events;
    const auto& rig = *s.rig;
    sim::BenchReport r;
    r.model = in.model;
    r.seq_len = seq_len;
    r.gen_len = in.gen_len;
    r.batch = in.batch;
    r.npu = rig.npu->name() + " (" + hw::npu::dispatch_name(rig.npu->options().dispatch) + ")";
    r.pim = rig.hw.pim ? rig.pim_preset : "none";
    r.memory = rig.hw.memory_name;
    r.thresholds = in.thresholds;
    r.baseline = sim::simulate_run(s.shape_b, plan_b, seq_len + in.gen_len, in.batch, ob, rig.hw);
    r.target = sim::simulate_run(s.shape_t, plan_t, seq_len + in.gen_len, in.batch, ot, rig.hw);
    if (s.pt != sim::Policy::NPU_ONLY && r.target.memory.block_index_bytes > 0)
        layout::check_index_ratio(r.target.memory.block_index_bytes, r.target.memory.weights_bytes,
                                  rig.layout->params());
    r.verdicts = sim::judge(r.baseline, r.target, in.thresholds, rig.hw);
    nlohmann::json cfg_json;
    for (const auto& f : config::settings_fields()) cfg_json["settings"][f.dotted()] = f.show(st);
    for (const auto& f : config::coop_config_fields()) cfg_json["config"][f.dotted()] = f.show(cfg);
    r.config = cfg_json;
    return r;
}

sim::BenchReport run_trace_bench(const config::Settings& st, const config::CoopConfig& cfg,
                                 const TraceBenchInputs& in) {
    BenchSetup s = prepare_bench(st, cfg, in, false);
    sim::Plan plan_b, plan_t;
    plan_generations(s, in, plan_b, plan_t);
    return finish_bench(st, cfg, in, s, plan_b, plan_t, in.seq_len);
}

}  // namespace duet::cli
