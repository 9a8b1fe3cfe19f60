#include "workload/report_context.h"

namespace duet::workload {

namespace {

// A shown value ("\"gemv\"", "128", "true") as the JSON value it spells, not as a string of it.
nlohmann::json shown_value(const std::string& shown) {
    nlohmann::json v = nlohmann::json::parse(shown, nullptr, /*allow_exceptions=*/false);
    return v.is_discarded() ? nlohmann::json(shown) : v;
}

}  // namespace

nlohmann::json config_json(const config::Settings& st, const config::CoopConfig& cfg) {
    nlohmann::json j;
    for (const auto& f : config::settings_fields()) j["settings"][f.dotted()] = shown_value(f.show(st));
    for (const auto& f : config::coop_config_fields()) j["config"][f.dotted()] = shown_value(f.show(cfg));
    return j;
}

nlohmann::json topology_json(const sim::SimHardware& hw) {
    nlohmann::json devices = nlohmann::json::array(), links = nlohmann::json::array();
    for (const sim::SimDevice& d : hw.devices)
        devices.push_back({{"name", d.name}, {"kind", sim::device_kind_name(d.kind)}, {"model", d.model->name()},
                           {"link", d.link >= 0 ? hw.links[size_t(d.link)].name : std::string()}});
    for (const sim::SimLink& l : hw.links)
        links.push_back({{"name", l.name}, {"preset", l.preset}, {"shared_memory", l.shared_memory},
                         {"bandwidth_gbps", l.bandwidth_gbps}, {"latency_ns", l.latency_ns},
                         {"per_transfer_ns", l.per_transfer_ns}});
    return {{"devices", devices}, {"links", links}};
}

}  // namespace duet::workload
