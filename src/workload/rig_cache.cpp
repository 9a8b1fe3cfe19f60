#include "workload/rig_cache.h"

#include <deque>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "config/runtime_knobs.h"
#include "hw/memory_presets.h"

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

}  // namespace duet::workload
