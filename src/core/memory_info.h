#pragma once
// What the kernel says about this machine's memory. Thread safety: any thread.
#include <cstdint>

namespace duet {

// Bytes the kernel reports available (MemAvailable in /proc/meminfo); 0 when unknown.
uint64_t available_memory_bytes();
// Bytes of memory the machine has (MemTotal); 0 when unknown.
uint64_t total_memory_bytes();

}  // namespace duet
