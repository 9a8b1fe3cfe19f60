#include "kernels/membw.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <ctime>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/aligned_buffer.h"
#include "core/cpu_features.h"
#include "core/error.h"
#include "core/timer.h"

namespace duet::kernels {
namespace {

// Sums the words as integers (wrapping 32-bit lanes). The baseline (SSE2) loop widened every
// word to 64 bits and was compute-bound at ~6 GB/s per core on a Skylake-SP guest where the f16
// GEMV read 9 GB/s, i.e. the "limit" was below what kernels reached. The AVX2 loop (run-time
// selected) keeps 4 independent 32-byte accumulators and prefetches: 2 loads and 2 adds per 64 bytes, far
// below any core's load/ALU throughput, so the loop measures memory, not itself.
#if defined(__x86_64__)
__attribute__((target("avx2"))) uint64_t sum_slice_avx2(const uint32_t* u, int64_t n) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        const auto* v = reinterpret_cast<const __m256i*>(u + i);
        // 16 KiB ahead, as the GEMV kernels do: a single core's hardware prefetcher alone
        // leaves DRAM idle between requests (kernels/cpu/matmul_impl.inc kPrefetchBytes)
        _mm_prefetch(reinterpret_cast<const char*>(u + i) + 16384, _MM_HINT_T1);
        _mm_prefetch(reinterpret_cast<const char*>(u + i) + 16384 + 64, _MM_HINT_T1);
        a0 = _mm256_add_epi32(a0, _mm256_loadu_si256(v));
        a1 = _mm256_add_epi32(a1, _mm256_loadu_si256(v + 1));
        a2 = _mm256_add_epi32(a2, _mm256_loadu_si256(v + 2));
        a3 = _mm256_add_epi32(a3, _mm256_loadu_si256(v + 3));
    }
    alignas(32) uint32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes),
                       _mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3)));
    uint64_t s = 0;
    for (uint32_t l : lanes) s += l;
    for (; i < n; ++i) s += u[i];
    return s;
}
#endif

double sum_slice(const float* p, int64_t n) {
    const auto* u = reinterpret_cast<const uint32_t*>(p);
#if defined(__x86_64__)
    if (cpu_features().avx2) return double(sum_slice_avx2(u, n));
#endif
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

ReadProbe::ReadProbe(ThreadPool& pool, size_t buffer_bytes, size_t slice_bytes) : pool_(pool) {
    if (buffer_bytes == 0) buffer_bytes = size_t(1) << 30;
    if (slice_bytes == 0) slice_bytes = std::min(buffer_bytes, size_t(256) << 20);
    if (slice_bytes > buffer_bytes)
        fail("ReadProbe: slice_bytes {} is larger than buffer_bytes {}", slice_bytes, buffer_bytes);
    slice_bytes_ = slice_bytes / sizeof(float) * sizeof(float);
    const int64_t n = int64_t(buffer_bytes / sizeof(float));
    buf_.resize(size_t(n));
    pool_.parallel_for(n, 1 << 16, [&](int64_t s, int64_t e) {  // first touch by the threads that read
        for (int64_t i = s; i < e; ++i) buf_[size_t(i)] = 1.0f;
    });
}

int64_t ReadProbe::pass() {
    const int64_t n = int64_t(slice_bytes_ / sizeof(float));
    if (next_ + size_t(n) > buf_.size()) next_ = 0;
    const float* p = buf_.data() + next_;
    next_ += size_t(n);
    // in 1 MiB chunks, a thread done early taking the rest of the other's range (as the decode
    // GEMVs do): a static split left one thread idle at the end of a pass when the two got unequal
    // shares of the bandwidth
    constexpr int64_t kChunk = (int64_t(1) << 20) / int64_t(sizeof(float));
    std::atomic<uint64_t> sum{0};
    const int64_t t0 = now_ns();
    pool_.parallel_for_chunked(n, kChunk, kChunk, [&](int64_t s, int64_t e) {
        sum.fetch_add(uint64_t(sum_slice(p + s, e - s)), std::memory_order_relaxed);
    });
    const int64_t dt = now_ns() - t0;
    sink_ += double(sum.load());  // keeps the reads observable
    total_bytes_ += double(slice_bytes_);
    total_ns_ += dt;
    return dt;
}

}  // namespace duet::kernels
