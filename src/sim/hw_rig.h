#pragma once
// Builds the simulated hardware from the validated settings and config: the NPU preset named
// by settings ascend.soc_version (hw::npu::NpuDevice), a PIM preset (hw::pim device, from the
// dram branch), and the layout model (layout/) with config.toml's [pim]/[reorder]/[memory]
// knobs. Owns the devices; `hw()` points into it, so keep the rig alive while simulating.
#include <memory>
#include <string>

#include "config/coop_config.h"
#include "config/settings.h"
#include "hw/npu/npu_device.h"
#include "sim/hardware.h"
#include "sim/layout_binding.h"
#include "sim/run_options.h"

namespace duet::sim {

struct HardwareRig {
    std::unique_ptr<hw::npu::NpuDevice> npu;
    std::unique_ptr<hw::Device> pim;      // null when no PIM model is available
    std::unique_ptr<LayoutBinding> layout;
    std::string pim_preset;
    std::string pim_unavailable;          // why pim is null
    SimHardware hw;
};

// `pim_preset` empty: the default PIM preset; `npu_dispatch`: the NPU's host launch mode
// (eager, queue0, queue1, queue2, graph; empty = queue1, torch_npu's default).
// Throws duet::Error for unknown presets or modes.
std::unique_ptr<HardwareRig> make_hardware_rig(const config::Settings& settings, const config::CoopConfig& cfg,
                                               const std::string& pim_preset, const std::string& npu_dispatch = "");

// Knobs of one run from the config (placement policy given separately).
RunOptions run_options_from(const config::CoopConfig& cfg, Policy policy);

}  // namespace duet::sim
