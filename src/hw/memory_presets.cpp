#include "hw/memory_presets.h"

#include <cstdlib>

#include "core/build_paths.h"
#include "core/error.h"
#include "hw/pim/pim_spec.h"

namespace duet::hw {

namespace {
std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
}
bool known(const std::vector<std::string>& v, const std::string& n) {
    for (const auto& x : v)
        if (x == n) return true;
    return false;
}
}  // namespace

std::string config_dir() {
    const char* env = std::getenv("DUET_CONFIG_DIR");
    return env && *env ? env : core::default_config_dir();
}

const std::vector<std::string>& memory_preset_names() {
    static const std::vector<std::string> names = {"lpddr4x", "lpddr5", "lpddr5x", "hbm2",
                                                   "hbm2e",   "hbm3",   "gddr6"};
    return names;
}

const std::vector<std::string>& pim_preset_names() {
    static const std::vector<std::string> names = {"pim_hbm2_fimdram", "pim_gddr6_aim", "pim_lpddr5x_bank",
                                                   "pim_hbm3_bank", "pim_cxl_aim"};
    return names;
}

dram::DramSpec load_memory_preset(const std::string& name, const std::string& dir) {
    if (!known(memory_preset_names(), name))
        fail("unknown memory preset '{}' (known: {})", name, join(memory_preset_names()));
    return dram::load_dram_spec_file((dir.empty() ? config_dir() : dir) + "/hw/" + name + ".toml", name);
}

pim::PimSpec load_pim_preset(const std::string& name, const std::string& dir) {
    if (!known(pim_preset_names(), name))
        fail("unknown PIM preset '{}' (known: {})", name, join(pim_preset_names()));
    const std::string d = dir.empty() ? config_dir() : dir;
    return pim::load_pim_spec_file(d + "/hw/" + name + ".toml", name, d);
}

}  // namespace duet::hw
