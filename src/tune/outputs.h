#pragma once
// What `duet tune` prints and writes: the best configuration, the Pareto front (TBT vs peak
// memory vs TTFT) as a table, JSON and an SVG scatter plot, the one-at-a-time sensitivity
// table, the per-hardware-pair summary (which pairs meet all targets, which limit binds on the
// others) and the best point as a config.toml that `duet bench --config` reproduces.
// Units: ms for times, MiB in tables (bytes in JSON).
#include <string>

#include <nlohmann/json.hpp>

#include "tune/tune.h"

namespace duet::tune {

std::string format_best(const TuneResult& r, Objective o);
std::string format_pareto(const TuneResult& r, size_t max_rows = 15);
std::string format_sensitivity(const TuneResult& r);
std::string format_pairs(const TuneResult& r);  // "" when hw.pair was not swept
nlohmann::json pareto_json(const TuneResult& r);
std::string pareto_svg(const TuneResult& r);

// config.toml text of the point (every config.toml key), with a header naming the command that
// reproduces it.
std::string best_toml(const Candidate& c, const std::string& reproduce_cmd);
// "duet bench --settings S --config FILE --model M --seq-len N --gen-len G --batch B
//  [--npu-dispatch D] [--pim P] --tbt-reduction-min ...", prefixed with the DUET_* variables of
// the settings the point changed relative to `file_settings` (e.g. DUET_SOC_VERSION=...).
std::string reproduce_command(const Candidate& c, const std::string& toml_path, const config::Settings& file_settings,
                              const std::string& settings_path);

}  // namespace duet::tune
