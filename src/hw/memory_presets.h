#pragma once
// Registry of memory and PIM device presets (configs/hw/<name>.toml). One explicit list of
// names; an unknown name is an error that lists the known ones. Thread safe (no state).
#include <string>
#include <vector>

#include "hw/dram/dram_spec.h"

namespace duet::hw {

namespace pim {
struct PimSpec;
}

// Folder holding hw/*.toml: $DUET_CONFIG_DIR if set, else the build-time configs/ folder.
std::string config_dir();

const std::vector<std::string>& memory_preset_names();  // lpddr4x, lpddr5, ... (lowercase)
const std::vector<std::string>& pim_preset_names();     // pim_hbm2_fimdram, ...

// Reads configs/hw/<name>.toml (or `dir`/hw/<name>.toml). Throws duet::Error for an unknown
// name ("unknown memory preset 'x' (known: ...)") or an invalid file.
dram::DramSpec load_memory_preset(const std::string& name, const std::string& dir = "");
pim::PimSpec load_pim_preset(const std::string& name, const std::string& dir = "");

}  // namespace duet::hw
