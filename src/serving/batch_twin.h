#pragma once
// The real server's modelled twin (`duet serve`, docs/server.md "The modelled twin"): every engine
// step the batcher really runs (its arrivals and its chunks, runtime::StepRecord) is timed on the
// modelled machine under each policy as it happens, and each request gets the modelled TTFT and
// TPOT of the steps it really waited and ran in, in the batch it really shared:
//   TTFT = the modelled time of every step from the first after its arrival through the one that
//          sampled its first token (queueing in steps included);
//   TPOT = the modelled time from each sampled token to the next, averaged over its tokens.
// Wall-clock gaps between steps (an idle server) are not modelled time. The timers are
// serving::StepCostModel in the server (a composition seen before costs a map lookup); the
// class takes any function of the step, so it can be checked against a hand-computed clock.
// A sequence is forgotten when take() reads it, and the oldest first when more than
// max_tracked are held (requests whose client left are never read).
// Thread safety: observe() from one thread (the engine's), the rest from any; one mutex.
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sched/scheduler.h"

namespace duet::serving {

struct TwinPolicy {
    std::string name;                                  // "npu_only", ...
    std::function<double(const sched::Step&)> step_ns;  // modelled time of a step
};

struct InBatchTimes {
    double ttft_ns = -1;     // -1: no token sampled in a step yet
    double tpot_ns = 0;      // mean over the tokens after the first (0 with one token)
    int64_t tokens = 0;      // tokens sampled in steps
};

class BatchTwin {
public:
    explicit BatchTwin(std::vector<TwinPolicy> policies, size_t max_tracked = 4096);

    // One engine step: `arrived` joined the queue before it (they wait from this step on).
    void observe(std::span<const sched::SeqId> arrived, const sched::Step& step);
    // Sequence `id`'s figures, one per policy in the constructor's order; nullopt when it is not
    // held (never arrived, already read, or dropped as the oldest). Forgets it.
    std::optional<std::vector<InBatchTimes>> take(sched::SeqId id);

    const std::vector<TwinPolicy>& policies() const { return policies_; }
    int64_t steps() const;                   // steps observed
    std::vector<double> modelled_ns() const;  // total modelled time of those steps, per policy

private:
    struct Seq {
        std::vector<double> clock_ns;  // per policy: since arrival, then since the last token
        std::vector<double> tpot_sum_ns;
        std::vector<InBatchTimes> times;
    };
    std::vector<TwinPolicy> policies_;
    size_t max_tracked_;
    mutable std::mutex mu_;
    std::map<sched::SeqId, Seq> seqs_;  // ids grow with arrival: begin() is the oldest
    int64_t steps_ = 0;
    std::vector<double> total_ns_;
};

}  // namespace duet::serving
