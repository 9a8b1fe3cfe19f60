#pragma once
// Calibration of duet's device models against public reference simulators and published
// measurements (issue 9; docs/hardware-model.md section 6). Each point names its source (a
// repository file or a paper table), the reference value read there, duet's value for the same
// configuration, and the tolerance. A reference that could not be found is kept as a MISSING
// row with duet's value, never filled in. Nothing here feeds back into a model parameter.
// Thread safety: pure functions; presets are read from the config folder on every call.
#include <string>
#include <vector>

namespace duet::hw::calibration {

enum class Check {
    RELATIVE,     // |duet - ref| / ref <= tolerance
    POINTS,       // |duet - ref| <= tolerance (percentage points)
    LOWER_BOUND,  // duet > ref (the source asserts a bound, not a value)
    MISSING,      // no public value found: reported, not checked
};

struct Point {
    std::string name;     // what is compared, e.g. "GeniePIM int8 GEMV 6144x2048 N=1 speedup"
    std::string source;   // repository file or paper table the reference is read from ("derived from ..." when
                          // computed from a public simulator's preset by its documented rule)
    Check check = Check::MISSING;
    double reference = 0; // meaningless for MISSING
    double duet = 0;
    double tolerance = 0; // fraction (RELATIVE) or points (POINTS)
    std::string unit;     // "x", "%", "ns", "ms"
    std::string note;     // what differs between the two set-ups, or why the reference is missing
    std::string device;   // group in the table, e.g. "HBM2-PIM (pim_hbm2_fimdram)"; empty: set by the caller

    double error() const;       // relative (RELATIVE, LOWER_BOUND) or absolute points (POINTS); 0 for MISSING
    bool passed() const;        // false for MISSING
    const char* status() const; // "PASS", "FAIL" or "missing"
};

// Every device-level reference point (PIM, DRAM), in table order. Points from the reference
// simulators duet's harness ran (tools/references/) read configs/hw/references/*.toml; when a
// file is absent its points are MISSING with a note naming the script that writes it. The NPU's whole-model points
// run the simulator on a model graph and live above hw/ (workload/npu_calibration.h); `duet
// calibrate` prints both. Throws duet::Error when a preset cannot be read.
std::vector<Point> run_calibration();

}  // namespace duet::hw::calibration
