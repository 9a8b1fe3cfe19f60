#include "tune/evaluator.h"

#include <cmath>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "core/error.h"
#include "hw/npu/npu_preset.h"
#include "layout/conversion_cost.h"
#include "workload/bench_inputs.h"
#include "workload/modelled_machine.h"
#include "workload/trace_bench.h"

namespace duet::tune {
namespace {

// The rig's conversion costs read [reorder] prefetch_depth only through the L1 staging hit rate of
// the prefetched blocks (layout::l1_staging_hit_rate, from the NPU's L1/L0 sizes), so points whose
// hit rates agree share a rig. Thread-safe: the presets read are cached under a lock.
double staging_hit_rate(const config::Settings& st, const config::CoopConfig& cfg) {
    static std::mutex mu;
    static std::map<std::string, layout::NpuDataPath> paths;
    layout::NpuDataPath path;
    {
        std::lock_guard<std::mutex> lock(mu);
        auto it = paths.find(st.ascend.soc_version);
        if (it == paths.end()) {
            const hw::npu::NpuPreset np = hw::npu::load_npu_preset(st.ascend.soc_version);
            layout::NpuDataPath p;
            p.l1_bytes = np.l1_kib * 1024;
            p.l0ab_bytes = (np.l0a_kib + np.l0b_kib) * 1024;
            it = paths.emplace(st.ascend.soc_version, p).first;
        }
        path = it->second;
    }
    return layout::l1_staging_hit_rate(uint64_t(cfg.reorder.block_size_kb) * 1024, cfg.reorder.prefetch_depth, path);
}

}  // namespace

Objective objective_from_name(const std::string& name) {
    if (name == "tbt") return Objective::TBT;
    if (name == "energy") return Objective::ENERGY;
    if (name == "tokens_per_s") return Objective::TOKENS_PER_S;
    fail("--objective = \"{}\" is not allowed (allowed: tbt, energy, tokens_per_s)", name);
}

const char* objective_name(Objective o) {
    switch (o) {
        case Objective::TBT: return "tbt";
        case Objective::ENERGY: return "energy";
        case Objective::TOKENS_PER_S: return "tokens_per_s";
    }
    return "?";
}

bool better(const PointResult& a, const PointResult& b) {
    if (a.ok != b.ok) return a.ok;
    if (a.feasible != b.feasible) return a.feasible;
    const double x = a.feasible ? a.objective : a.violation, y = b.feasible ? b.objective : b.violation;
    if (x != y) return x < y;
    if (!a.feasible && a.objective != b.objective) return a.objective < b.objective;
    return a.key < b.key;
}

nlohmann::json point_to_json(const PointResult& r) {
    nlohmann::json j = {{"values", r.values}, {"ok", r.ok}};
    if (!r.ok) {
        j["error"] = r.error;
        return j;
    }
    j["feasible"] = r.feasible;
    j["tbt_ms"] = r.tbt_ms;
    j["ttft_ms"] = r.ttft_ms;
    j["memory_bytes"] = r.memory_bytes;
    j["decode_energy_per_token_pj"] = r.decode_energy_per_token_pj;
    j["tokens_per_s"] = r.tokens_per_s;
    j["baseline_tbt_ms"] = r.baseline_tbt_ms;
    j["baseline_ttft_ms"] = r.baseline_ttft_ms;
    j["objective"] = r.objective;
    j["violation"] = r.violation;
    j["verdicts"] = sim::verdicts_to_json(r.verdicts);
    return j;
}

PointResult point_from_json(const nlohmann::json& j) {
    PointResult r;
    r.values = j.at("values");
    r.ok = j.at("ok").get<bool>();
    if (!r.ok) {
        r.error = j.value("error", "");
        return r;
    }
    r.feasible = j.at("feasible").get<bool>();
    r.tbt_ms = j.at("tbt_ms").get<double>();
    r.ttft_ms = j.at("ttft_ms").get<double>();
    r.memory_bytes = j.at("memory_bytes").get<double>();
    r.decode_energy_per_token_pj = j.at("decode_energy_per_token_pj").get<double>();
    r.tokens_per_s = j.at("tokens_per_s").get<double>();
    r.baseline_tbt_ms = j.at("baseline_tbt_ms").get<double>();
    r.baseline_ttft_ms = j.at("baseline_ttft_ms").get<double>();
    r.objective = j.at("objective").get<double>();
    r.violation = j.at("violation").get<double>();
    r.verdicts = sim::verdicts_from_json(j.at("verdicts"));
    return r;
}

struct Evaluator::Entry {
    workload::BenchSetup setup;
    std::map<int64_t, std::pair<sim::Plan, sim::Plan>> plans;  // by batch
    std::map<std::string, sim::RunReport> baselines;           // by baseline_key
    uint64_t plan_bytes = 0;                                   // op records held by `plans`
    std::string key;                                           // in setups_
};

namespace {

uint64_t plan_bytes(const sim::Plan& p) {
    uint64_t b = uint64_t(p.ops.capacity()) * sizeof(graph::OpRecord);
    for (const sim::Plan& s : p.next_stages) b += plan_bytes(s);
    return b;
}

// Everything the baseline run depends on besides the entry's rig and shape: batch, lengths and
// its run options. An NPU-only baseline reads none of the PIM-side knobs (placement, the
// conversion in timeline.cpp and the conversion cache in memory_accounting.cpp are all gated
// on the policy), so points that differ only in those share one baseline.
std::string baseline_key(const workload::TraceBenchInputs& in, const sim::RunOptions& o) {
    std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}", in.batch, in.seq_len, in.gen_len, int(o.placement.policy),
                                  o.weight_base_shared, o.record_events, o.record_decode_steps);
    if (o.placement.policy == sim::Policy::NPU_ONLY) return key;
    for (int l : o.placement.npu_only_layers) key += fmt::format("|{}", l);
    return key + fmt::format("|{}{}{}|{}|{}{}|{}|{}", o.placement.prefill_on_npu, o.placement.decode_on_pim,
                             o.placement.attention_on_pim, o.prefetch_depth, o.zero_copy_switch,
                             o.preconvert_first_token, o.cache_limit_mb, o.block_size_kb);
}

}  // namespace

