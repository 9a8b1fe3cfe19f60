// bench_pim_gemv: the layout-aware GEMV/GEMM (kernels::matmul_blocked reading the PIM layout in
// place through its block index, runtime/pim_weight_source.h) against the row-major matmul on the
// same weights, per weight dtype, at llama-7B shapes. The two run alternately, round after round,
// in one process, so a loaded machine slows both alike: compare the ratio, not the times.
// Times are CPU seconds of the calling thread when the pool has one thread (what the thread
// reaches while it runs; docs/performance.md "Contention"), else wall seconds.
// Each method cycles over copies of its matrix spanning 128 MiB (not served from the L3).
// "q8_0/i8" is Q8_0 in the int8 PIM layout ([pim] precision = int8): int8 quants in the layout,
// f16 scales beside (layout/pim_int8.h), against the same Q8_0 rows row-major.
// Usage: bench_pim_gemv [rounds (default 15)] [m (default 1)] [threads (default 1)] [dtype (default all)]
//        bench_pim_gemv --help
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include "common/bench_args.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "core/thread_pool.h"
#include "core/timer.h"
#include "kernels/kernels.h"
#include "layout/pim_int8.h"
#include "layout/pim_layout.h"
#include "runtime/pim_weight_source.h"

namespace {

using namespace duet;

struct Copy {
    std::vector<uint8_t> rm;    // row-major ggml rows
    std::vector<uint8_t> base;  // the same matrix in the PIM layout
    layout::PimBlockIndex index;
    std::vector<kernels::WeightBlock> blocks;
    std::vector<uint16_t> scales;  // q8_0/i8: [n][k / 32]
};

struct Variant {
    duet::DType t;
    bool int8;  // Q8_0 as int8 quants + scales
    const char* name;
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

constexpr const char* kUsage =
    "usage: bench_pim_gemv [rounds (default 15, at least 3)] [m (default 1)] [threads (default 1)] [dtype (default "
    "all: f32, f16, bf16, q8_0, q8_0/i8, q4_0, q5_0, q4_k, q6_k)]\n";

// Positional argument `i` (1-based) as an integer from 1 to 2^20, or `fallback` when absent.
int positional(int argc, char** argv, int i, const char* what, int fallback) {
    return argc <= i ? fallback : int(duet::bench::parse_int("bench_pim_gemv", what, argv[i], 1, 1 << 20));
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
        std::fputs(kUsage, stdout);
        return 0;
    }
    const int rounds = std::max(3, positional(argc, argv, 1, "rounds", 15));
    const int64_t m = positional(argc, argv, 2, "m", 1);
    ThreadPool pool(positional(argc, argv, 3, "threads", 1));
    const bool cpu_time = pool.size() == 1;
    auto clock_ns = [cpu_time] {
        if (!cpu_time) return now_ns();
        timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
    };
    const layout::PimLayoutParams params;     // config.toml defaults: 128-bit granule, 16 KiB blocks
    const layout::MemoryOrganisation org;     // 16 channels x 16 banks, 1 KiB DRAM rows
    const Variant variants[] = {{DType::F32, false, "f32"},   {DType::F16, false, "f16"},   {DType::BF16, false, "bf16"},
                                {DType::Q8_0, false, "q8_0"}, {DType::Q8_0, true, "q8_0/i8"}, {DType::Q4_0, false, "q4_0"},
                                {DType::Q5_0, false, "q5_0"}, {DType::Q4_K, false, "q4_k"}, {DType::Q6_K, false, "q6_k"}};
    const int64_t shapes[][2] = {{4096, 4096}, {11008, 4096}, {4096, 11008}};
    if (argc > 4 && std::none_of(std::begin(variants), std::end(variants),
                                 [&](const Variant& v) { return std::strcmp(argv[4], v.name) == 0; })) {
        duet::bench::usage_error("bench_pim_gemv", "dtype '" + std::string(argv[4]) +
                                                       "' (allowed: f32, f16, bf16, q8_0, q8_0/i8, q4_0, q5_0, q4_k, q6_k)");
    }
    std::printf("m = %lld, %d threads, ISA %s, %d rounds alternating; median %s ms per matmul\n", (long long)m,
                pool.size(), kernels::kernel_isa(), rounds, cpu_time ? "thread-CPU" : "wall");
    std::printf("%-8s %-12s %10s %10s %8s\n", "dtype", "n x k", "row-major", "pim", "rm/pim");
    for (const Variant& v : variants)
        for (const auto& sh : shapes) {
            const DType t = v.t;
            if (argc > 4 && std::strcmp(argv[4], v.name) != 0) continue;
            const int64_t n = sh[0], k = sh[1];
            const size_t rb = row_bytes(t, k);
            const size_t copies = std::max<size_t>(1, ((size_t(128) << 20) + rb * n - 1) / (rb * n));
            const layout::PimLayoutPlan plan = v.int8 ? layout::plan_pim_int8(n, k, params, org, false)
                                                      : layout::plan_pim_layout(n, k, t, params, org, false);
            std::vector<Copy> cs(copies);
            std::vector<float> wf(static_cast<size_t>(k));
            uint32_t seed = 1;
            for (Copy& c : cs) {
                c.rm.resize(rb * size_t(n));
                for (int64_t r = 0; r < n; ++r) {
                    for (auto& v : wf) v = float(int((seed = seed * 1664525u + 1013904223u) >> 20) - 2048) * 1e-4f;
                    quant::quantize_row(wf.data(), t, &c.rm[size_t(r) * rb], k);
                }
                if (v.int8) {
                    const layout::Int8Split sp = layout::split_q8_0(c.rm.data(), rb, n, k);
                    c.base = layout::to_pim(sp.quants.data(), plan);
                    c.scales = sp.scales;
                } else {
                    c.base = layout::to_pim(c.rm.data(), plan);
                }
                c.index = layout::build_block_index(plan);
                c.blocks = runtime::weight_blocks(plan, c.index, c.base.data());
            }
            std::vector<float> x(size_t(m * k)), y(size_t(m * n));
            for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 7919 % 2001) - 1000) * 1e-3f;
            std::vector<double> t_rm, t_pim;
            for (int r = 0; r < rounds; ++r) {
                // one round = one pass over every copy with each method
                int64_t t0 = clock_ns();
                for (size_t c = 0; c < copies; ++c)
                    kernels::matmul(x.data(), m, k, k, cs[c].rm.data(), t, rb, n, y.data(), n, pool);
                t_rm.push_back(double(clock_ns() - t0) / 1e6 / double(copies));
                t0 = clock_ns();
                for (size_t c = 0; c < copies; ++c) {
                    kernels::BlockedWeights w{t, n, k, cs[c].blocks.data(), int64_t(cs[c].blocks.size())};
                    if (v.int8) {
                        w.scales = cs[c].scales.data();
                        w.scale_stride = k / 32;
                    }
                    kernels::matmul_blocked(x.data(), m, k, k, w, y.data(), n, pool);
                }
                t_pim.push_back(double(clock_ns() - t0) / 1e6 / double(copies));
            }
            const double a = median(t_rm), b = median(t_pim);
            char shape[32];
            std::snprintf(shape, sizeof shape, "%lldx%lld", (long long)n, (long long)k);
            std::printf("%-8s %-12s %10.3f %10.3f %8.2f\n", v.name, shape, a, b, a / b);
            std::fflush(stdout);
        }
    return 0;
}
