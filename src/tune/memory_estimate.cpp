#include "tune/memory_estimate.h"

#include <fmt/format.h>

#include "core/error.h"
#include "sim/planner.h"
#include "workload/model_limits.h"

namespace duet::tune {
namespace {

double gib(uint64_t b) { return double(b) / double(uint64_t(1) << 30); }
double mib(uint64_t b) { return double(b) / double(uint64_t(1) << 20); }

}  // namespace

uint64_t MemoryEstimate::cache_bytes_per_thread(uint64_t cap_bytes) const {
    const uint64_t floor = floor_bytes();
    return cap_bytes > floor ? (cap_bytes - floor) / uint64_t(threads > 0 ? threads : 1) : 0;
}

MemoryEstimate plan_memory(const std::string& model, const std::string& runtime_dtype, int64_t gen_len) {
    const graph::ModelShape shape = workload::bench_model_shape(model, runtime_dtype);
    MemoryEstimate e;
    e.records_per_forward = int64_t(sim::plan_generation(shape, 1, 2, 1).ops.size() / 2);
    e.gen_len = gen_len;
    e.plan_bytes = uint64_t(e.records_per_forward) * uint64_t(gen_len) * sizeof(graph::OpRecord);
    return e;
}

void check_memory(const MemoryEstimate& e, uint64_t cap_bytes, const std::string& what, const std::string& cap_name,
                  const std::string& knobs) {
    if (cap_bytes == 0 || e.floor_bytes() <= cap_bytes) return;
    const uint64_t point_bytes = uint64_t(e.dims > 0 ? e.dims : 1) * kPointBytesPerDim;
    const std::string points = e.points > 0 ? fmt::format(" + {} points x {} B", e.points, point_bytes) : "";
    fail("{} needs at least {:.2f} GiB: {} MiB base{} + {} thread(s) x {:.1f} MiB of plans ({} batch size(s) x 2 plans "
         "x {} forwards x {} op records x {} B), more than the cap of {:.2f} GiB ({} {}; allowed: {}, or a larger cap)",
         what, gib(e.floor_bytes()), kBaseBytes >> 20, points, e.threads, mib(e.setup_bytes()), e.batches, e.gen_len,
         e.records_per_forward, sizeof(graph::OpRecord), gib(cap_bytes), cap_name, cap_bytes >> 20, knobs);
}

}  // namespace duet::tune
