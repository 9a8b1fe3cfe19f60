#include "workload/bench_runner.h"

#include <algorithm>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "config/runtime_knobs.h"
#include "core/error.h"
#include "format/gguf.h"
#include "graph/parallel.h"
#include "hw/memory_presets.h"
#include "hw/npu/npu_device.h"
#include "hw/npu/npu_preset.h"
#include "hw/pim/pim_device.h"
#include "layout/pim_layout.h"
#include "model/arch_presets.h"
#include "model/hf_config.h"
#include "model/hparams.h"
#include "sim/scale_out.h"
#include "sim/topology.h"
#include "workload/model_limits.h"
#include "workload/routing_stats.h"

namespace duet::workload {

namespace {

// What makes two rigs differ: every settings/config value the rig reads, the overrides and
// the presets folder.
std::string rig_key(const config::Settings& st, const config::CoopConfig& cfg, const std::string& pim,
                    const std::string& dispatch, bool host_cpu) {
    std::string key = st.ascend.soc_version + "|" + pim + "|" + dispatch + "|" + hw::config_dir();
    if (host_cpu) key += "|cpu0";
    for (const auto& f : config::coop_config_fields()) key += fmt::format("|{}", f.show(cfg));
    for (const auto& [k, v] : st.runtime.knobs) key += "|" + k + "=" + v;  // the rig reads the runtime knobs
    for (const auto& [k, v] : config::runtime_knob_env()) key += "|env " + k + "=" + v;
    return key;
}

struct RigCache {
    std::mutex mu;
    std::map<std::string, std::shared_ptr<const sim::HardwareRig>> rigs;
    std::deque<std::string> order;  // oldest first
    int64_t built = 0;
};
RigCache& rig_cache() {
    static RigCache cache;
    return cache;
}

}  // namespace

std::shared_ptr<const sim::HardwareRig> cached_hardware_rig(const config::Settings& st, const config::CoopConfig& cfg,
                                                            const std::string& pim_preset,
                                                            const std::string& npu_dispatch, bool host_cpu) {
    const std::string key = rig_key(st, cfg, pim_preset, npu_dispatch, host_cpu);
    RigCache& c = rig_cache();
    {
        std::lock_guard<std::mutex> lock(c.mu);
        auto it = c.rigs.find(key);
        if (it != c.rigs.end()) return it->second;
    }
    std::shared_ptr<const sim::HardwareRig> rig = sim::make_hardware_rig(st, cfg, pim_preset, npu_dispatch, host_cpu);
    std::lock_guard<std::mutex> lock(c.mu);
    auto [it, inserted] = c.rigs.emplace(key, rig);
    if (inserted) {
        ++c.built;
        c.order.push_back(key);
        if (c.order.size() > 16) {
            c.rigs.erase(c.order.front());
            c.order.pop_front();
        }
    }
    return it->second;
}

int64_t hardware_rigs_built() {
    std::lock_guard<std::mutex> lock(rig_cache().mu);
    return rig_cache().built;
}

config::TopologySection topology_from_flags(const config::TopologySection& base, const std::string& file, int64_t npus,
                                            int64_t pims) {
    config::TopologySection t = file.empty() ? base : config::load_topology_file(file, base);
    if (npus != -1) {
        if (npus < 1 || npus > 64) fail("--npus = {} is not allowed (allowed: 1 to 64)", npus);
        t.npus = npus;
    }
    if (pims != -1) {
        if (pims < 0 || pims > 64) fail("--pims = {} is not allowed (allowed: 0 to 64)", pims);
        const size_t named = config::split_names(t.pim_presets).size();
        if (named > 0 && int64_t(named) != pims)
            fail("--pims = {} but topology.pim_presets = \"{}\" names {} presets (allowed: --pims {}, or change "
                 "pim_presets)", pims, t.pim_presets, named, named);
        t.pims = pims;
    }
    config::check_pim_presets(t);
    return t;
}

// --model PRESET|CONFIG.JSON|FILE -> the shape the planner needs. Shared with doctor.
graph::ModelShape bench_model_shape(const std::string& model, const std::string& dtype) {
    const model::Hparams hp = bench_model_hparams(model);
    const DType w = dtype_from_name(canonical_dtype_name(dtype)).value_or(DType::F16);
    return model::model_shape(hp, w, w, model);
}

// NPU preset names soc_version may take (aliases included, without their "(alias of ...)" note).
std::vector<std::string> known_soc_names() {
    std::vector<std::string> out;
    for (std::string n : hw::npu::known_soc_versions()) out.push_back(n.substr(0, n.find(' ')));
    return out;
}

namespace {

// A shown value ("\"gemv\"", "128", "true") as the JSON value it spells, not as a string of it.
nlohmann::json shown_value(const std::string& shown) {
    nlohmann::json v = nlohmann::json::parse(shown, nullptr, /*allow_exceptions=*/false);
    return v.is_discarded() ? nlohmann::json(shown) : v;
}

}  // namespace

nlohmann::json config_json(const config::Settings& st, const config::CoopConfig& cfg) {
    nlohmann::json j;
    for (const auto& f : config::settings_fields()) j["settings"][f.dotted()] = shown_value(f.show(st));
    for (const auto& f : config::coop_config_fields()) j["config"][f.dotted()] = shown_value(f.show(cfg));
    return j;
}

nlohmann::json topology_json(const sim::SimHardware& hw) {
    nlohmann::json devices = nlohmann::json::array(), links = nlohmann::json::array();
    for (const sim::SimDevice& d : hw.devices)
        devices.push_back({{"name", d.name}, {"kind", sim::device_kind_name(d.kind)}, {"model", d.model->name()},
                           {"link", d.link >= 0 ? hw.links[size_t(d.link)].name : std::string()}});
    for (const sim::SimLink& l : hw.links)
        links.push_back({{"name", l.name}, {"preset", l.preset}, {"shared_memory", l.shared_memory},
                         {"bandwidth_gbps", l.bandwidth_gbps}, {"latency_ns", l.latency_ns},
                         {"per_transfer_ns", l.per_transfer_ns}});
    return {{"devices", devices}, {"links", links}};
}

// The NPUs of the simulated machine ([topology] npus; settings ascend.device_id indexes them).
int64_t modelled_npu_count(const config::CoopConfig& cfg) { return cfg.topology.npus; }

PimPrecisionChoice choose_pim_precision(config::PimPrecision configured, const std::string& runtime_dtype,
                                        const hw::Device* pim0, const std::string& pim_preset) {
    const auto* pim = dynamic_cast<const hw::pim::PimDevice*>(pim0);
    const bool fp16 = pim && pim->spec().supports(DType::F16), bf16 = pim && pim->spec().supports(DType::BF16);
    PimPrecisionChoice c;
    c.precision = configured;
    if (configured == config::PimPrecision::AUTO) {
        c.precision = runtime_dtype == "bf16" ? config::PimPrecision::BF16 : config::PimPrecision::FP16;
        if (c.precision == config::PimPrecision::FP16 && !fp16 && bf16) {
            c.precision = config::PimPrecision::BF16;
            c.automatic = true;
            c.note = fmt::format("bf16 chosen automatically: PIM preset '{}' has bf16 MACs only (config.toml [pim] "
                                 "precision = \"auto\"; settings runtime.dtype = \"{}\" stays on the NPU)",
                                 pim_preset, runtime_dtype);
        }
    }
    if (!pim || c.precision == config::PimPrecision::INT8) return c;  // int8: widened where no int8 MACs (PimDevice)
    const bool want_bf16 = c.precision == config::PimPrecision::BF16;
    c.supported = want_bf16 ? bf16 : fp16;
    if (!c.supported)
        c.note = fmt::format("PIM preset '{}' has no {} MACs: the PIM runs no operator (config.toml [pim] "
                             "precision = \"{}\"; allowed for this preset: {}auto)",
                             pim_preset, want_bf16 ? "bf16" : "f16", config::pim_precision_name(configured),
                             std::string(fp16 ? "f16, " : "") + (bf16 ? "bf16, " : ""));
    return c;
}

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
    const graph::ModelShape shape = bench_model_shape(in.model, st.runtime.dtype);
    // pim_only runs what the PIM does not on the host CPU (cpu0), as CENT does; with --tp/--pp
    // every rank shares it (sim/scale_out.h)
    const bool pim_only = s.pb == sim::Policy::PIM_ONLY || s.pt == sim::Policy::PIM_ONLY;
    s.rig = cached_hardware_rig(st, cfg, in.pim, in.dispatch, pim_only);
    check_expert_parallel_ranks(in.ep, in.tp, in.pp, int64_t(s.rig->hw.devices_of(sim::DeviceKind::NPU).size()));
    for (sim::Policy p : {s.pb, s.pt})
        if (p != sim::Policy::NPU_ONLY && !s.rig->pim)
            fail("policy {} needs a PIM model, but PIM preset '{}' is unavailable: {}", sim::policy_name(p),
                 s.rig->pim_preset, s.rig->pim_unavailable);
    const bool pim_used = s.pb != sim::Policy::NPU_ONLY || s.pt != sim::Policy::NPU_ONLY;
    if (!file_mode && pim_used && cfg.pim.precision == config::PimPrecision::INT8)
        fail("config.toml [pim] precision = \"i8\" needs a Q8_0 model file (duet bench --model FILE.gguf): the "
             "architecture preset '{}' is modelled with settings runtime.dtype = \"{}\" weights (allowed with a "
             "preset: [pim] precision = auto, f16 with f16, bf16 with bf16)",
             in.model, st.runtime.dtype);
    const PimPrecisionChoice choice = choose_pim_precision(cfg.pim.precision, st.runtime.dtype,
                                                           s.rig->pim.get(), s.rig->pim_preset);
    const bool bf16 = choice.precision == config::PimPrecision::BF16;
    const std::string want = bf16 && !choice.automatic ? "bf16" : "f16";
    if (!file_mode && pim_used && st.runtime.dtype != want)
        fail("settings runtime.dtype = \"{}\" but config.toml pim.precision = \"{}\": the baseline and the PIM base "
             "would hold different weights (allowed: runtime.dtype f16 with pim.precision f16 or auto, bf16 with bf16 "
             "or auto)",
             st.runtime.dtype, config::pim_precision_name(cfg.pim.precision));
    if (pim_used && !file_mode) {
        s.pim_precision = {{"configured", config::pim_precision_name(cfg.pim.precision)},
                           {"precision", config::pim_precision_name(choice.precision)},
                           {"chosen_automatically", choice.automatic},
                           {"pim_supports", choice.supported},
                           {"note", choice.note}};
        if (!choice.supported) s.pim_idle_warning = choice.note;
    }
    // [pim] precision: the weight base holds the model in the PIM's operand type
    auto shape_for = [&](sim::Policy p) {
        graph::ModelShape m = shape;
        if (p != sim::Policy::NPU_ONLY) m.weight_dtype = bf16 ? DType::BF16 : DType::F16;
        return m;
    };
    s.shape_b = shape_for(s.pb);
    s.shape_t = shape_for(s.pt);
    return s;
}

