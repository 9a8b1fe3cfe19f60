#include "serving/instance_hw.h"

#include <algorithm>

#include "core/error.h"

namespace duet::serving {

sim::SimHardware instance_hardware(const sim::SimHardware& hw, const std::vector<int>& keep) {
    DUET_CHECK(!keep.empty() && hw.devices.at(size_t(keep[0])).kind == sim::DeviceKind::NPU);
    std::vector<int> index(hw.devices.size(), -1);  // topology index -> instance index
    sim::SimHardware out = hw;
    out.devices.clear();
    out.links.clear();
    for (int d : keep) {
        index.at(size_t(d)) = int(out.devices.size());
        out.devices.push_back(hw.devices[size_t(d)]);
        out.devices.back().link = -1;
    }
    for (const sim::SimLink& l : hw.links) {
        if (index[size_t(l.end_a)] < 0 || index[size_t(l.end_b)] < 0) continue;
        sim::SimLink k = l;
        k.end_a = index[size_t(l.end_a)];
        k.end_b = index[size_t(l.end_b)];
        // a device's link to the host is the one with the host at one end
        if (k.end_b == 0) out.devices[size_t(k.end_a)].link = int(out.links.size());
        else if (k.end_a == 0) out.devices[size_t(k.end_b)].link = int(out.links.size());
        out.links.push_back(std::move(k));
    }
    for (size_t i = 1; i < out.devices.size(); ++i) {  // re-hang what hung off a dropped npu0
        sim::SimDevice& d = out.devices[i];
        const int was = hw.devices[size_t(keep[i])].link;
        if (d.link >= 0 || was < 0) continue;
        sim::SimLink k = hw.links[size_t(was)];
        k.name = d.name + "-" + out.devices[0].name;
        k.end_a = int(i);
        k.end_b = 0;
        d.link = int(out.links.size());
        out.links.push_back(std::move(k));
    }
    const double n_npus = double(hw.devices_of(sim::DeviceKind::NPU).size());
    const double kept_npus = double(out.devices_of(sim::DeviceKind::NPU).size());
    out.mem_capacity_bytes = uint64_t(double(hw.mem_capacity_bytes) / n_npus * kept_npus);
    out.mem_bw_gbps = hw.mem_bw_gbps / n_npus * kept_npus;
    const size_t n_pims = hw.devices_of(sim::DeviceKind::PIM).size();
    const size_t kept_pims = out.devices_of(sim::DeviceKind::PIM).size();
    out.pim_internal_bw_gbps = n_pims ? hw.pim_internal_bw_gbps / double(n_pims) * double(kept_pims) : 0;
    return out;
}

}  // namespace duet::serving
