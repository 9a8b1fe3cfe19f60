#pragma once
// The modelled twin of `duet serve` (serving/batch_twin.h) built from what the server loaded:
// the served model's architecture (its GGUF hparams), settings.json and config.toml, timed
// under the same baseline (npu_only) and target (npu_pim_coop) as the `duet` object's by-size
// figures, so the two can be compared request by request.
// Thread safety: the result is a serving::BatchTwin (its own rules).
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/coop_config.h"
#include "config/settings.h"
#include "serving/batch_twin.h"

namespace duet::workload {

// Runs BatchTwin::observe on a thread of its own: timing a new step composition on the modelled
// machine takes milliseconds, and on the engine thread it slowed the real server it models (a
// lone request's TPOT 9 ms -> 57 ms on a 4-layer 1B model, 2-core VM). post() only copies the step.
// At most kMaxQueuedSteps wait; past that steps are dropped and the twin says so.
// Thread safety: post() from one thread (the engine's), catch_up() from any.
class TwinWorker {
public:
    static constexpr size_t kMaxQueuedSteps = 100000;
    explicit TwinWorker(std::shared_ptr<serving::BatchTwin> twin);
    ~TwinWorker();  // stops after the step in hand, joins
    TwinWorker(const TwinWorker&) = delete;
    TwinWorker& operator=(const TwinWorker&) = delete;
    void post(std::vector<sched::SeqId> arrived, sched::Step step);
    // Waits until every step posted before the call is observed: true, or false after `timeout_ms`
    // or when steps were dropped.
    bool catch_up(int64_t timeout_ms);

private:
    void loop();
    std::shared_ptr<serving::BatchTwin> twin_;
    std::mutex mu_;
    std::condition_variable cv_, done_cv_;
    std::deque<std::pair<std::vector<sched::SeqId>, sched::Step>> queue_;
    uint64_t posted_ = 0, observed_ = 0;
    bool dropped_ = false, stop_ = false;
    std::thread thread_;
};

struct ServeTwin {
    std::shared_ptr<serving::BatchTwin> twin;  // null when the machine cannot be modelled
    std::shared_ptr<TwinWorker> worker;        // feeds twin off the engine thread (with twin)
    std::string unavailable;                   // then why (the loader's or the bench's error)
};

// `model`: the served GGUF file; `dispatch`: the modelled NPU's dispatch mode. The twin comes
// with its worker (post the engine's steps to it).
ServeTwin make_serve_twin(const config::Settings& st, const config::CoopConfig& cfg, const std::string& model,
                          const std::string& dispatch);

// The `in_batch` member of a response's `duet` object for sequence `id`: {"steps": steps
// observed so far, "baseline"/"target": {"policy", "ttft_ms", "tpot_ms", "tokens"}}, or
// {"error": why} when the twin is missing, more than 2 s behind the engine, or no longer holds
// the sequence.
nlohmann::json in_batch_json(const ServeTwin& t, int64_t id);

}  // namespace duet::workload
