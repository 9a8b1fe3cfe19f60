// `duet calibrate`: the device models against public reference simulators and measurements
// (hw/calibration). Prints one row per reference point, grouped by device, each group closed by
// its pass count and residual spread; exits 0 whether points pass or fail (the table is the
// answer), 2 on bad input.
#include <algorithm>
#include <cmath>
#include <map>
#include <vector>
#include <cstdio>
#include <string>
#include <utility>

#include "cli/commands.h"
#include "core/error.h"
#include "hw/calibration/reference_points.h"
#include "workload/cent_calibration.h"
#include "workload/npu_calibration.h"

namespace duet::cli {
namespace {

std::string value(double v, const std::string& unit) {
    if (std::isnan(v)) return "-";
    return fmt::format("{:.2f} {}", v, unit);
}

std::string error_text(const hw::calibration::Point& p) {
    using hw::calibration::Check;
    switch (p.check) {
        case Check::RELATIVE: return fmt::format("{:+.1f} %", 100 * p.error());
        case Check::LOWER_BOUND: return fmt::format("{:+.1f} %", 100 * p.error());
        case Check::POINTS: return fmt::format("{:+.1f} pt", p.error());
        default: return "-";
    }
}

std::string tolerance_text(const hw::calibration::Point& p) {
    using hw::calibration::Check;
    switch (p.check) {
        case Check::RELATIVE: return fmt::format("+-{:.0f} %", 100 * p.tolerance);
        case Check::POINTS: return fmt::format("+-{:.0f} pt", p.tolerance);
        case Check::LOWER_BOUND: return "> ref";
        default: return "-";
    }
}

// One line per device: how many points pass, and the spread of the checked residuals
// (relative points in %, share-of-peak points in percentage points).
void print_group_summary(const std::string& device, const std::vector<const hw::calibration::Point*>& pts) {
    using hw::calibration::Check;
    int pass = 0, fail = 0, missing = 0;
    std::vector<double> rel, pt;
    for (const auto* p : pts) {
        if (p->check == Check::MISSING) {
            ++missing;
            continue;
        }
        p->passed() ? ++pass : ++fail;
        if (p->check == Check::RELATIVE) rel.push_back(100 * p->error());
        if (p->check == Check::POINTS) pt.push_back(p->error());
    }
    std::string spread;
    auto describe = [&](const std::vector<double>& v, const char* unit) {
        if (v.empty()) return;
        const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
        double mean_abs = 0;
        for (double e : v) mean_abs += std::fabs(e);
        mean_abs /= double(v.size());
        spread += fmt::format("; residuals {:+.1f} to {:+.1f} {} (mean |e| {:.1f} {}, {} pts)", *lo, *hi, unit,
                              mean_abs, unit, v.size());
    };
    describe(rel, "%");
    describe(pt, "pt");
    std::printf("  == %s: %d PASS, %d FAIL, %d missing%s\n\n", device.c_str(), pass, fail, missing, spread.c_str());
}

void run_calibrate(bool notes) {
    auto points = hw::calibration::run_calibration();
    for (auto& p : workload::npu_reference_points()) {
        if (p.device.empty()) p.device = "Ascend NPU (whole model, duet bench)";
        points.push_back(std::move(p));
    }
    for (auto& p : workload::cent_system_points()) points.push_back(std::move(p));
    // Groups in order of first appearance.
    std::vector<std::string> devices;
    std::map<std::string, std::vector<const hw::calibration::Point*>> groups;
    for (const auto& p : points) {
        const std::string d = p.device.empty() ? "other" : p.device;
        if (!groups.count(d)) devices.push_back(d);
        groups[d].push_back(&p);
    }
    int pass = 0, fail = 0, missing = 0;
    std::printf("%-72s %12s %12s %9s %8s  %s\n", "point", "reference", "duet", "error", "tol", "status");
    for (const auto& d : devices) {
        std::printf("[%s]\n", d.c_str());
        for (const auto* pp : groups[d]) {
            const auto& p = *pp;
            const std::string ref = p.check == hw::calibration::Check::LOWER_BOUND ? "> " + value(p.reference, p.unit)
                                                                                   : value(p.reference, p.unit);
            std::printf("%-72s %12s %12s %9s %8s  %s\n", p.name.c_str(), ref.c_str(), value(p.duet, p.unit).c_str(),
                        error_text(p).c_str(), tolerance_text(p).c_str(), p.status());
            std::printf("    source: %s\n", p.source.c_str());
            if (notes && !p.note.empty()) std::printf("    note:   %s\n", p.note.c_str());
            if (p.check == hw::calibration::Check::MISSING)
                ++missing;
            else if (p.passed())
                ++pass;
            else
                ++fail;
        }
        print_group_summary(d, groups[d]);
    }
    std::printf("%d points: %d PASS, %d FAIL, %d missing (docs/hardware-model.md section 6 explains each)\n",
                int(points.size()), pass, fail, missing);
}

}  // namespace

void register_calibrate(CLI::App& app) {
    static bool notes = false;
    auto* cmd = app.add_subcommand("calibrate",
                                   "Compare the DRAM, PIM and NPU models with public reference values, grouped by\n"
                                   "device with each group's residual spread. Reference-simulator figures come from\n"
                                   "configs/hw/references/*.toml (written by tools/references/*.sh). Example:\n"
                                   "  duet calibrate --notes");
    cmd->add_flag("--notes", notes, "Also print what differs between duet's set-up and the reference");
    cmd->callback([] { run_calibrate(notes); });
}

}  // namespace duet::cli