void check_expert_parallel_ranks(int ep, int tp, int pp, int64_t npus) {
    const int64_t ranks = int64_t(ep) * tp * pp;
    if (ep > 1 && ranks > npus)
        fail("--ep {} x --tp {} x --pp {} = {} ranks but the topology has {} NPU(s): each expert-parallel rank holds its "
             "own experts (allowed: --npus {}, or [topology] npus = {}; or fewer ranks)",
             ep, tp, pp, ranks, npus, ranks, ranks);
    if (ep > 1 && npus % ranks != 0)
        fail("--ep {} x --tp {} x --pp {} = {} ranks do not divide the {} NPUs of the topology: each rank is an NPU "
             "(allowed: --npus a multiple of {}, or ranks that divide {})", ep, tp, pp, ranks, npus, ranks, npus);
}

void set_expert_inputs(TraceBenchInputs& in, int ep, double skew, const std::string& routing_stats,
                       const std::string& dtype) {
    if (in.tp > 1 && ep > 1)
        fail("--tp {} with --ep {}: tensor parallelism is not modelled for experts or latent attention; the "
             "expert-parallel ranks run data-parallel attention (allowed: --tp 1 with --ep N)", in.tp, ep);
    const graph::ModelShape shape = bench_model_shape(in.model, dtype);
    graph::ep_shard(shape, ep, 0);  // a dense model, an ep that does not divide the experts
    in.ep = ep;
    in.routing = routing_from_flags(skew, routing_stats, shape);
}

