#include "core/thread_pool.h"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace duet {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__)
    _mm_pause();
#endif
}

constexpr int kSpinIterations = 20000;

}  // namespace

int default_thread_count() { return std::max(1u, std::thread::hardware_concurrency()); }

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(n_threads > 0 ? n_threads : default_thread_count()), ranges_(new ChunkRange[size_t(n_threads_)]) {
    for (int i = 1; i < n_threads_; ++i) threads_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_.store(true);
        generation_.fetch_add(1);
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
}

void ThreadPool::worker_loop(int index) {
    uint64_t seen = 0;
    for (;;) {
        uint64_t gen = generation_.load(std::memory_order_acquire);
        for (int spin = 0; gen == seen && spin < kSpinIterations; ++spin) {
            cpu_relax();
            gen = generation_.load(std::memory_order_acquire);
        }
        if (gen == seen) {
            std::unique_lock<std::mutex> lock(mu_);
            cv_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
            gen = generation_.load(std::memory_order_acquire);
        }
        seen = gen;
        if (stop_.load()) return;
        (*job_)(index, n_threads_);
        pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
}

void ThreadPool::run(const std::function<void(int, int)>& fn) {
    if (n_threads_ == 1) {
        fn(0, 1);
        return;
    }
    job_ = &fn;
    pending_.store(n_threads_ - 1, std::memory_order_release);
    {
        std::lock_guard<std::mutex> lock(mu_);
        generation_.fetch_add(1, std::memory_order_acq_rel);
    }
    cv_.notify_all();
    fn(0, n_threads_);
    while (pending_.load(std::memory_order_acquire) != 0) cpu_relax();
    job_ = nullptr;
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
    if (n <= 0) return;
    grain = std::max<int64_t>(grain, 1);
    const int64_t max_chunks = (n + grain - 1) / grain;
    const int chunks = int(std::min<int64_t>(n_threads_, max_chunks));
    if (chunks <= 1) {
        fn(0, n);
        return;
    }
    run([&](int t, int) {
        if (t >= chunks) return;
        const int64_t begin = n * t / chunks;
        const int64_t end = n * (t + 1) / chunks;
        if (begin < end) fn(begin, end);
    });
}

void ThreadPool::parallel_for_chunked(int64_t n, int64_t grain, int64_t chunk,
                                      const std::function<void(int64_t, int64_t)>& fn) {
    if (n <= 0) return;
    grain = std::max<int64_t>(grain, 1);
    chunk = std::max<int64_t>(chunk, 1);
    const int ranges = int(std::min<int64_t>(n_threads_, (n + grain - 1) / grain));
    if (ranges <= 1) {
        for (int64_t b = 0; b < n; b += chunk) fn(b, std::min(n, b + chunk));
        return;
    }
    auto range_begin = [&](int r) { return n * r / ranges; };
    auto n_chunks = [&](int r) { return (range_begin(r + 1) - range_begin(r) + chunk - 1) / chunk; };
    for (int r = 0; r < ranges; ++r) ranges_[size_t(r)].front_back.store(uint64_t(n_chunks(r)), std::memory_order_relaxed);
    // Claims chunk `front` (from_front) or `back - 1` of range r; -1 when none is left.
    auto claim = [&](int r, bool from_front) -> int64_t {
        std::atomic<uint64_t>& fb = ranges_[size_t(r)].front_back;
        uint64_t v = fb.load(std::memory_order_relaxed);
        for (;;) {
            const uint64_t front = v >> 32, back = v & 0xffffffffu;
            if (front >= back) return -1;
            const uint64_t next = from_front ? ((front + 1) << 32) | back : (front << 32) | (back - 1);
            if (fb.compare_exchange_weak(v, next, std::memory_order_relaxed)) return int64_t(from_front ? front : back - 1);
        }
    };
    auto run_chunk = [&](int r, int64_t c) {
        const int64_t b = range_begin(r) + c * chunk;
        fn(b, std::min(range_begin(r + 1), b + chunk));
    };
    run([&](int t, int nt) {
        if (t < ranges)
            for (int64_t c; (c = claim(t, true)) >= 0;) run_chunk(t, c);
        for (int i = 1; i < nt; ++i) {  // then help the others, nearest first
            const int r = (t + i) % nt;
            if (r >= ranges) continue;
            for (int64_t c; (c = claim(r, false)) >= 0;) run_chunk(r, c);
        }
    });
}

}  // namespace duet
