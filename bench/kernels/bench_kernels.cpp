// Kernel throughput at llama-7B shapes: GEMV (decode, m = 1) and GEMM (prefill, m = 512) for
// every weight type, the STREAM-style bandwidth probe, OpenBLAS sgemm as the yardstick, the
// per-core compute peaks (kernels/peak.h), and at the end a table of every figure as a share
// of its limit with the issue-13 targets (limits_table.h).
// Threads: DUET_THREADS or all hardware threads (the engine's default). Weights are random
// bytes with sane scales (no quantiser run: the numbers do not matter, the bytes read do).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/dtype.h"
#include "core/timer.h"
#include "kernels/kernels.h"
#include "kernels/membw.h"
#include "limits_table.h"
#ifdef DUET_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace {

using namespace duet;

int bench_threads() {
    if (const char* s = std::getenv("DUET_THREADS"); s && std::atoi(s) > 0) return std::atoi(s);
    return default_thread_count();
}

// Process CPU seconds (all threads). cpu_util = CPU time / (wall time x threads): near 1 when
// the benchmark had the cores to itself, lower when other processes took them (the figures
// are then pessimistic; spinning workers count as busy, so it never overstates).
double process_cpu_s() {
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}
double wall_s() { return double(now_ns()) * 1e-9; }

ThreadPool& pool() {
    static ThreadPool p(bench_threads());
    return p;
}

// Read-bandwidth passes around each GEMV (the engine's paired bound, kernels::ReadProbe): the
// best-of-5 probe at the start of the run is minutes older than the last GEMV, and on a guest
// whose bandwidth moves between minutes the GEMV rows of one run read 8-20 points apart from the
// next run's against it (measured on the Xeon guest).
kernels::ReadProbe& read_probe() {
    static kernels::ReadProbe p(pool());
    return p;
}

uint64_t g_rng = 0x9E3779B97F4A7C15ull;
uint64_t next_rand() {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

// n rows of k values of `type`: random bytes, then every scale field set to a small f16/f32.
AlignedBuffer<uint8_t> random_weights(DType type, int64_t n, int64_t k) {
    const size_t bytes = row_bytes(type, k) * size_t(n);
    AlignedBuffer<uint8_t> w(bytes);
    for (size_t i = 0; i + 8 <= bytes; i += 8) {
        const uint64_t r = next_rand();
        std::memcpy(w.data() + i, &r, 8);
    }
    const uint16_t h = fp32_to_fp16(0.01f), b = fp32_to_bf16(0.01f);
    const size_t nblocks = bytes / size_t(dtype_info(type).block_bytes);
    switch (type) {
        case DType::F32: {
            auto* f = reinterpret_cast<float*>(w.data());
            for (size_t i = 0; i < bytes / 4; ++i) f[i] = float(int(next_rand() % 2001) - 1000) * 1e-5f;
            break;
        }
        case DType::F16:
        case DType::BF16: {
            auto* p = reinterpret_cast<uint16_t*>(w.data());
            for (size_t i = 0; i < bytes / 2; ++i)
                p[i] = uint16_t((type == DType::F16 ? h : b) ^ (next_rand() & 0x80ff));
            break;
        }
        case DType::Q8_0:
            for (size_t i = 0; i < nblocks; ++i) reinterpret_cast<BlockQ8_0*>(w.data())[i].d = h;
            break;
        case DType::Q4_0:
            for (size_t i = 0; i < nblocks; ++i) reinterpret_cast<BlockQ4_0*>(w.data())[i].d = h;
            break;
        case DType::Q5_0:
            for (size_t i = 0; i < nblocks; ++i) reinterpret_cast<BlockQ5_0*>(w.data())[i].d = h;
            break;
        case DType::Q4_K:
            for (size_t i = 0; i < nblocks; ++i) {
                reinterpret_cast<BlockQ4_K*>(w.data())[i].d = h;
                reinterpret_cast<BlockQ4_K*>(w.data())[i].dmin = h;
            }
            break;
        case DType::Q6_K:
            for (size_t i = 0; i < nblocks; ++i) reinterpret_cast<BlockQ6_K*>(w.data())[i].d = h;
            break;
        default:
            break;
    }
    return w;
}

std::vector<float> random_x(int64_t m, int64_t k) {
    std::vector<float> x(size_t(m * k));
    for (auto& v : x) v = float(int(next_rand() % 2001) - 1000) * 1e-3f;
    return x;
}

// args: dtype, m, n, k. For GEMV (m <= 4) the product cycles over enough copies of the matrix
// to span 256 MiB, as a model's layers do: a single 4096 x 4096 q4_k matrix (9 MiB) would
// otherwise be served from the 32 MiB L3 and overstate the memory-bound rate.
void BM_Matmul(benchmark::State& state) {
    const auto type = DType(state.range(0));
    const int64_t m = state.range(1), n = state.range(2), k = state.range(3);
    const size_t rb = row_bytes(type, k);
    const size_t copies = m <= 4 ? std::max<size_t>(1, ((size_t(256) << 20) + rb * n - 1) / (rb * n)) : 1;
    std::vector<AlignedBuffer<uint8_t>> w;
    for (size_t c = 0; c < copies; ++c) w.push_back(random_weights(type, n, k));
    const auto x = random_x(m, k);
    std::vector<float> y(size_t(m * n));
    size_t next = 0;
    // m <= 4: one read pass just before and one just after the GEMVs; their rate is the row's limit
    const bool paired = m <= 4;
    const double probe_bytes0 = paired ? read_probe().total_bytes() : 0;
    const int64_t probe_ns0 = paired ? read_probe().total_ns() : 0;
    if (paired) read_probe().pass();
    const double c0 = process_cpu_s(), t0 = wall_s();
    for (auto _ : state) {
        kernels::matmul(x.data(), m, k, k, w[next].data(), type, rb, n, y.data(), n, pool());
        next = (next + 1) % copies;
        benchmark::DoNotOptimize(y.data());
    }
    const double cpu = process_cpu_s() - c0, wall = wall_s() - t0;
    double paired_gbps = 0;
    if (paired) {
        read_probe().pass();
        paired_gbps = (read_probe().total_bytes() - probe_bytes0) / double(read_probe().total_ns() - probe_ns0);
        state.counters["paired_read_GB/s"] = paired_gbps;
    }
    state.counters["cpu_util"] = cpu / (wall * pool().size());
    // rates per CPU-second of one thread: the work divided by the CPU time all threads spent on it
    // (two threads that each ran 1 s did their work in 2 thread-seconds), so they compare with a
    // per-core peak. (Until 2026-12-02 this divided by cpu / threads: 2x on two threads.)
    state.counters["GB/s_cpu"] = double(rb) * double(n) * double(state.iterations()) / cpu / 1e9;
    state.counters["GFLOP/s_cpu"] = 2.0 * double(m * n * k) * double(state.iterations()) / cpu / 1e9;
    state.SetLabel(std::string(dtype_name(type)) + " " + kernels::kernel_isa());
    state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(rb) * n);  // weight bytes
    state.counters["FLOP/s"] = benchmark::Counter(2.0 * double(m) * double(n) * double(k) * double(state.iterations()),
                                                  benchmark::Counter::kIsRate);
    // the last (longest) run of each shape wins
    auto& r = limits::result(std::string(m <= 4 ? "gemv " : "gemm ") + dtype_name(type) + " " + std::to_string(m) +
                             "x" + std::to_string(n) + "x" + std::to_string(k));
    r = {type,
         m,
         n,
         k,
         state.counters["GFLOP/s_cpu"],
         double(rb) * double(n) * double(state.iterations()) / wall / 1e9,
         state.counters["cpu_util"],
         paired_gbps};
}

