#include "kernels/membw.h"

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/timer.h"

namespace duet::kernels {
namespace {

// Sums the words as integers: integer addition is associative, so the compiler vectorises the
// loop with the baseline ISA (a float sum would be kept in order, scalar, and could fall short
// of saturating DRAM).
double sum_slice(const float* p, int64_t n) {
    const auto* u = reinterpret_cast<const uint32_t*>(p);
    uint64_t s = 0;
    for (int64_t i = 0; i < n; ++i) s += u[i];
    return double(s);
}

}  // namespace

MemBandwidth measure_memory_bandwidth(ThreadPool& pool, size_t buffer_bytes, int repetitions) {
    if (buffer_bytes == 0) buffer_bytes = size_t(256) << 20;
    repetitions = std::max(1, repetitions);
    const int64_t n = int64_t(buffer_bytes / sizeof(float));
    AlignedBuffer<float> a, b, c;
    a.resize(size_t(n));
    b.resize(size_t(n));
    c.resize(size_t(n));
    const int threads = pool.size();
    // first touch by the thread that will stream the slice (NUMA placement)
    pool.parallel_for(n, 1 << 16, [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i) {
            a[size_t(i)] = 1.0f;
            b[size_t(i)] = 2.0f;
            c[size_t(i)] = 0.5f;
        }
    });
    MemBandwidth r{0, 0, buffer_bytes, threads};
    auto cpu_ns = [] {
        timespec t;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
        return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
    };
    std::vector<double> sums(size_t(threads), 0.0);
    for (int rep = 0; rep < repetitions; ++rep) {
        const int64_t c0 = cpu_ns(), t0 = now_ns();
        pool.run([&](int t, int nt) {
            const int64_t s = n * t / nt, e = n * (t + 1) / nt;
            sums[size_t(t)] += sum_slice(b.data() + s, e - s);
        });
        const int64_t c1 = cpu_ns(), t1 = now_ns();
        r.read_gbps = std::max(r.read_gbps, double(n) * 4.0 / double(t1 - t0));
        r.read_cpu_gbps = std::max(r.read_cpu_gbps, double(n) * 4.0 * threads / double(c1 - c0));
        const float scalar = 3.0f;
        pool.run([&](int t, int nt) {
            const int64_t s = n * t / nt, e = n * (t + 1) / nt;
            float* pa = a.data();
            const float* pb = b.data();
            const float* pc = c.data();
            for (int64_t i = s; i < e; ++i) pa[i] = pb[i] + scalar * pc[i];
        });
        const int64_t c2 = cpu_ns(), t2 = now_ns();
        r.triad_gbps = std::max(r.triad_gbps, double(n) * 12.0 / double(t2 - t1));
        r.triad_cpu_gbps = std::max(r.triad_cpu_gbps, double(n) * 12.0 * threads / double(c2 - c1));
    }
    // keep the sums observable so the read loop is not optimised away
    volatile double sink = 0;
    for (double s : sums) sink = sink + s;
    (void)sink;
    return r;
}

}  // namespace duet::kernels
