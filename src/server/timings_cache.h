#pragma once
// The `duet` object of each response holds the modelled NPU-only and NPU+PIM timings of a request of
// its size (duet serve: a trace-only `duet bench` run, 20-90 ms of CPU). It depends only on (prompt
// tokens, completion tokens) for the served model and configuration, and an agent or a load test
// sends the same sizes again and again: on a 2-core machine each recomputation took a core from the
// engine thread right when the next requests were waiting for their first token.
//
// memoise_timings wraps such a function: results are kept per (prompt, completion) pair, at most
// max_entries of them (the cache is emptied when full: sizes seen in a burst come back soon).
// Thread safety: the returned function may be called from any number of threads at once; two
// threads asking for the same new pair may both compute it (the same value).
#include <cstddef>
#include <cstdint>
#include <functional>

#include <nlohmann/json.hpp>

namespace duet::server {

// Modelled device timings for a request of this size, as if it had the machine to itself.
using SizeTimings = std::function<nlohmann::json(int64_t prompt_tokens, int64_t completion_tokens)>;
// Modelled timings of a request in the steps it really ran in (serving/batch_twin.h), by the
// scheduler's id of its first choice (runtime::GenResult::seq_id); null when not known.
using InBatchTimings = std::function<nlohmann::json(int64_t seq_id)>;

// The modelled parts of the `duet` object of each response; either may be empty.
struct ModelledTimings {
    SizeTimings by_size;
    InBatchTimings in_batch;
};

SizeTimings memoise_timings(SizeTimings compute, size_t max_entries = 4096);

}  // namespace duet::server
