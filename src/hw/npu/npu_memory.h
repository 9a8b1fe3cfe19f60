#pragma once
// The NPU's device-memory efficiency from hw/dram's analytical model: the sustained fraction of
// peak bandwidth for a long sequential stream (what decode GEMVs and weight loads do) on the
// memory preset the NPU preset names (`[memory] type`). Thread safety: results are cached behind
// a mutex; safe to call from several threads.
#include <string>

#include "hw/npu/npu_device.h"

namespace duet::hw::npu {

// hw::dram::stream_bandwidth_gbps (analytical, long sequential stream, refresh in steady state)
// over the memory preset's peak (channels x bus width x data rate) on its default device.
// Throws duet::Error for an unknown memory preset name.
double dram_stream_efficiency(const std::string& memory_type);

// The usual way to build the device: preset by soc_version (aliases allowed), memory efficiency
// from the DRAM model. `preset_dir` empty = the shipped presets.
NpuDevice make_npu_device(const std::string& soc_version, DispatchMode dispatch = DispatchMode::QUEUE1,
                          const std::string& preset_dir = "");

}  // namespace duet::hw::npu
