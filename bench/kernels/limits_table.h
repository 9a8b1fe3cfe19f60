#pragma once
// bench_kernels' closing table (issue 13): every kernel figure as a share of the machine limit
// it is bound by, with the target and whether it is met.
//   prefill GEMM (m > 4): GFLOP/s (or int8 GOP/s) per CPU-second of one thread vs the per-core
//     peak of the kernel's dot-product instruction (kernels/peak.h), or vs OpenBLAS sgemm for
//     f16/bf16; on the VNNI table q8_0 / q4_0 / q5_0 also vs the peak of their tile's whole mix
//     (vpdpbusd plus the per-32-block fold: PeakKind::INT8_VNNI_Q8_MIX), without a target;
//   decode GEMV (m = 1): weight GB/s (wall) vs the read bandwidth of the passes run just before
//     and after it on the same threads (paired; the run's best-of-5 probe if there were none).
// Single-threaded use from bench_kernels' main only.
#include <cstdio>
#include <map>
#include <string>

#include "core/dtype.h"
#include "kernels/kernels.h"
#include "kernels/peak.h"

namespace limits {

using duet::DType;
using duet::kernels::PeakKind;
using duet::kernels::PeakProbe;

struct KernelResult {
    DType type{};
    int64_t m = 0, n = 0, k = 0;
    double gflops_cpu = 0;  // 2 m n k per CPU-second of one thread / 1e9
    double gbps_wall = 0;   // weight bytes per wall second / 1e9
    double cpu_util = 0;
    double paired_gbps = 0;  // read GB/s of the probe passes around the GEMV (m <= 4), 0 if none
};

inline std::map<std::string, KernelResult>& results() {
    static std::map<std::string, KernelResult> r;
    return r;
}
inline KernelResult& result(const std::string& name) { return results()[name]; }

inline double g_bandwidth = 0;         // read GB/s of the probe, best in this run
inline double g_sgemm_gflops_cpu = 0;  // OpenBLAS sgemm m = 512, per CPU-second of one thread
inline PeakProbe g_peaks[int(PeakKind::COUNT)];

inline void measure_peaks() {
    for (int i = 0; i < int(PeakKind::COUNT); ++i) {
        const PeakProbe p = duet::kernels::measure_peak(PeakKind(i));
        if (p.ops_per_s >= g_peaks[i].ops_per_s) g_peaks[i] = p;
    }
}

inline void row(const std::string& figure, double value, const char* unit, const std::string& limit_name, double limit,
                double target_pct) {
    char share[16] = "-", target[16] = "-", met[16] = "-";
    if (limit > 0) std::snprintf(share, sizeof share, "%.0f%%", 100.0 * value / limit);
    if (target_pct > 0) {
        std::snprintf(target, sizeof target, ">= %.0f%%", target_pct);
        std::snprintf(met, sizeof met, "%s", limit > 0 && 100.0 * value / limit >= target_pct ? "met" : "NOT MET");
    }
    if (limit <= 0 && target_pct > 0) std::snprintf(met, sizeof met, "no limit");
    std::printf("%-28s %9.1f %-8s | %-26s %9.1f | %6s %7s %8s\n", figure.c_str(), value, unit, limit_name.c_str(),
                limit, share, target, met);
}

inline void print_table(int threads) {
    std::printf("\n== limits: per-core compute peaks (12 independent chains, one thread, per CPU-second)\n");
    for (const PeakProbe& p : g_peaks) {
        if (p.available)
            std::printf("  %-16s %-32s %8.1f %s\n", p.name, p.instruction, p.ops_per_s / 1e9, p.unit);
        else
            std::printf("  %-16s %-32s %8s (this CPU lacks the instructions)\n", p.name, p.instruction,
                        "not available");
    }
    std::printf("  %-16s %-32s %8.1f GB/s on %d threads\n", "memory read", "STREAM-style sum (membw.h)", g_bandwidth,
                threads);
    if (g_sgemm_gflops_cpu > 0)
        std::printf("  %-16s %-32s %8.1f GFLOP/s per thread\n", "sgemm yardstick", "OpenBLAS 512x4096x4096",
                    g_sgemm_gflops_cpu);
    const PeakProbe& i8 = g_peaks[int(duet::kernels::int8_peak_kind_for_active_table())];
    const PeakProbe& f32 = g_peaks[int(duet::kernels::float_peak_kind_for_active_table())];
    std::printf(
        "\n== kernels (%s) as a share of their limit; %d threads. GEMM: per thread per CPU-second vs the\n"
        "   per-core peak of the kernel's dot-product instruction (or sgemm; VNNI q8_0/q4_0/q5_0 also vs\n"
        "   their tile's mix with the per-block fold); GEMV: weight bytes/s vs the read bandwidth of the\n"
        "   passes just before and after it\n",
        duet::kernels::kernel_isa(), threads);
    std::printf("%-28s %18s | %-26s %9s | %6s %7s %8s\n", "figure", "value", "limit", "", "share", "target", "");
    for (const auto& [name, r] : results()) {
        if (r.m <= 4) continue;
        const bool is_float = r.type == DType::F32 || r.type == DType::F16 || r.type == DType::BF16;
        if (!is_float) {
            row(name, r.gflops_cpu, "GOP/s", std::string("peak ") + i8.name, i8.ops_per_s / 1e9,
                r.type == DType::Q8_0 ? 60.0 : 0.0);
            const PeakProbe& mix = g_peaks[int(PeakKind::INT8_VNNI_Q8_MIX)];
            const bool plain = r.type == DType::Q8_0 || r.type == DType::Q4_0 || r.type == DType::Q5_0;
            if (plain && i8.kind == PeakKind::INT8_VNNI && mix.available)
                row(name, r.gflops_cpu, "GOP/s", std::string("peak ") + mix.name, mix.ops_per_s / 1e9, 0.0);
        } else {
            row(name, r.gflops_cpu, "GFLOP/s", std::string("peak ") + f32.name, f32.ops_per_s / 1e9, 0.0);
            if (r.type != DType::F32) row(name, r.gflops_cpu, "GFLOP/s", "OpenBLAS sgemm", g_sgemm_gflops_cpu, 70.0);
        }
    }
    if (g_sgemm_gflops_cpu > 0)
        row("sgemm 512x4096x4096", g_sgemm_gflops_cpu, "GFLOP/s", std::string("peak ") + f32.name, f32.ops_per_s / 1e9,
            0.0);
    for (const auto& [name, r] : results())
        if (r.m <= 4) {
            const bool paired = r.paired_gbps > 0;
            row(name, r.gbps_wall, "GB/s", paired ? "paired read bandwidth" : "memory read",
                paired ? r.paired_gbps : g_bandwidth, 85.0);
        }
    const PeakProbe& mix = g_peaks[int(PeakKind::INT8_VNNI_Q8_MIX)];
    if (i8.kind == PeakKind::INT8_VNNI && mix.available && i8.ops_per_s > 0)
        std::printf(
            "(the q8_0 tile's register work alone, %s, runs at %.0f%% of the bare %s peak on this core:\n"
            " a q8_0 GEMM share of that peak above it would need fewer fold instructions per vpdpbusd.)\n",
            mix.name, 100.0 * mix.ops_per_s / i8.ops_per_s, i8.name);
    std::printf(
        "(GEMV rates are wall-clock: on a loaded machine they and the probe both drop; cpu_util is in the\n"
        " benchmark lines above. Targets: issue 13.)\n");
}

}  // namespace limits
