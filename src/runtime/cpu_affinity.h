#pragma once
// Real thread pinning of an engine's pool (CPU_AFFINITY_CONF, config/runtime_knobs.h): pool
// thread i runs only on the i-th CPU of the process's allowed set (modulo its size), so the
// decode's memory streams stay on their cores instead of migrating. Linux sched affinity.
// Thread safety: call while no parallel section of the pool runs (it runs one itself).
#include <vector>

#include "core/thread_pool.h"

namespace duet::runtime {

// The CPUs this process may run on, ascending.
std::vector<int> allowed_cpus();

// Pins each pool thread to one CPU as above; returns the CPU of each thread (index = thread).
// Empty when the allowed set cannot be read (nothing changed).
std::vector<int> pin_pool_threads(ThreadPool& pool);

// The CPUs each pool thread may run on now (for tests and doctor).
std::vector<std::vector<int>> pool_thread_affinity(ThreadPool& pool);

}  // namespace duet::runtime