void BM_MemoryBandwidth(benchmark::State& state) {
    kernels::MemBandwidth r{};
    const double c0 = process_cpu_s(), t0 = wall_s();
    for (auto _ : state) r = kernels::measure_memory_bandwidth(pool(), size_t(256) << 20, 3);
    state.counters["cpu_util"] = (process_cpu_s() - c0) / ((wall_s() - t0) * pool().size());
    state.counters["read_GB/s"] = r.read_gbps;
    state.counters["triad_GB/s"] = r.triad_gbps;
    state.counters["read_GB/s_cpu"] = r.read_cpu_gbps;
    state.counters["triad_GB/s_cpu"] = r.triad_cpu_gbps;
    state.counters["threads"] = r.threads;
    limits::g_bandwidth = std::max(limits::g_bandwidth, r.read_gbps);
}

#ifdef DUET_HAVE_OPENBLAS
// y[m][n] = x[m][k] W[n][k]^T, the same product as kernels::matmul on f32 weights.
void BM_OpenBlasSgemm(benchmark::State& state) {
    const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
    openblas_set_num_threads(bench_threads());
    const auto x = random_x(m, k);
    const auto w = random_x(n, k);
    std::vector<float> y(size_t(m * n));
    const double c0 = process_cpu_s(), t0 = wall_s();
    for (auto _ : state) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(m), int(n), int(k), 1.0f, x.data(), int(k), w.data(),
                    int(k), 0.0f, y.data(), int(n));
        benchmark::DoNotOptimize(y.data());
    }
    // OpenBLAS's idle threads sleep, so this can read low when the product is short
    const double cpu = process_cpu_s() - c0;
    state.counters["cpu_util"] = cpu / ((wall_s() - t0) * bench_threads());
    if (m > 4)
        limits::g_sgemm_gflops_cpu =
            2.0 * double(m * n * k) * double(state.iterations()) / cpu / 1e9;  // per thread-second
    state.counters["GFLOP/s_cpu"] =
        2.0 * double(m * n * k) * double(state.iterations()) / cpu / 1e9;  // per thread-second
    state.counters["FLOP/s"] = benchmark::Counter(2.0 * double(m) * double(n) * double(k) * double(state.iterations()),
                                                  benchmark::Counter::kIsRate);
}
BENCHMARK(BM_OpenBlasSgemm)
    ->Args({512, 4096, 4096})
    ->Args({1, 4096, 4096})
    ->MinTime(0.3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
#endif

constexpr DType kTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0,
                            DType::Q4_0, DType::Q5_0, DType::Q4_K, DType::Q6_K};

void gemv_args(benchmark::internal::Benchmark* b) {
    for (DType t : kTypes) b->Args({int64_t(t), 1, 4096, 4096});
    for (DType t : {DType::F16, DType::Q8_0, DType::Q4_K}) {
        b->Args({int64_t(t), 1, 11008, 4096});  // ffn up/gate
        b->Args({int64_t(t), 1, 4096, 11008});  // ffn down
    }
}
void gemm_args(benchmark::internal::Benchmark* b) {
    for (DType t : kTypes) b->Args({int64_t(t), 512, 4096, 4096});
}

BENCHMARK(BM_MemoryBandwidth)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Matmul)->Name("gemv")->Apply(gemv_args)->MinTime(0.2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Matmul)->Name("gemm")->Apply(gemm_args)->MinTime(0.3)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    limits::measure_peaks();  // before and after the kernels: the best of both is the limit
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    limits::measure_peaks();
    limits::print_table(pool().size());
    return 0;
}
