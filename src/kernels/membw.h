#pragma once
// STREAM-style probe of the memory bandwidth this process can reach, for judging kernels
// against the memory bound (decode GEMV) and for `make bench`'s decode bound.
// Both probes touch a buffer much larger than the last-level cache, split over the pool's
// threads (each thread its own contiguous slice, first-touched by that thread).
#include <cstddef>
#include <cstdint>

#include "core/aligned_buffer.h"
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

// The read probe one slice at a time, to interleave with other work in the same seconds: on a VM
// whose memory bandwidth is shared with other guests the best-of-5 probe above moved 15-21 GB/s (a
// Zen 3 guest) and 37-58 GB/s (a Zen 4 guest) between minutes, more than the effects measured
// against it. bench_engine runs one pass after each decode step, so the decode and its bound see
// the same contention. Each pass reads the next slice of the buffer (slice_bytes, well above the
// last-level cache, the buffer several slices) on all of the pool's threads, with the probe's
// read loop, so a slice is cold when it comes round again.
class ReadProbe {
  public:
    // buffer_bytes 0: 1 GiB; slice_bytes 0: 256 MiB. Throws duet::Error if slice_bytes > buffer_bytes.
    explicit ReadProbe(ThreadPool& pool, size_t buffer_bytes = 0, size_t slice_bytes = 0);
    // Reads the next slice; returns the wall time of the read in ns (also added to total_ns()).
    int64_t pass();
    size_t slice_bytes() const { return slice_bytes_; }
    double total_bytes() const { return total_bytes_; }
    int64_t total_ns() const { return total_ns_; }
    // bytes / ns of all passes so far (GB/s); 0 before the first pass
    double gbps() const { return total_ns_ > 0 ? total_bytes_ / double(total_ns_) : 0.0; }

  private:
    ThreadPool& pool_;
    AlignedBuffer<float> buf_;
    size_t slice_bytes_ = 0, next_ = 0;
    double total_bytes_ = 0, sink_ = 0;
    int64_t total_ns_ = 0;
};

}  // namespace duet::kernels
