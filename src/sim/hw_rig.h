#pragma once
// Builds the simulated machine from the validated settings and config: the NPUs of the preset
// named by settings ascend.soc_version (hw::npu::NpuDevice), the PIM devices (hw::pim presets),
// the links between them (configs/hw/links.toml, [topology] in config.toml) and the layout
// model (layout/) with config.toml's [pim]/[reorder]/[memory] knobs. Owns the devices; `hw`
// points into it, so keep the rig alive while simulating. A built rig is immutable and thread
// safe to share (workload/rig_cache.h caches one per configuration).
#include <memory>
#include <string>
#include <vector>

#include "config/coop_config.h"
#include "config/settings.h"
#include "hw/npu/npu_device.h"
#include "sim/hardware.h"
#include "sim/layout_binding.h"
#include "sim/run_options.h"

namespace duet::sim {

struct HardwareRig {
    std::unique_ptr<hw::npu::NpuDevice> npu;  // npu0
    std::unique_ptr<hw::Device> pim;          // pim0; null when there is no PIM device
    std::vector<std::unique_ptr<hw::Device>> more_devices;  // npu1.., pim1..
    std::unique_ptr<hw::Device> host_cpu;     // cpu0; null unless asked for (placement pim_only)
    std::unique_ptr<LayoutBinding> layout;
    std::string pim_preset;                   // pim0's preset
    std::string pim_unavailable;              // why pim is null
    SimHardware hw;
};

// `pim_preset` empty: the default PIM preset; `npu_dispatch`: the NPU's host launch mode
// (eager, queue0, queue1, queue2, graph; empty = queue1, torch_npu's default). The machine is
// cfg.topology ([topology]: npus, pims, links, per-device PIM presets).
// `host_cpu`: add cpu0, the host CPU of preset kHostCpuPreset (configs/hw/host_cpu.toml), last.
// Throws duet::Error for unknown presets or modes.
inline constexpr const char* kHostCpuPreset = "xeon_8380";
std::unique_ptr<HardwareRig> make_hardware_rig(const config::Settings& settings, const config::CoopConfig& cfg,
                                               const std::string& pim_preset, const std::string& npu_dispatch = "",
                                               bool host_cpu = false);

// The memory efficiency of the NPU model, shared by `duet bench` and `duet pim-sim npu` so both
// model the same NPU: "peak" (1.0: the preset's published bandwidth; the default of both),
// "dram" (hw/dram's sustained fraction for a long sequential stream on the preset's memory,
// hw::npu::dram_stream_efficiency) or a number in (0, 1]. Throws duet::Error naming `flag`.
double npu_memory_efficiency(const std::string& text, const std::string& memory_type, const std::string& flag);
// The one construction path of the NPU model (bench's rig, pim-sim npu).
std::unique_ptr<hw::npu::NpuDevice> make_npu(hw::npu::NpuPreset preset, hw::npu::DispatchMode dispatch,
                                             double memory_efficiency, bool fused_attention = true);

// Knobs of one run from the config (placement policy given separately).
RunOptions run_options_from(const config::CoopConfig& cfg, Policy policy);

}  // namespace duet::sim
