#include "sim/hardware.h"

#include <fmt/format.h>

namespace duet::sim {

const char* device_kind_name(DeviceKind k) { return k == DeviceKind::NPU ? "npu" : "pim"; }

SimLink shared_memory_link() {
    SimLink l;
    l.shared_memory = true;
    return l;
}

std::vector<int> SimHardware::devices_of(DeviceKind kind) const {
    std::vector<int> out;
    for (size_t i = 0; i < devices.size(); ++i)
        if (devices[i].kind == kind) out.push_back(int(i));
    return out;
}

bool SimHardware::has(DeviceKind kind) const {
    for (const SimDevice& d : devices)
        if (d.kind == kind) return true;
    return false;
}

int SimHardware::add_device(DeviceKind kind, const hw::Device* model, const SimLink& link_to_host) {
    SimDevice d;
    d.kind = kind;
    d.model = model;
    d.name = fmt::format("{}{}", device_kind_name(kind), devices_of(kind).size());
    if (!devices.empty()) {
        SimLink l = link_to_host;
        l.name = d.name + "-" + devices[0].name;
        d.link = int(links.size());
        links.push_back(std::move(l));
    }
    devices.push_back(std::move(d));
    return int(devices.size()) - 1;
}

SimHardware npu_pim_hardware(const hw::Device* npu, const hw::Device* pim, const LayoutModel* layout) {
    SimHardware h;
    h.layout = layout;
    h.add_device(DeviceKind::NPU, npu);
    if (pim) h.add_device(DeviceKind::PIM, pim);
    return h;
}

}  // namespace duet::sim