int micro_batches_for(int32_t batch, int pp) {
    int m = std::max(1, std::min<int>(pp, batch));
    while (batch % m != 0) --m;
    return m;
}

void plan_generations(const BenchSetup& s, const TraceBenchInputs& in, sim::Plan& plan_b, sim::Plan& plan_t) {
    graph::GraphOptions go;
    go.fuse = in.fuse;
    go.tp = in.tp;
    go.flashcomm = in.flashcomm;
    go.pp = in.pp;
    go.ep = in.ep;
    const auto plan = [&](const graph::ModelShape& shape) {
        if (in.tp * in.pp * in.ep == 1) return sim::plan_generation(shape, in.seq_len, in.gen_len, in.batch, go);
        return sim::plan_parallel_generation(shape, in.seq_len, in.gen_len, in.batch, go,
                                             micro_batches_for(in.batch, in.pp));
    };
    plan_b = plan(s.shape_b);
    plan_t = s.shape_t.weight_dtype == s.shape_b.weight_dtype ? plan_b : plan(s.shape_t);
}

void set_collective_knobs(TraceBenchInputs& in, bool flashcomm_flag, const std::string& expansion_flag,
                          const config::RuntimeKnobs& knobs) {
    in.flashcomm = flashcomm_flag || knobs.flashcomm;  // the flag wins over VLLM_ASCEND_ENABLE_FLASHCOMM
    in.hccl_expansion = !expansion_flag.empty()                ? expansion_flag
                        : !knobs.hccl_op_expansion_mode.empty() ? knobs.hccl_op_expansion_mode
                                                                : "HOST";
    sim::expansion_mode_from_name(in.hccl_expansion, "--hccl-expansion");  // exit 2 before any work
}

