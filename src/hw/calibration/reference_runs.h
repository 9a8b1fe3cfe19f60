#pragma once
// Figures of the public reference simulators as duet's harness ran them (tools/references/*.sh
// write configs/hw/references/<name>.toml: a [source] table with the repository, commit,
// command, machine and date, then one table per run of plain numbers and strings). The files
// are committed, so `duet calibrate` needs no reference checkout. Thread safety: pure
// functions; the file is read on every call.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace duet::hw::calibration {

struct ReferenceRun {
    std::string name;                             // table name, e.g. "gemv_4096x4096_b1"
    std::map<std::string, double> numbers;        // e.g. pim_cycles, share_pct
    std::map<std::string, std::string> strings;   // e.g. standard, pattern

    double number(const std::string& key) const;  // throws duet::Error naming the run and key
};

struct ReferenceFile {
    std::string path;
    std::string repo, commit, command, machine, date;  // [source]
    std::vector<ReferenceRun> runs;                    // sorted by name (toml++ tables are ordered maps)

    const ReferenceRun* find(const std::string& run) const;  // nullptr when absent
    // "SAITPublic/PIMSimulator @b464dde (tools/references/pimsimulator.sh, 2026-12-07)"
    std::string cite() const;
};

// Reads `dir`/hw/references/<name>.toml (dir empty: hw::config_dir()). Returns nullopt when the
// file does not exist (the harness was never run); throws duet::Error naming the file and key
// when it exists but is malformed (no [source], a missing source field, a value that is
// neither a number nor a string).
std::optional<ReferenceFile> load_reference_file(const std::string& name, const std::string& dir = "");

}  // namespace duet::hw::calibration
