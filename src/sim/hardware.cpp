#include "sim/hardware.h"

#include <fmt/format.h>

#include "core/error.h"

namespace duet::sim {

const char* device_kind_name(DeviceKind k) {
    return k == DeviceKind::NPU ? "npu" : k == DeviceKind::PIM ? "pim" : "cpu";
}

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
        l.end_a = int(devices.size());
        l.end_b = 0;
        d.link = int(links.size());
        links.push_back(std::move(l));
    }
    devices.push_back(std::move(d));
    return int(devices.size()) - 1;
}

void SimHardware::add_mesh(DeviceKind kind, const SimLink& link) {
    const std::vector<int> all = devices_of(kind);
    for (size_t i = 0; i < all.size(); ++i)
        for (size_t j = i + 1; j < all.size(); ++j) {
            if (link_between(all[i], all[j]) >= 0) continue;
            SimLink l = link;
            l.name = devices[size_t(all[i])].name + "-" + devices[size_t(all[j])].name;
            l.end_a = all[i];
            l.end_b = all[j];
            links.push_back(std::move(l));
        }
}

int SimHardware::link_between(int x, int y) const {
    for (size_t i = 0; i < links.size(); ++i)
        if ((links[i].end_a == x && links[i].end_b == y) || (links[i].end_a == y && links[i].end_b == x)) return int(i);
    return -1;
}

SimLink SimHardware::path(int x, int y) const {
    if (x == y) return shared_memory_link();
    const int direct = link_between(x, y);
    if (direct >= 0) return links[size_t(direct)];
    const int lx = devices[size_t(x)].link, ly = devices[size_t(y)].link;
    DUET_CHECK(lx >= 0 && ly >= 0, "topology: no path between {} and {}", devices[size_t(x)].name,
               devices[size_t(y)].name);
    const SimLink &a = links[size_t(lx)], &b = links[size_t(ly)];
    if (a.shared_memory && b.shared_memory) return shared_memory_link();
    if (a.shared_memory) return b;
    if (b.shared_memory) return a;
    SimLink two = a.bandwidth_gbps <= b.bandwidth_gbps ? a : b;
    two.name = a.name + "+" + b.name;
    two.latency_ns = a.latency_ns + b.latency_ns;
    two.per_transfer_ns = a.per_transfer_ns + b.per_transfer_ns;
    two.end_a = two.end_b = -1;
    return two;
}

SimHardware npu_pim_hardware(const hw::Device* npu, const hw::Device* pim, const LayoutModel* layout) {
    SimHardware h;
    h.layout = layout;
    h.add_device(DeviceKind::NPU, npu);
    if (pim) h.add_device(DeviceKind::PIM, pim);
    return h;
}

}  // namespace duet::sim
