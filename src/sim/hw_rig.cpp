#include "sim/hw_rig.h"

#include "config/coop_config.h"
#include "core/error.h"
#include "hw/memory_presets.h"
#include "hw/npu/npu_preset.h"
#include "hw/pim/pim_spec.h"
#include "hw/pim/pim_device.h"

namespace duet::sim {

RunOptions run_options_from(const config::CoopConfig& cfg, Policy policy) {
    RunOptions o;
    o.placement.policy = policy;
    o.placement.prefill_on_npu = cfg.scheduling.prefill_engine == "npu_gemm";
    o.placement.decode_on_pim = cfg.scheduling.decode_engine == "pim_gemv";
    o.placement.attention_on_pim = cfg.pim.compute_unit == "gemv_attention";
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

std::unique_ptr<HardwareRig> make_hardware_rig(const config::Settings& settings, const config::CoopConfig& cfg,
                                               const std::string& pim_preset, const std::string& npu_dispatch) {
    auto rig = std::make_unique<HardwareRig>();
    hw::npu::NpuPreset np = hw::npu::load_npu_preset(settings.ascend.soc_version);
    hw::npu::NpuOptions nopt;
    if (!npu_dispatch.empty()) {
        auto d = hw::npu::dispatch_from_name(npu_dispatch);
        if (!d) fail("--npu-dispatch = \"{}\" is not a dispatch mode (allowed: eager, queue0, queue1, queue2, graph)", npu_dispatch);
        nopt.dispatch = *d;
    }
    rig->npu = std::make_unique<hw::npu::NpuDevice>(np, nopt);
    rig->pim_preset = pim_preset.empty() ? "pim_hbm2_fimdram" : pim_preset;

    layout::PimLayoutParams lp;
    lp.alignment_bits = int(cfg.pim.alignment_bits);
    lp.block_size_kb = int(cfg.reorder.block_size_kb);
    lp.index_granularity = int(cfg.memory.index_granularity);
    lp.index_ratio_limit = cfg.reorder.index_ratio_limit;
    layout::MemoryOrganisation org;
    layout::NpuDataPath path;
    path.clock_mhz = np.cube_clock_mhz;
    path.cores = np.cube_cores;
    path.gm_read_bytes_per_cycle = np.ddr_read_bytes_per_cycle;
    path.gm_write_bytes_per_cycle = np.ub_to_ddr_bytes_per_cycle > 0 ? np.ub_to_ddr_bytes_per_cycle : np.ddr_read_bytes_per_cycle;
    path.vector_bytes_per_cycle = np.vector_bytes_per_cycle;
    path.memory_bandwidth_gbps = np.memory_bandwidth_gbps;

    SimHardware& h = rig->hw;
    h.npu = rig->npu.get();
    h.mem_bw_gbps = np.memory_bandwidth_gbps;
    h.mem_capacity_bytes = uint64_t(np.memory_capacity_gib * double(1ull << 30));
    h.memory_name = np.memory_type;
    try {
        hw::pim::PimSpec ps = hw::load_pim_preset(rig->pim_preset);
        org.channels = ps.mem.org.modelled_channels();
        org.banks = ps.mem.org.banks();
        org.row_bytes = ps.mem.org.page_bytes;
        const double col_ns = ps.timing.nCCD_AB * ps.mem.timing.tCK_ns;
        h.pim_internal_bw_gbps = col_ns > 0 ? double(org.channels) * ps.units_per_channel() * ps.unit.access_bits / 8.0 / col_ns : 0;
        h.pointer_switch_ns = ps.timing.host_sync_ns + 2 * ps.timing.mode_switch_cycles * ps.mem.timing.tCK_ns;
        h.memory_name = np.memory_type + " (NPU) + " + ps.name;
        rig->pim = std::make_unique<hw::pim::PimDevice>(ps, int(cfg.pim.alignment_bits));
    } catch (const Error& e) {
        if (!pim_preset.empty()) throw;
        rig->pim_unavailable = e.what();
    }
    rig->layout = std::make_unique<LayoutBinding>(lp, org, path, cfg.reorder.target_format == "ND");
    h.layout = rig->layout.get();
    h.pim = rig->pim.get();
    h.conversion_pj_per_byte = 0;  // the load path reads the same DRAM rows; extra bytes priced by the NPU model
    return rig;
}

}  // namespace duet::sim
