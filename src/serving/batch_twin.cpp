#include "serving/batch_twin.h"

namespace duet::serving {

BatchTwin::BatchTwin(std::vector<TwinPolicy> policies, size_t max_tracked)
    : policies_(std::move(policies)), max_tracked_(max_tracked), total_ns_(policies_.size(), 0.0) {}

void BatchTwin::observe(std::span<const sched::SeqId> arrived, const sched::Step& step) {
    std::vector<double> ns(policies_.size(), 0.0);
    if (!step.chunks.empty())  // timed outside the lock: take() never waits for a new composition
        for (size_t p = 0; p < policies_.size(); ++p) ns[p] = policies_[p].step_ns(step);
    const size_t n = policies_.size();
    std::lock_guard<std::mutex> lock(mu_);
    for (sched::SeqId id : arrived) seqs_[id] = Seq{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0),
                                                    std::vector<InBatchTimes>(n)};
    while (seqs_.size() > max_tracked_) seqs_.erase(seqs_.begin());
    ++steps_;
    for (size_t p = 0; p < n; ++p) total_ns_[p] += ns[p];
    for (auto& [id, s] : seqs_)
        for (size_t p = 0; p < n; ++p) s.clock_ns[p] += ns[p];
    for (const sched::Chunk& c : step.chunks) {
        if (!c.samples) continue;
        const auto it = seqs_.find(c.id);
        if (it == seqs_.end()) continue;
        Seq& s = it->second;
        for (size_t p = 0; p < n; ++p) {
            InBatchTimes& t = s.times[p];
            if (t.tokens == 0) t.ttft_ns = s.clock_ns[p];
            else s.tpot_sum_ns[p] += s.clock_ns[p];
            ++t.tokens;
            t.tpot_ns = t.tokens > 1 ? s.tpot_sum_ns[p] / double(t.tokens - 1) : 0.0;
            s.clock_ns[p] = 0;
        }
    }
}

std::optional<std::vector<InBatchTimes>> BatchTwin::take(sched::SeqId id) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = seqs_.find(id);
    if (it == seqs_.end()) return std::nullopt;
    std::vector<InBatchTimes> t = std::move(it->second.times);
    seqs_.erase(it);
    return t;
}

int64_t BatchTwin::steps() const {
    std::lock_guard<std::mutex> lock(mu_);
    return steps_;
}

std::vector<double> BatchTwin::modelled_ns() const {
    std::lock_guard<std::mutex> lock(mu_);
    return total_ns_;
}

}  // namespace duet::serving
