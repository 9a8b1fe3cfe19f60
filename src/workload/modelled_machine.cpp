#include "workload/modelled_machine.h"

#include "core/error.h"
#include "hw/npu/npu_preset.h"

namespace duet::workload {

config::TopologySection topology_from_flags(const config::TopologySection& base, const std::string& file, int64_t npus,
                                            int64_t pims) {
    config::TopologySection t = file.empty() ? base : config::load_topology_file(file, base);
    if (npus != -1) {
        if (npus < 1 || npus > 64) fail("--npus = {} is not allowed (allowed: 1 to 64)", npus);
        t.npus = npus;
    }
    if (pims != -1) {
        if (pims < 0 || pims > 64) fail("--pims = {} is not allowed (allowed: 0 to 64)", pims);
        const size_t named = config::split_names(t.pim_presets).size();
        if (named > 0 && int64_t(named) != pims)
            fail("--pims = {} but topology.pim_presets = \"{}\" names {} presets (allowed: --pims {}, or change "
                 "pim_presets)", pims, t.pim_presets, named, named);
        t.pims = pims;
    }
    config::check_pim_presets(t);
    return t;
}

// The NPUs of the simulated machine ([topology] npus; settings ascend.device_id indexes them).
int64_t modelled_npu_count(const config::CoopConfig& cfg) { return cfg.topology.npus; }

// NPU preset names soc_version may take (aliases included, without their "(alias of ...)" note).
std::vector<std::string> known_soc_names() {
    std::vector<std::string> out;
    for (std::string n : hw::npu::known_soc_versions()) out.push_back(n.substr(0, n.find(' ')));
    return out;
}

}  // namespace duet::workload
