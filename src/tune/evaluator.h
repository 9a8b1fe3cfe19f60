#pragma once
// Evaluates tune points: applies a point to the base configuration, runs the trace-only
// baseline-vs-target comparison of `duet bench` (workload::finish_bench, the same code) and
// condenses the report into a PointResult.
//
// Reuse: the hardware rig (NPU + PIM device models, layout binding) and the model's plans are
// built once per distinct hardware key (preset pair, dispatch mode, every [topology] key and the
// layout knobs the rig is built from: alignment, block size, index granularity/limit, target format) and per
// batch, then reused for every point that shares them; a point costs two timeline
// simulations and the verdicts. At most kMaxCachedSetups such setups are kept per evaluator, and
// at most `cache_bytes` of their plans besides the one in use (the oldest go first): a setup's
// plans take records x gen_len x sizeof(OpRecord) per plan, about 30 MB for llama2-7b at gen_len
// 256 (measured: `duet tune --hw-pairs --budget 300 --threads 1` built 181 rigs and peaked at
// 5.3 GB without a bound), so a sweep stays within tune/memory_estimate.h's cap whatever the space.
// Thread safety: one Evaluator per thread (its caches are not locked).
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/report.h"
#include "tune/space.h"

namespace duet::tune {

enum class Objective { TBT, ENERGY, TOKENS_PER_S };
Objective objective_from_name(const std::string& name);  // tbt, energy, tokens_per_s; throws naming --objective
const char* objective_name(Objective o);

struct PointResult {
    std::string key;           // Space::key
    nlohmann::json values;     // Space::values_json
    bool ok = false;           // false: the configuration was refused (error says why)
    std::string error;
    double tbt_ms = 0, ttft_ms = 0, decode_energy_per_token_pj = 0, tokens_per_s = 0;  // target run
    double baseline_tbt_ms = 0, baseline_ttft_ms = 0;
    double memory_bytes = 0;   // target peak memory
    std::vector<sim::Verdict> verdicts;  // those of `duet bench` (sim/report.h)
    bool feasible = false;     // ok and every verdict met
    double objective = 0;      // lower is better (tokens/s negated)
    double violation = 0;      // sum of the verdicts' relative misses (0 when feasible)
};

// Search order: feasible before infeasible; feasible by objective, infeasible by violation;
// refused points last; ties broken by key (deterministic).
bool better(const PointResult& a, const PointResult& b);

nlohmann::json point_to_json(const PointResult& r);
PointResult point_from_json(const nlohmann::json& j);

class Evaluator {
public:
    // cache_bytes: plan bytes kept in setups other than the one in use (0 = no byte bound).
    Evaluator(const Space& space, const Candidate& base, Objective objective, uint64_t cache_bytes = 0);
    PointResult evaluate(const Point& p);
    // The full bench report of a point (for the best point's printout and the task result).
    sim::BenchReport report(const Point& p);
    int rigs_built() const { return rigs_built_; }
    size_t cached_setups() const { return setups_.size(); }  // at most kMaxCachedSetups
    uint64_t cached_plan_bytes() const;                       // plans held by all cached setups
    static constexpr size_t kMaxCachedSetups = 16;

private:
    struct Entry;
    Entry& setup_for(const Candidate& c);
    void drop_oldest();
    // [topology] ep of the point, as `duet bench` reads it: the expert-parallel ranks and the
    // (uniform) routing of a MoE model. Throws duet::Error as bench refuses them.
    void set_expert_inputs(Candidate& c);
    // Drops the oldest setups other than `keep` while the others' plans exceed cache_bytes_.
    void trim(const std::string& keep);

    const Space& space_;
    Candidate base_;
    Objective objective_;
    std::map<std::string, std::shared_ptr<Entry>> setups_;
    std::deque<std::string> setup_order_;  // keys of setups_, oldest first
    std::map<std::string, std::shared_ptr<const sim::ExpertRouting>> routings_;  // by ep and runtime dtype
    int rigs_built_ = 0;
    uint64_t cache_bytes_ = 0;
};

}  // namespace duet::tune
