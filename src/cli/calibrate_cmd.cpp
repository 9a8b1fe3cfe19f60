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
#include "cli/flags.h"
#include "core/error.h"
#include "hw/calibration/reference_points.h"
#include "sim/report_files.h"
#include "workload/cent_calibration.h"
#include "workload/host_probe.h"
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

struct HostArgs {
    std::string out;  // --host-profile: the profile to write (empty: no profiling)
    std::string model, samples;
    int threads = 0;
    int64_t max_batch = 16;
};

// `duet calibrate --host-profile FILE`: profiles the engine on this machine and writes the host profile.
void run_host_probe(const HostArgs& a) {
    if (a.model.empty()) fail("--host-profile needs the model to profile (allowed: -m FILE, a GGUF file)");
    workload::HostProbeOptions o;
    o.threads = a.threads;
    o.max_batch = a.max_batch;
    o.samples_path = a.samples;
    std::printf("profiling %s on this machine (the engine's operators and steps):\n", a.model.c_str());
    const hw::cpu::HostProfile p = workload::probe_host(a.model, o, [](const std::string& line) {
        std::printf("  %s\n", line.c_str());
        std::fflush(stdout);
    });
    sim::write_file_atomic(a.out, hw::cpu::host_profile_toml(p));
    std::printf("%s, %lld threads\n", p.cpu.c_str(), (long long)p.threads);
    for (const auto& [dtype, rates] : p.matmul) {
        std::string row;
        for (const auto& [m, ns] : rates) row += fmt::format("  m={}: {:.3f}", m, ns);
        std::printf("matmul %s, ns per weight byte:%s\n", dtype_name(dtype), row.c_str());
    }
    std::printf("attention: %.0f ns + %.4f ns per KV byte + %.5f ns per flop\n", p.attention_ns,
                p.attention_ns_per_kv_byte, p.attention_ns_per_flop);
    std::printf("elementwise: %.0f ns + %.4f ns per byte; copy: %.0f ns + %.4f ns per byte\n", p.elementwise.ns,
                p.elementwise.ns_per_byte, p.copy.ns, p.copy.ns_per_byte);
    std::printf("engine step host work: %.0f us + %.1f us per sequence\n", p.step_ns / 1e3, p.step_ns_per_seq / 1e3);
    std::printf("wrote %s (use: duet bench --workload serving --host-profile %s -m %s)\n", a.out.c_str(),
                a.out.c_str(), a.model.c_str());
}

}  // namespace

void register_calibrate(CLI::App& app) {
    static bool notes = false;
    static HostArgs host;
    auto* cmd = app.add_subcommand("calibrate",
                                   "Compare the DRAM, PIM and NPU models with public reference values, grouped by\n"
                                   "device with each group's residual spread. Reference-simulator figures come from\n"
                                   "configs/hw/references/*.toml (written by tools/references/*.sh). Example:\n"
                                   "  duet calibrate --notes\n"
                                   "With --host-profile FILE: profile duet's engine on this machine into FILE, the\n"
                                   "device `duet bench --workload serving --host-profile FILE` predicts the real\n"
                                   "`duet serve` with (docs/serving.md \"The host twin\"). Example:\n"
                                   "  duet calibrate --host-profile host.toml -m model.gguf");
    cmd->add_flag("--notes", notes, "Also print what differs between duet's set-up and the reference");
    text(cmd, "--host-profile", host.out, help::kHostProfile);
    cmd->add_option("-m,--model", host.model, "With --host-profile: the GGUF model file to profile the engine on");
    text(cmd, "--samples", host.samples,
         "With --host-profile: also write every timed operator (kind, shape, ns) as CSV here");
    number(cmd, "-t,--threads", host.threads, help::kEngineThreads, 0, int(kMaxThreads));
    number(cmd, "--max-batch", host.max_batch, "With --host-profile: the largest decode batch probed (1, 2, 4, ... up to it)",
           int64_t(1), int64_t(256));
    cmd->callback([] {
        if (host.out.empty() && (!host.model.empty() || !host.samples.empty()))
            fail("-m and --samples belong to --host-profile (allowed: duet calibrate --host-profile FILE -m MODEL)");
        if (!host.out.empty()) run_host_probe(host);
        else run_calibrate(notes);
    });
}

}  // namespace duet::cli
