#pragma once
// The memory a tune search (and a bench task) holds, estimated before it starts, so a run that
// cannot fit its cap is refused with the arithmetic instead of growing until the machine runs
// out (the default optimisation task peaked at 4.6 GB and `duet tune --hw-pairs` at 6.3 GB
// before the evaluator's cache was bounded).
//
// What a search holds (measured on llama2-7b, tiny-llama; docs/tune.md "Memory"):
//  - base_bytes: the binary, presets and the process-wide rig cache (kBaseBytes);
//  - per evaluated point, its result and memo key: kPointBytesPerDim per dimension (4.2 KB for
//    the 15 default dimensions, measured with `duet tune --strategy grid` at 4 000 and 16 000
//    points);
//  - per evaluator thread, cached setups: each holds, for every batch size it has seen, the
//    baseline and target plans, one op record (sizeof(graph::OpRecord)) per operator of each of
//    the gen_len forwards. The evaluator drops its oldest setups to stay within the bytes left
//    for it (cache_bytes_per_thread), so the cap holds whatever the space.
// Plain values; thread safe.
#include <cstdint>
#include <string>

#include "tune/space.h"

namespace duet::tune {

inline constexpr uint64_t kDefaultMemoryCapBytes = uint64_t(4096) << 20;  // 4 GiB: --max-memory-mb, --task-memory-mb
inline constexpr uint64_t kBaseBytes = uint64_t(64) << 20;  // 12 MB binary + 16 cached rigs + a run's working set
inline constexpr uint64_t kPointBytesPerDim = 300;          // measured 277 B (4.16 KB / 15 dims)

struct MemoryEstimate {
    uint64_t plan_bytes = 0;      // one plan: records_per_forward x gen_len x sizeof(OpRecord)
    int64_t records_per_forward = 0, gen_len = 0;
    int64_t batches = 1;          // batch sizes a setup may plan (runtime.batch_size values)
    int64_t points = 0;           // points held at most
    int64_t dims = 0;
    int threads = 1;
    uint64_t setup_bytes() const { return uint64_t(batches) * 2 * plan_bytes; }  // baseline + target plans
    uint64_t points_bytes() const { return uint64_t(points) * uint64_t(dims > 0 ? dims : 1) * kPointBytesPerDim; }
    // The least the run holds: base, every point, one whole setup per thread.
    uint64_t floor_bytes() const { return kBaseBytes + points_bytes() + uint64_t(threads) * setup_bytes(); }
    // Bytes each evaluator's cached setups may take besides the one in use (0 when none fit).
    uint64_t cache_bytes_per_thread(uint64_t cap_bytes) const;
};

// Bytes of one plan of `gen_len` forwards of `model` (runtime_dtype weights), from the records of
// a two-forward plan.
MemoryEstimate plan_memory(const std::string& model, const std::string& runtime_dtype, int64_t gen_len);

// Throws duet::Error when floor_bytes() exceeds cap_bytes: "<what> needs at least X GiB: ... more
// than the cap of Y GiB (<cap_name> <cap in MiB>; allowed: <knobs>, or a larger cap)".
void check_memory(const MemoryEstimate& e, uint64_t cap_bytes, const std::string& what, const std::string& cap_name,
                  const std::string& knobs);

}  // namespace duet::tune
