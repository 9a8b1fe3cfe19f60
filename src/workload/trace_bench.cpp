#include "workload/trace_bench.h"

#include <fmt/format.h>

#include "core/error.h"
#include "graph/parallel.h"
#include "hw/npu/npu_device.h"
#include "layout/pim_layout.h"
#include "sim/collective.h"
#include "sim/scale_out.h"
#include "sim/topology.h"
#include "workload/model_limits.h"
#include "workload/modelled_machine.h"
#include "workload/pim_precision.h"
#include "workload/report_context.h"
#include "workload/rig_cache.h"

namespace duet::workload {

BenchSetup prepare_bench(const config::Settings& st, const config::CoopConfig& cfg, const TraceBenchInputs& in,
                         bool file_mode) {
    {
        config::Diagnostics diag;  // throws: device_id must name a modelled NPU
        config::check_device_id(st, modelled_npu_count(cfg), config::process_env(), diag);
    }
    BenchSetup s;
    if (cfg.topology.tp_split == config::TpSplitMode::CENT) s.tp_partition = graph::TpPartition::CENT;
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

void plan_generations(const BenchSetup& s, const TraceBenchInputs& in, sim::Plan& plan_b, sim::Plan& plan_t) {
    graph::GraphOptions go;
    go.fuse = in.fuse;
    go.tp = in.tp;
    go.flashcomm = in.flashcomm;
    go.tp_partition = s.tp_partition;
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

namespace {

// How a stage's ranks split attention (the report's parallel.attention).
const char* attention_split(int tp, int ep) {
    if (tp > 1 && ep > tp)
        return "tensor parallel within data-parallel groups (ep / tp groups, each its share of the sequences; "
               "experts: E/ep whole experts per rank)";
    if (tp > 1) return ep > 1 ? "tensor parallel (experts: E/ep whole experts per rank)" : "tensor parallel";
    return ep > 1 ? "data parallel (each expert-parallel rank its share of the sequences)" : "whole";
}

}  // namespace

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
                      {"flashcomm", in.flashcomm}, {"hccl_expansion", in.hccl_expansion},
                      {"attention", attention_split(in.tp, in.ep)}};
        if (s.tp_partition == graph::TpPartition::CENT) r.parallel["tp_split"] = "cent";
        const int64_t ranks = int64_t(graph::stage_ranks(in.tp, in.ep)) * in.pp,
                      npus = int64_t(rig.hw.devices_of(sim::DeviceKind::NPU).size()),
                      pims = int64_t(rig.hw.devices_of(sim::DeviceKind::PIM).size());
        const char* axes = in.tp > 1 && in.ep > 1 ? (in.ep > in.tp ? "ep (tp groups) x pp" : "tp (= ep) x pp")
                           : in.ep > 1               ? "ep x pp"
                                                     : "tp x pp";
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
