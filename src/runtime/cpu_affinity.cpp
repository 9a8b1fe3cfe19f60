#include "runtime/cpu_affinity.h"

#include <pthread.h>
#include <sched.h>

namespace duet::runtime {
namespace {
std::vector<int> cpus_of(const cpu_set_t& set) {
    std::vector<int> out;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) out.push_back(c);
    return out;
}
}  // namespace

std::vector<int> allowed_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return {};
    return cpus_of(set);
}

std::vector<int> pin_pool_threads(ThreadPool& pool) {
    const std::vector<int> cpus = allowed_cpus();
    if (cpus.empty()) return {};
    std::vector<int> chosen(size_t(pool.size()), -1);
    pool.run([&](int i, int) {
        const int cpu = cpus[size_t(i) % cpus.size()];
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0) chosen[size_t(i)] = cpu;
    });
    return chosen;
}

std::vector<std::vector<int>> pool_thread_affinity(ThreadPool& pool) {
    std::vector<std::vector<int>> out(size_t(pool.size()));
    pool.run([&](int i, int) {
        cpu_set_t set;
        CPU_ZERO(&set);
        if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) == 0) out[size_t(i)] = cpus_of(set);
    });
    return out;
}

}  // namespace duet::runtime
