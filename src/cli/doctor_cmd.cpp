// `duet doctor`: the modelled devices in the layout of `npu-smi info`, validated settings and
// config (every error and warning), where the API key comes from, CANN presence (information
// only), the model check. Exit 0 with warnings; 2 when a problem was found.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/flags.h"
#include "config/coop_config.h"
#include "config/runtime_knobs.h"
#include "config/settings.h"
#include "core/error.h"
#include "graph/model_shape.h"
#include "hw/memory_presets.h"
#include "hw/npu/npu_preset.h"
#include "hw/pim/pim_spec.h"
#include "model/arch_presets.h"
#include "model/hf_config.h"
#include "runtime/model.h"
#include "sim/hw_rig.h"
#include "workload/model_limits.h"
#include "workload/modelled_machine.h"

namespace duet::cli {

namespace {

struct DoctorArgs {
    std::string settings_path, config_path, model, pim;
};

std::string origin(const std::string& env_var, const config::EnvMap& env) {
    return env.count(env_var) ? fmt::format("  (from {})", env_var) : "";
}

// The devices as `npu-smi info` lays them out: one row per NPU with its chip, memory and the
// PIM attached to that memory.
void print_devices(const config::Settings& st, const config::CoopConfig& cfg, const std::string& pim, int& problems) {
    try {
        auto rig = sim::make_hardware_rig(st, cfg, pim);
        const auto& p = rig->npu->preset();
        const std::string line(100, '-');
        std::printf("+%s+\n| %-98s |\n+%s+\n", line.c_str(),
                    "duet (modelled devices, npu-smi info layout)            Version: duet " DUET_VERSION_STRING, line.c_str());
        std::printf("| %-6s| %-14s| %-34s| %-39s|\n", "NPU", "Name", "Memory (type, size, bandwidth)", "PIM (device, units)");
        std::printf("+%s+\n", std::string(100, '=').c_str());
        const int64_t n_npus = workload::modelled_npu_count(cfg);
        for (int64_t id = 0; id < n_npus; ++id) {
            std::string pim_col = "none";
            if (rig->pim) {
                const hw::pim::PimSpec ps = hw::load_pim_preset(rig->pim_preset);
                pim_col = fmt::format("{}: {} ch x {} units", ps.name, ps.mem.org.modelled_channels(), ps.units_per_channel());
            }
            std::printf("| %-6s| %-14s| %-34s| %-39s|\n",
                        fmt::format("{}{}", id, id == st.ascend.device_id ? "*" : "").c_str(), p.soc_version.c_str(),
                        fmt::format("{} {:.0f} GiB {:.0f} GB/s", p.memory_type, p.memory_capacity_gib, p.memory_bandwidth_gbps).c_str(),
                        pim_col.c_str());
            std::printf("| %-6s| %-14s| %-34s| %-39s|\n", "", "",
                        fmt::format("{} cube/{} vector cores {:.0f} MHz", p.cube_cores, p.vector_cores, p.cube_clock_mhz).c_str(),
                        rig->pim ? fmt::format("internal {:.0f} GB/s ({:.1f}x external)", rig->hw.pim_internal_bw_gbps,
                                                  rig->hw.pim_internal_bw_gbps / rig->hw.mem_bw_gbps).c_str()
                                    : rig->pim_unavailable.substr(0, 39).c_str());
            std::printf("+%s+\n", line.c_str());
        }
        std::printf("  * = settings ascend.device_id; peak fp16 %.1f TFLOP/s per NPU\n", p.peak_cube_flops(false) / 1e12);
    } catch (const Error& e) {
        std::printf("  ERROR %s\n", e.what());
        ++problems;
    }
}

// The runtime knobs (config/runtime_knobs.h): which are set and where (the environment wins
// over settings.json runtime), what each does, bad values and near-miss spellings.
void print_runtime_knobs(const config::Settings& st, int& problems, int& warnings, const config::CoopConfig& cfg) {
    std::printf("runtime knobs (environment, else settings.json runtime; the environment wins):\n");
    const auto env = config::runtime_knob_env();
    for (const config::RuntimeKnobInfo& k : config::runtime_knobs()) {
        auto e = env.find(k.name);
        auto s = st.runtime.knobs.find(k.name);
        std::string state = "not set";
        if (e != env.end())
            state = fmt::format("= \"{}\" (environment{})", e->second,
                                s != st.runtime.knobs.end() ? fmt::format("; overrides settings \"{}\"", s->second) : "");
        else if (s != st.runtime.knobs.end())
            state = fmt::format("= \"{}\" (settings runtime.{})", s->second, config::runtime_knob_key(k.name));
        std::printf("  %-40s %s\n      allowed: %s; %s\n", k.name.c_str(), state.c_str(), k.allowed.c_str(),
                    k.effect.c_str());
    }
    try {
        config::visible_npu_count(config::read_runtime_knobs(env, st.runtime.knobs, st.source), workload::modelled_npu_count(cfg));
    } catch (const Error& e) {
        std::printf("  ERROR %s\n", e.what());
        ++problems;
    }
    for (const auto& [var, knob] : config::misspelled_runtime_knobs(config::process_env_names())) {
        std::printf("  WARNING %s is set but is not a knob duet reads: did you mean %s?\n", var.c_str(), knob.c_str());
        ++warnings;
    }
}

void run_doctor(const DoctorArgs& a) {
    const config::EnvMap env = config::process_env();
    int problems = 0, warnings = 0;
    std::vector<std::string> socs;
    try {
        socs = workload::known_soc_names();
    } catch (const Error& e) {
        std::printf("NPU presets: ERROR %s\n", e.what());
        ++problems;
    }
    config::Diagnostics ds(true), dc(true);
    config::Settings st = config::load_settings(a.settings_path, env, socs, ds);
    config::CoopConfig cfg = config::load_coop_config(a.config_path, env, dc);
    config::check_device_id(st, workload::modelled_npu_count(cfg), env, ds);

    std::printf("settings: %s%s\n", a.settings_path.c_str(),
                st.api_section == "taotoken" ? " (API section read from 'taotoken', another name of 'api')"
                : st.api_section == "api"    ? " (API section read from 'api')"
                                             : "");
    for (const auto& e : ds.errors()) std::printf("  ERROR %s\n", e.c_str());
    for (const auto& w : ds.warnings()) std::printf("  WARN %s\n", w.c_str());
    for (const auto& f : config::settings_fields())
        std::printf("  %-28s %s%s\n", f.dotted().c_str(), f.show(st).c_str(), origin(f.env, env).c_str());
    std::printf("config: %s\n", a.config_path.c_str());
    for (const auto& e : dc.errors()) std::printf("  ERROR %s\n", e.c_str());
    for (const auto& f : config::coop_config_fields())
        std::printf("  %-36s %s%s\n", f.dotted().c_str(), f.show(cfg).c_str(), origin(f.env, env).c_str());
    problems += int(ds.errors().size() + dc.errors().size());
    warnings += int(ds.warnings().size());

    try {
        const config::ApiKey key = config::find_api_key(st.api, env);
        if (!key.value.empty())
            std::printf("api key: set, read from %s (value not shown)\n", key.source.c_str());
        else
            std::printf("api key: NOT set (variable %s%s)\n", st.api.api_key_env.c_str(),
                        st.api.api_key_file.empty() ? ", no api_key_file" : (", nor in " + st.api.api_key_file).c_str());
    } catch (const Error& e) {
        std::printf("api key: ERROR %s\n", e.what());
        ++problems;
    }
    const config::ApiBase base = config::parse_api_base(st.api.api_base);
    std::printf("api: requests go to %s%s/v1/...\n", base.origin.c_str(), base.prefix.c_str());
    if (!model::find_arch_preset(st.api.model) && !std::filesystem::exists(st.api.model)) {
        std::printf("  WARN settings api.model = \"%s\" is neither an architecture preset nor a file: `duet bench`, "
                    "`duet tune` and tasks need one (presets: %s)%s\n",
                    st.api.model.c_str(), model::arch_preset_list().c_str(),
                    st.api.model == "your-target-model" ? "; \"your-target-model\" is the guide's placeholder: replace it" : "");
        ++warnings;
    }
    if (!st.ascend.cann_path.empty())
        std::printf("cann: %s %s (information only: duet models the NPU and needs no CANN)\n", st.ascend.cann_path.c_str(),
                    std::filesystem::exists(st.ascend.cann_path) ? "is present" : "is not present on this machine");

    std::printf("devices:\n");
    print_devices(st, cfg, a.pim, problems);
    std::printf("  NPU presets: %s\n", config::join_names(hw::npu::known_soc_versions()).c_str());
    std::printf("  memory presets: %s\n", config::join_names(hw::memory_preset_names()).c_str());
    std::printf("  PIM presets: %s\n", config::join_names(hw::pim_preset_names()).c_str());

    print_runtime_knobs(st, problems, warnings, cfg);

    if (!a.model.empty()) {
        try {
            if (!model::is_trace_only_model(a.model)) {  // a file: open, validate, bind every weight, read the tokenizer
                auto m = runtime::Model::load(a.model);
                std::printf("model %s: loaded in %.1f ms (%s tokenizer)\n", a.model.c_str(), m->load_ms(),
                            m->has_tokenizer() ? "with" : "no");
            }
            graph::ModelShape s = workload::bench_model_shape(a.model, st.runtime.dtype);
            std::printf("model %s: %lld layers, n_embd %lld, %lld heads / %lld kv, n_ff %lld, vocab %lld\n",
                        a.model.c_str(), (long long)s.n_layer, (long long)s.n_embd, (long long)s.n_head,
                        (long long)s.n_head_kv, (long long)s.n_ff, (long long)s.n_vocab);
        } catch (const Error& e) {
            std::printf("model %s: ERROR %s\n", a.model.c_str(), e.what());
            ++problems;
        }
    }
    std::fflush(stdout);  // the report before the error line, also when stdout is a pipe (> 4 KiB buffered)
    if (problems) fail("doctor found {} problem{}", problems, problems == 1 ? "" : "s");
    if (warnings) std::printf("doctor: no problems found, %d warning%s\n", warnings, warnings == 1 ? "" : "s");
    else std::printf("doctor: no problems found\n");
}

}  // namespace

void register_doctor(CLI::App& app) {
    auto a = std::make_shared<DoctorArgs>();
    CLI::App* c = app.add_subcommand("doctor",
                                     "Show the modelled devices (npu-smi info layout) and check settings, config, API key,\n"
                                     "CANN path (information) and model file. Exit 0 (warnings allowed) or 2 (problems).\n"
                                     "Example:\n  duet doctor --settings configs/settings.json --config configs/config.toml "
                                     "-m model.gguf");
    a->settings_path = default_settings_path();
    a->config_path = default_config_path();
    text(c, "--settings", a->settings_path, help::kSettings);
    text(c, "--config", a->config_path, help::kConfig);
    c->add_option("--model,-m", a->model, help::kModelAny);
    text(c, "--pim", a->pim, help::kPim, DefaultFrom{"pim_hbm2_fimdram"});
    c->callback([a]() { run_doctor(*a); });
}

}  // namespace duet::cli