Evaluator::Evaluator(const Space& space, const Candidate& base, Objective objective, uint64_t cache_bytes)
    : space_(space), base_(base), objective_(objective), cache_bytes_(cache_bytes) {}

uint64_t Evaluator::cached_plan_bytes() const {
    uint64_t b = 0;
    for (const auto& [_, e] : setups_) b += e->plan_bytes;
    return b;
}

void Evaluator::drop_oldest() {
    setups_.erase(setup_order_.front());
    setup_order_.pop_front();
}

void Evaluator::trim(const std::string& keep) {
    if (cache_bytes_ == 0) return;
    while (setup_order_.size() > 1 && cached_plan_bytes() - setups_[keep]->plan_bytes > cache_bytes_) {
        if (setup_order_.front() == keep) {  // the one in use stays: drop the next oldest
            setup_order_.pop_front();
            drop_oldest();
            setup_order_.push_front(keep);
        } else {
            drop_oldest();
        }
    }
}

Evaluator::Entry& Evaluator::setup_for(const Candidate& c) {
    // Everything make_hardware_rig and prepare_bench read.
    std::string key = c.in.model + "|" + c.in.pim + "|" + c.in.dispatch + "|" + c.in.baseline + "|" + c.in.target;
    for (const auto& f : config::settings_fields())
        if (f.section == "ascend" || f.dotted() == "runtime.dtype") key.append("|").append(f.show(c.st));
    for (const char* k : {"pim.alignment", "pim.precision", "reorder.block_size_kb", "reorder.target_format",
                          "reorder.index_ratio_limit", "memory.index_granularity"})
        for (const auto& f : config::coop_config_fields())
            if (f.dotted() == k) key.append("|").append(f.show(c.cfg));
    for (const auto& f : config::coop_config_fields())  // the machine and its ranks (ep: the plans)
        if (f.section == "topology") key.append("|").append(f.show(c.cfg));
    key.append(fmt::format("|l1 hit {:.17g}", staging_hit_rate(c.st, c.cfg)));
    if (auto it = setups_.find(key); it != setups_.end()) return *it->second;
    while (setups_.size() >= kMaxCachedSetups) drop_oldest();  // bounded memory: the oldest rig goes
    auto e = std::make_shared<Entry>();
    e->key = key;
    e->setup = workload::prepare_bench(c.st, c.cfg, c.in, false);
    ++rigs_built_;
    setup_order_.push_back(key);
    return *(setups_[key] = e);
}

