#pragma once
// Wall-clock helpers for host timings (steady clock, nanoseconds).
#include <chrono>
#include <cstdint>

namespace duet {

inline int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

}  // namespace duet
