#pragma once
// One hardware rig per configuration and process: a bench, every tune point and every served
// request reuse it instead of re-reading the presets.
#include <cstdint>
#include <memory>
#include <string>

#include "config/coop_config.h"
#include "config/settings.h"
#include "sim/hw_rig.h"

namespace duet::workload {

// The hardware rig for these settings, config (its [topology] included) and overrides, built
// once per process and configuration and then shared (a bench, every sweep point and every
// served request reuse it instead of re-reading the presets). Thread safe; at most 16 rigs are
// kept (the oldest configuration is dropped first). `host_cpu`: the machine has cpu0 (pim_only).
std::shared_ptr<const sim::HardwareRig> cached_hardware_rig(const config::Settings& st, const config::CoopConfig& cfg,
                                                            const std::string& pim_preset,
                                                            const std::string& npu_dispatch, bool host_cpu = false);
// How many rigs cached_hardware_rig has built so far in this process (for tests).
int64_t hardware_rigs_built();

}  // namespace duet::workload
