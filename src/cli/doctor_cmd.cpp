// `duet doctor`: modelled devices, validated settings/config (every error), API key presence,
// model file check. Like `npu-smi info` plus a config linter.
#include <fmt/format.h>

#include <cstdio>

#include "cli/bench_runner.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "config/coop_config.h"
#include "config/settings.h"
#include "core/error.h"
#include "hw/memory_presets.h"
#include "hw/npu/npu_preset.h"
#include "model/arch_presets.h"
#include "runtime/model.h"
#include "sim/hw_rig.h"
#include "sim/model_shape.h"

namespace duet::cli {


namespace {

struct DoctorArgs {
    std::string settings_path, config_path, model, pim;
};

void run_doctor(const DoctorArgs& a) {
    const config::EnvMap env = config::process_env();
    int problems = 0;
    std::vector<std::string> socs;
    try {
        socs = known_soc_names();
    } catch (const Error& e) {
        std::printf("NPU presets: ERROR %s\n", e.what());
        ++problems;
    }
    config::Diagnostics ds(true), dc(true);
    config::Settings st = config::load_settings(a.settings_path, env, socs, ds);
    config::CoopConfig cfg = config::load_coop_config(a.config_path, env, dc);

    std::printf("settings: %s\n", a.settings_path.c_str());
    for (const auto& e : ds.errors()) std::printf("  ERROR %s\n", e.c_str());
    for (const auto& f : config::settings_fields())
        std::printf("  %-28s %s%s\n", f.dotted().c_str(), f.show(st).c_str(), env.count(f.env) ? fmt::format("  (from {})", f.env).c_str() : "");
    std::printf("config: %s\n", a.config_path.c_str());
    for (const auto& e : dc.errors()) std::printf("  ERROR %s\n", e.c_str());
    for (const auto& f : config::coop_config_fields())
        std::printf("  %-36s %s%s\n", f.dotted().c_str(), f.show(cfg).c_str(),
                    env.count(f.env) ? fmt::format("  (from {})", f.env).c_str() : "");
    problems += int(ds.errors().size() + dc.errors().size());

    const bool key_set = !config::api_key(st.api, env).empty();
    std::printf("api key: variable %s is %s\n", st.api.api_key_env.c_str(), key_set ? "set (value not shown)" : "NOT set");

    std::printf("devices:\n");
    try {
        auto rig = sim::make_hardware_rig(st, cfg, a.pim);
        const auto& p = rig->npu->preset();
        std::printf("  NPU %s: %d cube / %d vector cores at %.0f MHz, peak fp16 %.1f TFLOP/s, %s %.0f GiB at %.0f GB/s\n",
                    p.soc_version.c_str(), p.cube_cores, p.vector_cores, p.cube_clock_mhz, p.peak_cube_flops(false) / 1e12,
                    p.memory_type.c_str(), p.memory_capacity_gib, p.memory_bandwidth_gbps);
        if (rig->pim)
            std::printf("  PIM %s: internal bandwidth %.0f GB/s (%.1fx the NPU's external %.0f GB/s)\n",
                        rig->pim_preset.c_str(), rig->hw.pim_internal_bw_gbps,
                        rig->hw.pim_internal_bw_gbps / rig->hw.mem_bw_gbps, rig->hw.mem_bw_gbps);
        else
            std::printf("  PIM %s: unavailable: %s\n", rig->pim_preset.c_str(), rig->pim_unavailable.c_str());
    } catch (const Error& e) {
        std::printf("  ERROR %s\n", e.what());
        ++problems;
    }
    std::printf("  NPU presets: %s\n", config::join_names(hw::npu::known_soc_versions()).c_str());
    std::printf("  memory presets: %s\n", config::join_names(hw::memory_preset_names()).c_str());
    std::printf("  PIM presets: %s\n", config::join_names(hw::pim_preset_names()).c_str());

    if (!a.model.empty()) {
        try {
            if (!model::find_arch_preset(a.model)) {  // a file: open, validate, bind every weight, read the tokenizer
                auto m = runtime::Model::load(a.model);
                std::printf("model %s: loaded in %.1f ms (%s tokenizer)\n", a.model.c_str(), m->load_ms(),
                            m->has_tokenizer() ? "with" : "no");
            }
            sim::ModelShape s = bench_model_shape(a.model, st.runtime.dtype);
            std::printf("model %s: %lld layers, n_embd %lld, %lld heads / %lld kv, n_ff %lld, vocab %lld\n",
                        a.model.c_str(), (long long)s.n_layer, (long long)s.n_embd, (long long)s.n_head,
                        (long long)s.n_head_kv, (long long)s.n_ff, (long long)s.n_vocab);
        } catch (const Error& e) {
            std::printf("model %s: ERROR %s\n", a.model.c_str(), e.what());
            ++problems;
        }
    }
    if (problems) fail("doctor found {} problem{}", problems, problems == 1 ? "" : "s");
    std::printf("doctor: no problems found\n");
}

}  // namespace

void register_doctor(CLI::App& app) {
    auto a = std::make_shared<DoctorArgs>();
    CLI::App* c = app.add_subcommand("doctor",
                                     "Show the modelled devices and check settings, config, API key and model file\n"
                                     "Example:\n  duet doctor --settings configs/settings.json --config configs/config.toml "
                                     "-m model.gguf");
    a->settings_path = std::string(DUET_DEFAULT_CONFIG_DIR) + "/settings.json";
    a->config_path = std::string(DUET_DEFAULT_CONFIG_DIR) + "/config.toml";
    text(c, "--settings", a->settings_path, "settings.json");
    text(c, "--config", a->config_path, "config.toml");
    c->add_option("--model,-m", a->model, "Architecture preset or GGUF file to check");
    text(c, "--pim", a->pim, "PIM preset", DefaultFrom{"pim_hbm2_fimdram"});
    c->callback([a]() { run_doctor(*a); });
}

}  // namespace duet::cli
