#pragma once
// The context a report states beside its figures: the effective configuration and the modelled
// machine (docs/report-schema.md "config" and "topology").
#include <nlohmann/json.hpp>

#include "config/coop_config.h"
#include "config/settings.h"
#include "sim/hardware.h"

namespace duet::workload {

// The effective settings + config knobs as JSON values (report "config").
nlohmann::json config_json(const config::Settings& st, const config::CoopConfig& cfg);
// The devices and links of the machine (report "topology", docs/report-schema.md).
nlohmann::json topology_json(const sim::SimHardware& hw);

}  // namespace duet::workload
