#pragma once
// A fixed pool of worker threads for data-parallel kernels. The calling thread takes part
// as worker 0, so a pool of n threads starts n-1 OS threads. Workers spin briefly before
// sleeping, so the many short parallel sections of a decode step do not pay a futex wake
// each. Not reentrant: one parallel_for at a time per pool (the engine owns one pool).
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace duet {

class ThreadPool {
public:
    // n_threads <= 0 means the number of hardware threads.
    explicit ThreadPool(int n_threads = 0);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }

    // Runs fn(thread_index, n_threads) once on every thread and returns when all are done.
    void run(const std::function<void(int, int)>& fn);

    // Splits [0, n) into contiguous chunks of at least `grain` items, one per thread, and
    // calls fn(begin, end) for each non-empty chunk.
    void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

    // As parallel_for (one contiguous range per thread, at least `grain` items each), each range
    // walked front to back in chunks of `chunk` items, fn(begin, end) per chunk; a thread done
    // with its range takes chunks from the back of the others' ranges. A thread descheduled on a
    // shared machine then no longer holds the whole call up at its end, while each thread still
    // reads its own range in order (a decode GEMV's one memory stream per thread).
    void parallel_for_chunked(int64_t n, int64_t grain, int64_t chunk, const std::function<void(int64_t, int64_t)>& fn);

private:
    void worker_loop(int index);

    int n_threads_;
    std::vector<std::thread> threads_;
    const std::function<void(int, int)>* job_ = nullptr;
    std::atomic<uint64_t> generation_{0};
    std::atomic<int> pending_{0};
    std::atomic<bool> stop_{false};
    std::mutex mu_;
    std::condition_variable cv_;
    // parallel_for_chunked: per thread's range, (next front chunk << 32) | (end of the chunks not
    // yet taken), claimed with compare-and-swap; one cache line each.
    struct alignas(64) ChunkRange {
        std::atomic<uint64_t> front_back{0};
    };
    std::unique_ptr<ChunkRange[]> ranges_;
};

// The number of threads a command uses when the user gives none: the hardware threads.
int default_thread_count();

}  // namespace duet