void Evaluator::set_expert_inputs(Candidate& c) {
    const int ep = int(c.cfg.topology.ep);
    const std::string key = fmt::format("{}|{}", ep, c.st.runtime.dtype);
    auto it = routings_.find(key);
    if (it == routings_.end()) {
        workload::TraceBenchInputs in = c.in;
        workload::set_expert_inputs(in, ep, -1, "", c.st.runtime.dtype);  // a dense model or an ep the experts refuse
        it = routings_.emplace(key, in.routing).first;
    }
    c.in.ep = ep;
    c.in.routing = it->second;
    workload::check_expert_parallel_ranks(ep, c.in.tp, c.in.pp, workload::modelled_npu_count(c.cfg));
}

sim::BenchReport Evaluator::report(const Point& p) {
    Candidate c = space_.apply(base_, p);
    set_expert_inputs(c);
    Entry& e = setup_for(c);
    auto it = e.plans.find(c.in.batch);
    if (it == e.plans.end()) {
        std::pair<sim::Plan, sim::Plan> pl;
        workload::plan_generations(e.setup, c.in, pl.first, pl.second);
        e.plan_bytes += plan_bytes(pl.first) + plan_bytes(pl.second);
        it = e.plans.emplace(c.in.batch, std::move(pl)).first;
        trim(e.key);
    }
    const sim::RunOptions ob = workload::bench_run_options(c.cfg, e.setup.pb, c.in);
    const std::string bkey = baseline_key(c.in, ob);
    auto b = e.baselines.find(bkey);
    if (b == e.baselines.end()) {
        sim::RunReport run = sim::simulate_run(e.setup.shape_b, it->second.first, c.in.seq_len + c.in.gen_len,
                                               c.in.batch, ob, e.setup.rig->hw);
        b = e.baselines.emplace(bkey, std::move(run)).first;
    }
    return workload::finish_bench(c.st, c.cfg, c.in, e.setup, it->second.first, it->second.second, c.in.seq_len, &b->second);
}

PointResult Evaluator::evaluate(const Point& p) {
    PointResult r;
    r.key = space_.key(p);
    r.values = space_.values_json(p);
    sim::BenchReport b;
    try {
        b = report(p);
    } catch (const Error& e) {
        r.error = e.what();
        return r;
    }
    r.ok = true;
    r.tbt_ms = b.target.tbt_mean_ns / 1e6;
    r.ttft_ms = b.target.timeline.ttft_ns / 1e6;
    r.baseline_tbt_ms = b.baseline.tbt_mean_ns / 1e6;
    r.baseline_ttft_ms = b.baseline.timeline.ttft_ns / 1e6;
    r.memory_bytes = double(b.target.memory.total_bytes());
    r.decode_energy_per_token_pj = b.target.decode_energy_per_token_pj;
    r.tokens_per_s = b.target.tbt_mean_ns > 0 ? double(b.batch) * 1e9 / b.target.tbt_mean_ns : 0;
    r.feasible = true;
    r.verdicts = b.verdicts;
    for (const auto& v : b.verdicts) {
        r.feasible = r.feasible && v.met;
        if (!v.met) {  // relative miss: below a minimum, or at/above a maximum
            const double scale = std::max(1e-9, std::fabs(v.threshold));
            r.violation += v.name == "tbt_reduction" ? (v.threshold - v.value) / scale
                                                     : (v.value - v.threshold) / scale + 1e-6;
        }
    }
    switch (objective_) {
        case Objective::TBT: r.objective = r.tbt_ms; break;
        case Objective::ENERGY: r.objective = r.decode_energy_per_token_pj; break;
        case Objective::TOKENS_PER_S: r.objective = -r.tokens_per_s; break;
    }
    return r;
}

}  // namespace duet::tune
