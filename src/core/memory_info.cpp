#include "core/memory_info.h"

#include <fstream>
#include <string>

namespace duet {

namespace {

// The value of `key` ("MemAvailable:") in /proc/meminfo, bytes; 0 when absent.
uint64_t meminfo_bytes(const std::string& key) {
    std::ifstream f("/proc/meminfo");
    std::string k, unit;
    uint64_t kb = 0;
    while (f >> k >> kb >> unit)
        if (k == key) return kb * 1024;
    return 0;
}

}  // namespace

uint64_t available_memory_bytes() { return meminfo_bytes("MemAvailable:"); }

uint64_t total_memory_bytes() { return meminfo_bytes("MemTotal:"); }

}  // namespace duet
