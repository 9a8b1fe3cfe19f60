#include "sim/hw_rig.h"

#include "config/coop_config.h"
#include "config/runtime_knobs.h"
#include "core/error.h"
#include "hw/cpu/host_cpu_device.h"
#include "hw/memory_presets.h"
#include "hw/npu/npu_memory.h"
#include "hw/npu/npu_preset.h"
#include "hw/pim/pim_device.h"
#include "hw/pim/pim_spec.h"
#include "sim/topology.h"

namespace duet::sim {

RunOptions run_options_from(const config::CoopConfig& cfg, Policy policy) {
    RunOptions o;
    o.placement.policy = policy;
    o.placement.prefill_on_npu = cfg.scheduling.prefill_engine == config::PrefillEngine::NPU_GEMM;
    o.placement.decode_on_pim = cfg.scheduling.decode_engine == config::DecodeEngine::PIM_GEMV;
    o.placement.attention_on_pim = cfg.pim.compute_unit == config::ComputeUnit::GEMV_ATTENTION;
    o.placement.npu_only_layers =
        config::parse_layer_list(cfg.scheduling.npu_only_layers, "config.toml: scheduling.npu_only_layers");
    o.prefetch_depth = cfg.reorder.prefetch_depth;
    o.zero_copy_switch = cfg.scheduling.zero_copy_switch;
    o.preconvert_first_token = cfg.scheduling.preconvert_first_token;
    o.weight_base_shared = cfg.memory.weight_base_shared;
    o.cache_limit_mb = cfg.memory.cache_limit_mb;
    o.block_size_kb = cfg.reorder.block_size_kb;
    return o;
}

double npu_memory_efficiency(const std::string& text, const std::string& memory_type, const std::string& flag) {
    if (text.empty() || text == "peak") return 1.0;
    if (text == "dram") return hw::npu::dram_stream_efficiency(memory_type);
    double e = 0;
    size_t used = 0;
    try {
        e = std::stod(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != text.size() || !(e > 0 && e <= 1))
        fail("{} = '{}' is not allowed (allowed: peak, dram, or a number greater than 0 and at most 1)", flag, text);
    return e;
}

std::unique_ptr<hw::npu::NpuDevice> make_npu(hw::npu::NpuPreset preset, hw::npu::DispatchMode dispatch,
                                             double memory_efficiency, bool fused_attention) {
    hw::npu::NpuOptions opt;
    opt.dispatch = dispatch;
    opt.memory_efficiency = memory_efficiency;
    opt.fused_attention = fused_attention;
    return std::make_unique<hw::npu::NpuDevice>(std::move(preset), opt);
}

namespace {

layout::NpuDataPath npu_data_path(const hw::npu::NpuPreset& np) {
    layout::NpuDataPath path;
    path.clock_mhz = np.cube_clock_mhz;
    path.cores = np.cube_cores;
    path.gm_read_bytes_per_cycle = np.ddr_read_bytes_per_cycle;
    path.gm_write_bytes_per_cycle = np.ub_to_ddr_bytes_per_cycle > 0 ? np.ub_to_ddr_bytes_per_cycle : np.ddr_read_bytes_per_cycle;
    path.vector_bytes_per_cycle = np.vector_bytes_per_cycle;
    path.memory_bandwidth_gbps = np.memory_bandwidth_gbps;
    path.l1_bytes = np.l1_kib * 1024;
    path.l0ab_bytes = (np.l0a_kib + np.l0b_kib) * 1024;
    if (np.l2_read_bytes_per_cycle > 0) path.l2_read_bytes_per_cycle = np.l2_read_bytes_per_cycle;
    if (np.l2_write_bytes_per_cycle > 0) path.l2_write_bytes_per_cycle = np.l2_write_bytes_per_cycle;
    return path;
}

// The PIM preset of each PIM device: [topology] pim_presets, else `pim_preset` (or the default) for all.
std::vector<std::string> pim_presets_of(const config::TopologySection& t, const std::string& pim_preset) {
    config::check_pim_presets(t);
    std::vector<std::string> names = config::split_names(t.pim_presets);
    if (names.empty()) names.assign(size_t(t.pims), pim_preset.empty() ? "pim_hbm2_fimdram" : pim_preset);
    return names;
}

// Adds the PIM devices; the first defines the layout's memory organisation and the switch cost.
void add_pims(HardwareRig& rig, const config::CoopConfig& cfg, const std::vector<std::string>& presets,
              const std::string& npu_memory, layout::MemoryOrganisation& org, bool explicit_preset) {
    SimHardware& h = rig.hw;
    if (presets.empty()) {
        rig.pim_unavailable = "config.toml: topology.pims = 0";
        return;
    }
    const SimLink link = load_link_preset(cfg.topology.pim_link);
    std::string names;
    for (size_t i = 0; i < presets.size(); ++i) {
        hw::pim::PimSpec ps;
        try {
            ps = hw::load_pim_preset(presets[i]);
        } catch (const Error& e) {
            if (explicit_preset || i > 0) throw;
            rig.pim_unavailable = e.what();
            return;
        }
        const double col_ns = ps.timing.nCCD_AB * ps.mem.timing.tCK_ns;
        const int channels = ps.mem.org.modelled_channels();
        h.pim_internal_bw_gbps += col_ns > 0 ? double(channels) * ps.units_per_channel() * ps.unit.access_bits / 8.0 / col_ns : 0;
        auto dev = std::make_unique<hw::pim::PimDevice>(ps, int(cfg.pim.alignment_bits), 0,
                                                        cfg.pim.precision == config::PimPrecision::INT8);
        h.add_device(DeviceKind::PIM, dev.get(), link);
        if (i == 0) {
            org.channels = channels;
            org.banks = ps.mem.org.banks();
            org.row_bytes = ps.mem.org.page_bytes;
            h.pointer_switch_ns = ps.timing.host_sync_ns + 2 * ps.timing.mode_switch_cycles * ps.mem.timing.tCK_ns;
            rig.pim_preset = presets[0];
            rig.pim = std::move(dev);
            names = ps.name;
        } else {
            rig.more_devices.push_back(std::move(dev));
            if (names.find(ps.name) == std::string::npos) names += ", " + ps.name;
        }
    }
    // PIM devices behind a copying link (CXL, PCIe) also reach each other directly (full mesh);
    // PIM stacks in an NPU's own memory share it and need no link.
    if (!link.shared_memory) h.add_mesh(DeviceKind::PIM, link);
    h.memory_name = npu_memory + " (NPU) + " + (presets.size() > 1 ? std::to_string(presets.size()) + "x " : "") + names;
}

}  // namespace

std::unique_ptr<HardwareRig> make_hardware_rig(const config::Settings& settings, const config::CoopConfig& cfg,
                                               const std::string& pim_preset, const std::string& npu_dispatch,
                                               bool host_cpu) {
    auto rig = std::make_unique<HardwareRig>();
    hw::npu::NpuPreset np = hw::npu::load_npu_preset(settings.ascend.soc_version);
    hw::npu::DispatchMode dispatch = hw::npu::NpuOptions{}.dispatch;
    if (!npu_dispatch.empty()) {
        auto d = hw::npu::dispatch_from_name(npu_dispatch);
        if (!d) fail("--npu-dispatch = \"{}\" is not a dispatch mode (allowed: eager, queue0, queue1, queue2, graph)", npu_dispatch);
        dispatch = *d;
    }
    const double efficiency = npu_memory_efficiency("peak", np.memory_type, "npu memory efficiency");
    const config::TopologySection& topo = cfg.topology;
    // Runtime knobs (config/runtime_knobs.h): ASCEND_RT_VISIBLE_DEVICES picks the NPUs used,
    // VLLM_ATTENTION_BACKEND the attention variant of the NPU model.
    const config::RuntimeKnobs knobs =
        config::read_runtime_knobs(config::runtime_knob_env(), settings.runtime.knobs, settings.source);
    const int64_t n_npus = config::visible_npu_count(knobs, topo.npus);
    const bool fused = knobs.attention_backend == config::AttentionBackend::FLASH_ATTN;
    SimHardware& h = rig->hw;
    rig->npu = make_npu(np, dispatch, efficiency, fused);
    h.add_device(DeviceKind::NPU, rig->npu.get());
    h.step_host_ns = rig->npu->step_overhead_ns();
    if (n_npus > 1) {
        const SimLink link = load_link_preset(topo.npu_link);
        for (int64_t i = 1; i < n_npus; ++i) {
            rig->more_devices.push_back(make_npu(np, dispatch, efficiency, fused));
            h.add_device(DeviceKind::NPU, rig->more_devices.back().get(), link);
        }
        h.add_mesh(DeviceKind::NPU, link);  // npu1.. are joined to each other as well (full mesh)
    }
    // every NPU brings its own memory (peak bandwidth and capacity add up)
    h.mem_bw_gbps = np.memory_bandwidth_gbps * double(n_npus);
    h.mem_capacity_bytes = uint64_t(np.memory_capacity_gib * double(1ull << 30)) * uint64_t(n_npus);
    h.memory_name = np.memory_type;
    h.npu_l2_bytes = uint64_t(np.l2_mib * 1024 * 1024);
    rig->pim_preset = pim_preset.empty() ? "pim_hbm2_fimdram" : pim_preset;

    layout::MemoryOrganisation org;
    add_pims(*rig, cfg, pim_presets_of(topo, pim_preset), np.memory_type, org,
             !pim_preset.empty() || !topo.pim_presets.empty());
    if (host_cpu) {  // shares memory with the star's centre: the PIM links are the host's links
        rig->host_cpu = std::make_unique<hw::cpu::HostCpuDevice>(hw::cpu::load_host_cpu_preset(kHostCpuPreset));
        h.add_device(DeviceKind::CPU, rig->host_cpu.get());
    }
    layout::PimLayoutParams lp;
    lp.alignment_bits = int(cfg.pim.alignment_bits);
    lp.block_size_kb = int(cfg.reorder.block_size_kb);
    lp.index_granularity = int(cfg.memory.index_granularity);
    lp.index_ratio_limit = cfg.reorder.index_ratio_limit;
    lp.prefetch_depth = int(cfg.reorder.prefetch_depth);
    rig->layout = std::make_unique<LayoutBinding>(lp, org, npu_data_path(np), cfg.reorder.target_format == config::TargetFormat::ND);
    h.layout = rig->layout.get();
    h.conversion_pj_per_byte = 0;  // the load path reads the same DRAM rows; extra bytes priced by the NPU model
    return rig;
}

}  // namespace duet::sim
