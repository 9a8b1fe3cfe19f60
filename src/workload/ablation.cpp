#include "workload/ablation.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace duet::workload {
namespace {

double ratio(double x, double base) { return base > 0 ? x / base : 1.0; }

RealSwitches real_switches(bool on, std::optional<Optimisation> only = std::nullopt) {
    RealSwitches s;
    auto pick = [&](Optimisation o) { return only ? *only == o : on; };
    s.prefix_reuse = pick(Optimisation::PREFIX_REUSE);
    s.warmup = pick(Optimisation::WARMUP);
    s.fuse = pick(Optimisation::FUSION);
    s.paged_kv = pick(Optimisation::PAGED_KV);
    s.static_plan = pick(Optimisation::STATIC_PLAN);
    s.kv_int8 = pick(Optimisation::KV_INT8);
    return s;
}

ModelledSwitches modelled_switches(bool on, std::optional<Optimisation> only = std::nullopt) {
    ModelledSwitches s;
    auto pick = [&](Optimisation o) { return only ? *only == o : on; };
    s.prefix_reuse = pick(Optimisation::PREFIX_REUSE);
    s.fuse = pick(Optimisation::FUSION);
    s.paged_kv = pick(Optimisation::PAGED_KV);
    s.static_plan = pick(Optimisation::STATIC_PLAN);
    s.kv_int8 = pick(Optimisation::KV_INT8);
    using Q = ModelledSwitches::WeightQuant;
    s.weight_quant = pick(Optimisation::W8A8) ? Q::W8A8 : only && *only == Optimisation::W8A16 ? Q::W8A16 : Q::NONE;
    return s;
}

// Fills ratios against rows[0] (all_off) and the side's verdicts.
void judge(AblationSide& side, const Targets& t) {
    const AblationRow& off = side.rows.front();
    for (AblationRow& r : side.rows) {
        r.ttft_ratio = ratio(r.ttft_mean_ms, off.ttft_mean_ms);
        r.peak_memory_ratio = ratio(double(r.peak_memory_bytes), double(off.peak_memory_bytes));
    }
    const AblationRow& on = side.rows.back();
    side.ttft_ratio = on.ttft_ratio;
    side.peak_memory_ratio = on.peak_memory_ratio;
    side.ttft_met = side.ttft_ratio <= t.ttft_ratio_max;
    side.memory_met = side.peak_memory_ratio <= t.peak_memory_ratio_max;
}

// The call whose TTFT weighs most in a run, as "call i (N prompt tokens, M computed) is X% of the TTFT".
template <class Calls>
std::string heaviest_call(const Calls& calls) {
    double sum = 0;
    size_t best = 0;
    for (size_t i = 0; i < calls.size(); ++i) {
        sum += calls[i].ttft_ms;
        if (calls[i].ttft_ms > calls[best].ttft_ms) best = i;
    }
    const auto& c = calls[best];
    return fmt::format("call {} prefills {} of its {} prompt tokens ({} cached) and is {:.0f}% of the summed TTFT; "
                       "the tokens it must compute bind",
                       best + 1, c.n_prompt - c.n_cached, c.n_prompt, c.n_cached, sum > 0 ? 100 * c.ttft_ms / sum : 0.0);
}

}  // namespace

const char* optimisation_name(Optimisation o) {
    switch (o) {
        case Optimisation::PREFIX_REUSE: return "prefix_reuse";
        case Optimisation::WARMUP: return "warmup";
        case Optimisation::FUSION: return "fusion";
        case Optimisation::PAGED_KV: return "paged_kv";
        case Optimisation::STATIC_PLAN: return "static_plan";
        case Optimisation::KV_INT8: return "kv_int8";
        case Optimisation::W8A16: return "w8a16";
        case Optimisation::W8A8: return "w8a8";
    }
    return "?";
}

const AblationRow& AblationSide::row(const std::string& name) const {
    for (const AblationRow& r : rows)
        if (r.name == name) return r;
    fail("ablation: no row '{}'", name);
}

