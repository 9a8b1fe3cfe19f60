#pragma once
// STREAM-style probe of the memory bandwidth this process can reach, for judging kernels
// against the memory bound (decode GEMV) and for `make bench`'s decode bound.
// Both probes touch a buffer much larger than the last-level cache, split over the pool's
// threads (each thread its own contiguous slice, first-touched by that thread).
#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"

namespace duet::kernels {

struct MemBandwidth {
    double read_gbps;     // read-only sum: bytes read per second / 1e9 (best of the repetitions)
    double triad_gbps;    // a[i] = b[i] + s * c[i]: 3 arrays' bytes (2 read, 1 written) per second / 1e9
    size_t buffer_bytes;  // size of the read buffer (and of each triad array)
    int threads;
    // The same rates per second of CPU time per thread (process CPU time / threads): on a
    // machine shared with other busy processes this estimates what the threads reach while
    // they run, where the wall-clock rates above also count the time they waited for a core.
    double read_cpu_gbps = 0;
    double triad_cpu_gbps = 0;
};

// buffer_bytes: per array; 0 picks 256 MiB (well above the LLCs of current desktop and server
// parts per core complex). repetitions >= 1; the best repetition is reported (STREAM's rule).
MemBandwidth measure_memory_bandwidth(ThreadPool& pool, size_t buffer_bytes = 0, int repetitions = 5);

}  // namespace duet::kernels
