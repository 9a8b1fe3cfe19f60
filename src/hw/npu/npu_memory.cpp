#include "hw/npu/npu_memory.h"

#include <map>
#include <mutex>

#include "hw/dram/mem_workload.h"
#include "hw/memory_presets.h"

namespace duet::hw::npu {

double dram_stream_efficiency(const std::string& memory_type) {
    static std::mutex mu;
    static std::map<std::string, double> cache;
    {
        std::lock_guard<std::mutex> lock(mu);
        if (auto it = cache.find(memory_type); it != cache.end()) return it->second;
    }
    const dram::DramSpec spec = load_memory_preset(memory_type);
    const double peak_gbps = spec.channel_peak_gbps() * spec.org.modelled_channels();
    const double eff = peak_gbps > 0 ? std::min(1.0, dram::stream_bandwidth_gbps(spec) / peak_gbps) : 1.0;
    std::lock_guard<std::mutex> lock(mu);
    cache[memory_type] = eff;
    return eff;
}

NpuDevice make_npu_device(const std::string& soc_version, DispatchMode dispatch, const std::string& preset_dir) {
    NpuPreset preset = preset_dir.empty() ? load_npu_preset(soc_version) : load_npu_preset(soc_version, preset_dir);
    NpuOptions o;
    o.dispatch = dispatch;
    o.memory_efficiency = dram_stream_efficiency(preset.memory_type);
    return NpuDevice(std::move(preset), o);
}

}  // namespace duet::hw::npu
