#include "sim/topology.h"

#include <algorithm>

#include <fmt/format.h>

#include "config/coop_config.h"
#include "core/error.h"
#include "core/toml_reader.h"
#include "hw/memory_presets.h"

namespace duet::sim {

const std::vector<std::string>& link_preset_names() { return config::link_preset_names(); }

SimLink load_link_preset(const std::string& name, const std::string& dir) {
    const auto& names = link_preset_names();
    if (std::find(names.begin(), names.end(), name) == names.end())
        fail("unknown link preset '{}' (known: {})", name, config::join_names(names));
    const std::string path = (dir.empty() ? hw::config_dir() : dir) + "/hw/links.toml";
    TomlDoc doc = TomlDoc::parse_file(path);
    TomlSection s = doc.section(name);
    SimLink l;
    l.preset = name;
    l.shared_memory = s.get_enum("kind", {"link", "shared_memory"}) == "shared_memory";
    l.bandwidth_gbps = s.get_double("bandwidth_gbps", 0, 1e6);
    l.latency_ns = s.get_double("latency_ns", 0, 1e9);
    l.per_transfer_ns = s.get_double("per_transfer_ns", 0, 1e9);
    const std::string fabric = s.get_enum_or("fabric", "direct", {"direct", "switch", "switch_multicast"});
    l.switched = fabric != "direct";
    l.multicast = fabric == "switch_multicast";
    l.flit_bytes = s.get_double_or("flit_bytes", 0, 0, 1e6);
    l.flit_payload_bytes = s.get_double_or("flit_payload_bytes", 0, 0, 1e6);
    s.finish();
    if ((l.flit_bytes > 0) != (l.flit_payload_bytes > 0) || l.flit_payload_bytes > l.flit_bytes)
        fail("{}: keys '{}' = {} and '{}' = {} are not allowed (allowed: both 0, or 0 < flit_payload_bytes <= "
             "flit_bytes)",
             path, s.dotted("flit_bytes"), l.flit_bytes, s.dotted("flit_payload_bytes"), l.flit_payload_bytes);
    if (!l.shared_memory && l.bandwidth_gbps <= 0)
        fail("{}: key '{}' = {} is not allowed (allowed: more than 0 for kind = \"link\")", path,
             s.dotted("bandwidth_gbps"), l.bandwidth_gbps);
    return l;
}

ExpansionCost load_expansion_cost(ExpansionMode mode, const std::string& dir) {
    const std::string path = (dir.empty() ? hw::config_dir() : dir) + "/hw/collectives.toml";
    TomlDoc doc = TomlDoc::parse_file(path);
    TomlSection s = doc.section(expansion_mode_name(mode));
    ExpansionCost c;
    c.mode = mode;
    c.launch_ns = s.get_double("launch_ns", 0, 1e9);
    c.per_step_ns = s.get_double("per_step_ns", 0, 1e9);
    s.finish();
    return c;
}

}  // namespace duet::sim
