#include "core/memory_info.h"

#include <fstream>
#include <string>

namespace duet {

uint64_t available_memory_bytes() {
    std::ifstream f("/proc/meminfo");
    std::string key, unit;
    uint64_t kb = 0;
    while (f >> key >> kb >> unit)
        if (key == "MemAvailable:") return kb * 1024;
    return 0;
}

}  // namespace duet
