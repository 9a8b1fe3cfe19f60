#include "workload/serve_twin.h"

#include <chrono>

#include "core/error.h"
#include "serving/step_cost.h"
#include "sim/placement.h"
#include "workload/trace_bench.h"

namespace duet::workload {

TwinWorker::TwinWorker(std::shared_ptr<serving::BatchTwin> twin) : twin_(std::move(twin)) {
    thread_ = std::thread([this] { loop(); });
}

TwinWorker::~TwinWorker() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

void TwinWorker::post(std::vector<sched::SeqId> arrived, sched::Step step) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (queue_.size() >= kMaxQueuedSteps) {
            dropped_ = true;
            return;
        }
        queue_.emplace_back(std::move(arrived), std::move(step));
        ++posted_;
    }
    cv_.notify_one();
}

bool TwinWorker::catch_up(int64_t timeout_ms) {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t target = posted_;
    return done_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return observed_ >= target; }) &&
           !dropped_;
}

void TwinWorker::loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        auto item = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        twin_->observe(item.first, item.second);  // BatchTwin has its own mutex
        lock.lock();
        ++observed_;
        done_cv_.notify_all();
    }
}

ServeTwin make_serve_twin(const config::Settings& st, const config::CoopConfig& cfg, const std::string& model,
                          const std::string& dispatch) {
    ServeTwin t;
    try {
        TraceBenchInputs in;
        in.model = model;
        in.dispatch = dispatch;
        const BenchSetup setup = prepare_bench(st, cfg, in, false);
        std::vector<serving::TwinPolicy> policies;
        for (const auto& [p, shape] : {std::pair{setup.pb, &setup.shape_b}, std::pair{setup.pt, &setup.shape_t}}) {
            // one cost model per policy, owned by its timer; the rig outlives it through the capture
            auto cost = std::make_shared<serving::StepCostModel>(*shape, bench_run_options(cfg, p, in), setup.rig->hw);
            policies.push_back({sim::policy_name(p), [cost, rig = setup.rig](const sched::Step& s) {
                                    (void)rig;  // holds the hardware cost refers to
                                    return cost->step_ns(s);
                                }});
        }
        t.twin = std::make_shared<serving::BatchTwin>(std::move(policies));
        t.worker = std::make_shared<TwinWorker>(t.twin);
    } catch (const Error& e) {
        t.unavailable = e.what();
    }
    return t;
}

nlohmann::json in_batch_json(const ServeTwin& t, int64_t id) {
    if (!t.twin) return {{"error", t.unavailable}};
    if (t.worker && !t.worker->catch_up(2000))
        return {{"error", "the twin is behind the engine (it times each new step composition on the modelled machine)"}};
    const auto times = t.twin->take(id);
    if (!times) return {{"error", "the twin no longer holds this request's steps"}};
    nlohmann::json j = {{"steps", t.twin->steps()}};
    const char* sides[] = {"baseline", "target"};
    for (size_t p = 0; p < times->size() && p < 2; ++p) {
        const serving::InBatchTimes& x = (*times)[p];
        j[sides[p]] = {{"policy", t.twin->policies()[p].name},
                       {"ttft_ms", x.tokens > 0 ? x.ttft_ns / 1e6 : 0.0},
                       {"tpot_ms", x.tpot_ns / 1e6},
                       {"tokens", x.tokens}};
    }
    return j;
}

}  // namespace duet::workload