sim::RunOptions bench_run_options(const config::CoopConfig& cfg, sim::Policy p, const TraceBenchInputs& in) {
    sim::RunOptions o = sim::run_options_from(cfg, p);
    o.record_events = in.record_events;
    o.record_decode_steps = in.trace_steps;
    o.parallel.tp = in.tp;
    o.parallel.pp = in.pp;
    o.parallel.micro_batches = micro_batches_for(in.batch, in.pp);
    o.experts.routing = in.routing;
    o.experts.ep = in.ep;
    o.experts.seqs_total = in.batch / o.parallel.micro_batches;
    if (in.tp * in.pp * in.ep > 1)  // a tune sweep without parallelism reads no preset file per point
        o.parallel.launch = sim::load_expansion_cost(sim::expansion_mode_from_name(in.hccl_expansion, "--hccl-expansion"));
    o.prefetch_mlp = in.prefetch_mlp;
    o.multi_stream_memory_reuse = in.multi_stream_memory_reuse;
    o.serving_step_cost = in.serving_step_cost;
    return o;
}

sim::BenchReport finish_bench(const config::Settings& st, const config::CoopConfig& cfg, const TraceBenchInputs& in,
                              const BenchSetup& s, const sim::Plan& plan_b, const sim::Plan& plan_t, int64_t seq_len,
                              const sim::RunReport* baseline) {
    const sim::RunOptions ob = bench_run_options(cfg, s.pb, in), ot = bench_run_options(cfg, s.pt, in);
    const auto& rig = *s.rig;
    sim::BenchReport r;
    r.model = in.model;
    r.seq_len = seq_len;
    r.gen_len = in.gen_len;
    r.batch = in.batch;
    r.npu = rig.npu->name() + " (" + hw::npu::dispatch_name(rig.npu->options().dispatch) + ")";
    r.pim = rig.pim ? rig.pim_preset : "none";
    r.memory = rig.hw.memory_name;
    r.thresholds = in.thresholds;
    r.baseline = baseline ? *baseline : sim::simulate_run(s.shape_b, plan_b, seq_len + in.gen_len, in.batch, ob, rig.hw);
    r.target = sim::simulate_run(s.shape_t, plan_t, seq_len + in.gen_len, in.batch, ot, rig.hw);
    if (s.pt != sim::Policy::NPU_ONLY && r.target.memory.block_index_bytes > 0)
        layout::check_index_ratio(r.target.memory.block_index_bytes, r.target.memory.weights_bytes,
                                  rig.layout->params());
    if (!s.pim_idle_warning.empty()) r.target.warnings.push_back(s.pim_idle_warning);
    r.pim_precision = s.pim_precision;
    r.verdicts = sim::judge(r.baseline, r.target, in.thresholds, rig.hw);
    r.config = config_json(st, cfg);
    r.topology = topology_json(rig.hw);
    if (in.tp * in.pp * in.ep > 1) {
        r.parallel = {{"tp", in.tp}, {"pp", in.pp}, {"ep", in.ep}, {"micro_batches", ob.parallel.micro_batches},
                      {"flashcomm", in.flashcomm}, {"hccl_expansion", in.hccl_expansion}};
        const int64_t ranks = in.tp * in.pp * in.ep, npus = int64_t(rig.hw.devices_of(sim::DeviceKind::NPU).size()),
                      pims = int64_t(rig.hw.devices_of(sim::DeviceKind::PIM).size());
        const char* axes = in.ep > 1 ? "ep x pp" : "tp x pp";
        const bool npus_used = s.pb != sim::Policy::PIM_ONLY || s.pt != sim::Policy::PIM_ONLY;
        if (ranks > npus && npus_used)  // the same machine in both runs: said once
            r.target.warnings.push_back(fmt::format("{} = {} ranks share {} NPU(s): ranks on one device run one "
                                                    "after another (--npus {} gives each its own)", axes, ranks, npus, ranks));
        if (s.pt != sim::Policy::NPU_ONLY && pims > 0 && ranks > pims)
            r.target.warnings.push_back(fmt::format("{} = {} ranks share {} PIM device(s): their GEMVs queue on "
                                                    "one device (--pims {} gives each rank its own)", axes, ranks, pims, ranks));
        if (rig.hw.has(sim::DeviceKind::CPU))
            r.target.warnings.push_back(fmt::format("pim_only: the {} ranks share the host CPU cpu0: their non-PIM "
                                                    "operators (norms, activations, KV writes) queue on it", ranks));
    }
    return r;
}

sim::BenchReport run_trace_bench(const config::Settings& st, const config::CoopConfig& cfg,
                                 const TraceBenchInputs& in) {
    TraceBenchInputs uniform = in;  // a MoE model's experts priced under uniform routing unless told
    if (!uniform.routing) uniform.routing = std::make_shared<const sim::ExpertRouting>();
    BenchSetup s = prepare_bench(st, cfg, uniform, false);
    sim::Plan plan_b, plan_t;
    plan_generations(s, uniform, plan_b, plan_t);
    return finish_bench(st, cfg, uniform, s, plan_b, plan_t, in.seq_len);
}

}  // namespace duet::workload
