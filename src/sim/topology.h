#pragma once
// The simulated machine as a list of devices joined by links (docs/topology.md):
//   npu0 (the host: runs every operator that is not placed elsewhere and receives gathered
//   outputs), npu1.., pim0.., each attached to npu0 by one link (a star; the NPUs, and PIM
//   devices behind a copying link, also pairwise: a mesh). The link presets
//   live in configs/hw/links.toml, each number with its public source or `assumption:`.
// What the topology is comes from config.toml [topology] (config::TopologySection); this
// header reads the link presets; sim/hardware.h holds the devices and links the simulator
// walks, and sim/hw_rig.h builds one from the other.
// Thread safety: plain values; load_link_preset only reads files.
#include <string>
#include <vector>

#include "sim/collective.h"
#include "sim/hardware.h"

namespace duet::sim {

// Link preset names in configs/hw/links.toml (shared_hbm, hccs_910b, pcie4_x16, pcie5_x16, cxl2_x16, roce_200g,
// roce_400g, cxl_cent_x18, cxl_cent_x7, cxl_cent_x4).
const std::vector<std::string>& link_preset_names();

// Reads preset `name` from `dir`/hw/links.toml (dir empty: hw::config_dir()). Throws
// duet::Error "unknown link preset 'x' (known: ...)" or one naming the file and key.
SimLink load_link_preset(const std::string& name, const std::string& dir = "");

// Reads [`mode`] of `dir`/hw/collectives.toml (dir empty: hw::config_dir()): the launch cost
// of one collective under that HCCL_OP_EXPANSION_MODE. Throws duet::Error naming the file and key.
ExpansionCost load_expansion_cost(ExpansionMode mode, const std::string& dir = "");

}  // namespace duet::sim
