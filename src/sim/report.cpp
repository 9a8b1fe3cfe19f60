#include "sim/report.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "core/error.h"
#include "graph/parallel.h"
#include "hw/pim/pim_device.h"
#include "sim/expert_load.h"

namespace duet::sim {

double percentile(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    size_t rank = size_t(std::ceil(q * double(v.size())));
    return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

RunReport simulate_run(const ModelShape& shape, const Plan& plan, int64_t context, int32_t batch,
                       const RunOptions& opts, const SimHardware& hw) {
    RunReport r;
    r.policy = policy_name(opts.placement.policy);
    r.batch = batch;
    r.weight_base_shared = opts.weight_base_shared;
    r.weight_dtype = shape.weight_dtype;
    Placer placer(opts.placement, hw);
    // expert parallelism with data-parallel attention: a device holds its group's share of the
    // batch's sequences (their KV, activations); with tensor-parallel attention alone all of them
    const int groups = graph::attention_dp(opts.parallel.tp, opts.experts.ep);
    const int32_t device_batch = (batch + groups - 1) / groups;
    r.memory = account_memory(shape, plan, context, device_batch, placer, opts, hw);
    Plan loaded;  // MoE: the expert records re-priced from the routing (sim/expert_load.h)
    const bool experts = opts.experts.routing && shape.is_moe();
    if (experts) loaded = plan_with_expert_loads(plan, shape, opts, hw, r.experts);
    r.timeline = simulate_timeline(shape, experts ? loaded : plan, placer, opts, hw);
    const Timeline& tl = r.timeline;
    const auto& tbt = tl.tbt_ns;
    if (!tbt.empty()) {
        r.tbt_mean_ns = std::accumulate(tbt.begin(), tbt.end(), 0.0) / double(tbt.size());
        r.tbt_p50_ns = percentile(tbt, 0.50);
        r.tbt_p99_ns = percentile(tbt, 0.99);
    }
    const DeviceStats dn = tl.decode.npu(), dp = tl.decode.pim(), pn = tl.prefill.npu(), pp = tl.prefill.pim();
    // the host CPU (pim_only) is counted in energy; its DRAM is not the NPU memory of decode_ext_bw_*
    const DeviceStats dc = tl.decode.total(DeviceKind::CPU), pc = tl.prefill.total(DeviceKind::CPU);
    const double decode_pj = dn.energy_pj + dp.energy_pj + dc.energy_pj;
    const double tokens = double(tbt.size()) * batch;
    // extra conversion energy is booked to prefill, where the conversions of npu_pim_coop happen
    r.prefill_energy_pj = pn.energy_pj + pp.energy_pj + pc.energy_pj;
    r.decode_energy_per_token_pj = tokens > 0 ? decode_pj / tokens : 0;
    r.prefill_energy_pj += tl.conversion_energy_pj;
    const double wall = tl.decode.wall_ns;
    if (wall > 0) {
        r.decode_ext_bw_gbps = (dn.bytes_moved + dp.bytes_moved) / wall;  // B/ns == GB/s
        r.decode_ext_bw_util = hw.mem_bw_gbps > 0 ? r.decode_ext_bw_gbps / hw.mem_bw_gbps : 0;
        // mean over the PIM devices (each is busy at most the wall time)
        const int pims = std::max(1, tl.decode.devices_of(DeviceKind::PIM));
        r.pim_util = dp.busy_ns / wall / double(pims);
        r.pim_internal_bw_util = hw.pim_internal_bw_gbps > 0 ? dp.weight_bytes / wall / hw.pim_internal_bw_gbps : 0;
        if (dp.busy_ns > 0) r.pim_gemv_gbps = dp.weight_bytes / dp.busy_ns;
    }
    if (r.decode_ext_bw_util > 0.9)
        r.warnings.push_back(fmt::format(
            "{}: decode external bandwidth at {:.0f} % of peak ({:.0f} of {:.0f} GB/s){}", r.policy,
            100 * r.decode_ext_bw_util, r.decode_ext_bw_gbps, hw.mem_bw_gbps,
            (!opts.weight_base_shared && batch > 1) ? ": every request streams its own weights (weight_base_shared = false)"
                                                    : ": the bus is saturated"));
    if (r.pim_internal_bw_util > 0.9)
        r.warnings.push_back(fmt::format("{}: PIM internal bandwidth at {:.0f} % of peak{}", r.policy,
                                         100 * r.pim_internal_bw_util,
                                         (!opts.weight_base_shared && batch > 1)
                                             ? ": every request streams its own weights (weight_base_shared = false)"
                                             : ""));
    if (hw.mem_capacity_bytes > 0 && r.memory.total_bytes() > hw.mem_capacity_bytes)
        r.warnings.push_back(fmt::format("{}: peak memory {:.2f} GiB exceeds the device's {:.2f} GiB", r.policy,
                                         double(r.memory.total_bytes()) / (1 << 30),
                                         double(hw.mem_capacity_bytes) / (1 << 30)));
    return r;
}

std::vector<Verdict> judge(const RunReport& b, const RunReport& t, const Thresholds& th, const SimHardware& hw) {
    std::vector<Verdict> out;
    {  // TBT
        Verdict v;
        v.name = "tbt_reduction";
        v.threshold = th.tbt_reduction_min;
        v.value = b.tbt_mean_ns > 0 ? 1 - t.tbt_mean_ns / b.tbt_mean_ns : 0;
        v.met = v.value >= v.threshold;
        if (!v.met && b.tbt_mean_ns > 0) {
            const double steps = double(std::max<size_t>(1, t.timeline.tbt_ns.size()));
            const DeviceStats tn = t.timeline.decode.npu(), tp = t.timeline.decode.pim();
            const int pims = std::max(1, t.timeline.decode.devices_of(DeviceKind::PIM));
            // mean over the NPUs (tensor-parallel ranks each run their own share; one NPU: itself)
            const int npus = std::max(1, t.timeline.decode.devices_of(DeviceKind::NPU));
            const double npu_rest = tn.busy_ns / double(npus) / steps / b.tbt_mean_ns;
            // the PIM devices work in parallel on the slices of each GEMV
            const double pim_part = tp.busy_ns / double(pims) / steps / b.tbt_mean_ns;
            const double ratio = hw.mem_bw_gbps > 0 ? hw.pim_internal_bw_gbps / hw.mem_bw_gbps : 0;
            if (t.policy != "npu_only" && tp.ops == 0 && t.batch > 1 && t.weight_base_shared)
                v.binding_limit = fmt::format("the PIM ran no decode operator: with batch {} and "
                                              "memory.weight_base_shared = true every decode matmul has {} rows; the "
                                              "PIM re-reads the weights once per vector (at most {} vectors) and is "
                                              "slower than the NPU for each of them",
                                              t.batch, t.batch, hw::pim::PimDevice::kMaxBatch);
            else if (t.policy != "npu_only" && tp.ops == 0 && t.weight_dtype == DType::F32)
                v.binding_limit = "the PIM ran no decode operator: the matrices are f32 and no PIM preset has fp32 "
                                  "MACs (ascend.op_precision_mode = allow_fp32_to_fp16 holds them as f16)";
            else if (t.policy != "npu_only" && tp.ops == 0)
                v.binding_limit = "the PIM ran no decode operator: its model supports none of them (check [pim] "
                                  "precision and [scheduling] decode_engine against the PIM preset)";
            else if (pim_part >= npu_rest && ratio > 0)
                v.binding_limit = fmt::format("PIM internal/external bandwidth ratio {:.1f}x: best possible TBT ratio "
                                              "{:.2f}; PIM GEMVs reach {:.0f} GB/s ({:.1f}x the external {:.0f} GB/s) "
                                              "and take {:.2f} of the baseline TBT",
                                              ratio, 1 / ratio, t.pim_gemv_gbps, t.pim_gemv_gbps / hw.mem_bw_gbps,
                                              hw.mem_bw_gbps, pim_part);
            else
                v.binding_limit = fmt::format("operators that stay on the NPU (norms, RoPE, attention, sampling, "
                                              "launch) take {:.2f} of the baseline TBT; PIM work {:.2f}",
                                              npu_rest, pim_part);
            // tensor/pipeline parallel: npu0's exposed collective time is part of every step
            const double comm = t.timeline.decode.device.empty() ? 0 : t.timeline.decode.device[0].exposed_comm_ns;
            if (comm > 0) v.binding_limit += fmt::format("; exposed communication {:.2f}", comm / steps / b.tbt_mean_ns);
            // the serving stack's host work per step (the NPU preset's [serving_step]): no placement cuts it
            const double host = t.timeline.decode.step_host_ns;
            if (host > 0 && !(t.policy != "npu_only" && tp.ops == 0))
                v.binding_limit += fmt::format("; serving step (host) {:.2f}", host / steps / b.tbt_mean_ns);
        }
        if (b.timeline.tbt_ns.empty()) v.binding_limit = "no decode step to measure (--gen-len 1)";
        v.line = fmt::format("TBT reduction     {:6.1f} %   (required >= {:.0f} %)   {}", 100 * v.value,
                             100 * v.threshold, v.met ? "MET" : "NOT MET: " + v.binding_limit);
        out.push_back(v);
    }
    {  // TTFT
        Verdict v;
        v.name = "ttft_increase_ms";
        v.threshold = th.ttft_increase_max_ms;
        v.value = (t.timeline.ttft_ns - b.timeline.ttft_ns) / 1e6;
        v.met = v.value < v.threshold;
        if (!v.met) {
            const double exposed = t.timeline.conversion_exposed_ns / 1e6, sw = t.timeline.switch_ns / 1e6;
            const double prefill_delta = (t.timeline.prefill_ns - b.timeline.prefill_ns) / 1e6 - exposed;
            if (sw >= exposed && sw >= prefill_delta)
                v.binding_limit = fmt::format("layout conversion at the prefill->decode switch {:.2f} ms "
                                              "(zero_copy_switch = false)", sw);
            else if (exposed >= prefill_delta)
                v.binding_limit = fmt::format("PIM->NZ weight conversion slower than the GEMMs it feeds: {:.2f} ms "
                                              "exposed in prefill", exposed);
            else
                v.binding_limit = fmt::format("prefill operators placed off the NPU's matrix units add {:.2f} ms",
                                              prefill_delta);
        }
        v.line = fmt::format("TTFT increase     {:6.2f} ms  (required < {:.0f} ms)    {}", v.value, v.threshold,
                             v.met ? "MET" : "NOT MET: " + v.binding_limit);
        out.push_back(v);
    }
    {  // memory
        Verdict v;
        v.name = "memory_increase";
        v.threshold = th.memory_increase_max;
        const double bt = double(b.memory.total_bytes());
        v.value = bt > 0 ? double(t.memory.total_bytes()) / bt - 1 : 0;
        v.met = v.value < v.threshold;
        if (!v.met) {
            const double mib = 1 << 20;
            const double dw = (double(t.memory.weights_bytes) - double(b.memory.weights_bytes)) / mib;
            const double di = (double(t.memory.block_index_bytes) - double(b.memory.block_index_bytes)) / mib;
            const double dc = (double(t.memory.conversion_bytes) - double(b.memory.conversion_bytes)) / mib;
            if (di >= dw && di >= dc)
                v.binding_limit = fmt::format("block index adds {:.1f} MiB", di);
            else if (dc >= dw)
                v.binding_limit = fmt::format("conversion cache adds {:.1f} MiB (preconvert_first_token, prefetch "
                                              "buffers, switch staging)", dc);
            else
                v.binding_limit = fmt::format("PIM layout padding adds {:.1f} MiB of weights", dw);
        }
        v.line = fmt::format("Memory increase   {:6.2f} %   (required < {:.0f} %)     {}", 100 * v.value,
                             100 * v.threshold, v.met ? "MET" : "NOT MET: " + v.binding_limit);
        out.push_back(v);
    }
    return out;
}

}  // namespace duet::sim