AblationSide ablate_real(const std::string& model_path, const AgentTrace& trace, const RealOptions& opts,
                         const Targets& targets, int64_t head_dim) {
    AblationSide side;
    const bool int8_kv_ok = head_dim % 32 == 0;
    auto row_of = [&](const std::string& name, const RealSwitches& sw, RealRun* keep = nullptr) {
        const RealRun r = replay_real(model_path, trace, sw, opts);
        if (keep) *keep = r;
        AblationRow row;
        row.name = name;
        row.ttft_mean_ms = r.ttft_mean_ms;
        row.ttft_first_ms = r.ttft_first_ms;
        row.peak_memory_bytes = r.peak_rss_bytes;
        return row;
    };
    side.rows.push_back(row_of("all_off", real_switches(false)));
    for (Optimisation o : kOptimisations) {
        if (o == Optimisation::W8A16 || o == Optimisation::W8A8 || (o == Optimisation::KV_INT8 && !int8_kv_ok)) {
            AblationRow r = side.rows.front();
            r.name = optimisation_name(o);
            r.applies = false;
            r.note = o == Optimisation::KV_INT8
                         ? fmt::format("the int8 KV cache needs head_dim a multiple of 32 (this model: {})", head_dim)
                         : "the engine computes in the file's weight dtype: compare a quantised file (e.g. Q8_0) instead";
            side.rows.push_back(r);
            continue;
        }
        side.rows.push_back(row_of(optimisation_name(o), real_switches(false, o)));
    }
    RealRun on;
    RealSwitches all = real_switches(true);
    all.kv_int8 = int8_kv_ok;
    side.rows.push_back(row_of("all_on", all, &on));
    judge(side, targets);
    if (!side.ttft_met) side.ttft_binding = heaviest_call(on.calls);
    if (!side.memory_met) {
        const double peak = double(side.rows.back().peak_memory_bytes);
        side.memory_binding = fmt::format(
            "the mapped weights ({:.1f} MiB) are {:.0f}% of the all-on peak RSS and the KV pool {:.1f} MiB: no switch of "
            "this engine shrinks the weights (weight quantisation is a file choice: a Q8_0/Q4 GGUF)",
            double(on.file_bytes) / (1 << 20), peak > 0 ? 100 * double(on.file_bytes) / peak : 0.0,
            double(on.kv_pool_bytes) / (1 << 20));
    }
    return side;
}

AblationSide ablate_modelled(const graph::ModelShape& shape, const AgentTrace& trace, const sim::SimHardware& hw,
                             int64_t max_ctx, const std::string& what, const Targets& targets,
                             const sim::RunOptions& base) {
    AblationSide side;
    side.what = what;
    auto row_of = [&](const std::string& name, const ModelledSwitches& sw, ModelledRun* keep = nullptr) {
        const ModelledRun r = replay_modelled(shape, trace, sw, hw, max_ctx, base);
        if (keep) *keep = r;
        AblationRow row;
        row.name = name;
        row.ttft_mean_ms = r.ttft_mean_ms;
        row.ttft_first_ms = r.ttft_first_ms;
        row.peak_memory_bytes = r.peak_memory_bytes;
        return row;
    };
    const bool int8_kv_ok = shape.head_dim % 32 == 0;
    side.rows.push_back(row_of("all_off", modelled_switches(false)));
    for (Optimisation o : kOptimisations) {
        if (o == Optimisation::WARMUP || (o == Optimisation::KV_INT8 && !int8_kv_ok)) {
            AblationRow r = side.rows.front();
            r.name = optimisation_name(o);
            r.applies = false;
            r.note = o == Optimisation::WARMUP
                         ? "the NPU model charges no page faults or first-use preparation: every call is warm"
                         : fmt::format("the int8 KV cache needs head_dim a multiple of 32 (this model: {})", shape.head_dim);
            side.rows.push_back(r);
            continue;
        }
        side.rows.push_back(row_of(optimisation_name(o), modelled_switches(false, o)));
    }
    ModelledRun on;
    ModelledSwitches all = modelled_switches(true);
    all.kv_int8 = int8_kv_ok;
    side.rows.push_back(row_of("all_on", all, &on));
    judge(side, targets);
    if (!side.ttft_met) {
        double busy = 0, launch = 0;
        for (const ModelledCall& c : on.calls) busy += c.prefill_busy_ns, launch += c.prefill_launch_ns;
        side.ttft_binding = busy > 0 && launch > 0.5 * busy
                                ? fmt::format("operator launch/dispatch is {:.0f}% of the all-on NPU prefill time: the "
                                              "prefill is launch-bound, so fewer computed tokens barely move it (a "
                                              "static graph, --npu-dispatch graph, cuts the launch cost)",
                                              100 * launch / busy)
                                : heaviest_call(on.calls);
    }
    if (!side.memory_met) {
        const sim::MemoryBreakdown& m = on.peak;
        const std::pair<const char*, uint64_t> terms[] = {{"weights", m.weights_bytes},
                                                          {"kv_cache", m.kv_cache_bytes},
                                                          {"activations", m.activations_bytes},
                                                          {"workspace", m.workspace_bytes}};
        const auto* top = std::max_element(std::begin(terms), std::end(terms),
                                           [](const auto& a, const auto& b) { return a.second < b.second; });
        side.memory_binding = fmt::format("{} ({:.2f} GiB) are {:.0f}% of the all-on peak of {:.2f} GiB", top->first,
                                          double(top->second) / double(1 << 30),
                                          100 * double(top->second) / double(on.peak_memory_bytes),
                                          double(on.peak_memory_bytes) / double(1 << 30));
    }
    return side;
}

}  // namespace duet::workload
