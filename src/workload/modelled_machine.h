#pragma once
// What names the modelled machine of a comparison: its [topology] after the command's flags,
// its NPU count and the NPU presets settings ascend.soc_version may name.
#include <cstdint>
#include <string>
#include <vector>

#include "config/coop_config.h"

namespace duet::workload {

// The [topology] section after `duet bench --topology FILE --npus N --pims M` (each optional:
// file empty, counts -1). Throws duet::Error naming the flag or file key, value and what is allowed.
config::TopologySection topology_from_flags(const config::TopologySection& base, const std::string& file, int64_t npus,
                                            int64_t pims);
// NPUs of the modelled topology ([topology] npus): settings ascend.device_id must be below it.
int64_t modelled_npu_count(const config::CoopConfig& cfg);
// NPU preset names soc_version may take (aliases included).
std::vector<std::string> known_soc_names();

}  // namespace duet::workload
