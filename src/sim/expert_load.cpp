#include "sim/expert_load.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "core/error.h"
#include "graph/parallel.h"
#include "sim/placement.h"
#include "sim/scale_out.h"

namespace duet::sim {

ExpertLoad expert_load(const std::vector<double>& f, int64_t k, double tokens, int64_t first, int64_t count) {
    ExpertLoad l;
    for (int64_t i = first; i < first + count; ++i) {
        const double p = std::min(1.0, double(k) * f[size_t(i)]);
        l.rows.push_back(tokens * p);
        l.active.push_back(p <= 0 ? 0.0 : 1.0 - std::pow(1.0 - p, tokens));
    }
    return l;
}

namespace {

int64_t whole(double x) { return x <= 1e-9 ? 0 : int64_t(std::ceil(x - 1e-6)); }

// A MOE_MATMUL record for `rows` routed rows over `active` experts (rounded up to whole ones).
void set_expert_rows(OpRecord& r, double rows, double active) {
    r.m = whole(rows);
    r.n_expert_active = r.m == 0 ? 0 : std::max<int64_t>(1, whole(active));
    r.weight_bytes = uint64_t(r.n_expert_active) * uint64_t(r.n) * row_bytes(r.weight_dtype, r.k);
    r.in_bytes = 4 * uint64_t(r.m * r.k);
    r.out_bytes = 4 * uint64_t(r.m * r.n);
    r.flops = 2.0 * double(r.m) * double(r.n) * double(r.k);
}

// The record `on_pim` decides on: `group` experts of `rows` rows each.
OpRecord experts_of(const OpRecord& r, int64_t rows, int64_t group) {
    OpRecord g = r;
    set_expert_rows(g, double(rows * group), double(group));
    return g;
}

// One layer of one forward on one rank.
struct LayerLoad {
    ExpertLoad experts;
    double rows = 0, active = 0, share_max = 0;  // share_max: the largest share one rank's experts take
};

LayerLoad layer_load(const ModelShape& s, const ExpertLoadOptions& o, const graph::EpShard& sh, int64_t layer,
                     double tokens) {
    const std::vector<double> f = o.routing->layer(layer, s.n_expert);
    LayerLoad l;
    l.experts = expert_load(f, s.n_expert_used, tokens, sh.experts.begin, sh.experts.count);
    for (size_t i = 0; i < l.experts.rows.size(); ++i) {
        l.rows += l.experts.rows[i];
        l.active += l.experts.active[i];
    }
    for (int q = 0; q < o.ep; ++q) {
        double share = 0;
        for (int64_t i = q * sh.experts.count; i < (q + 1) * sh.experts.count; ++i) share += f[size_t(i)];
        l.share_max = std::max(l.share_max, share);
    }
    return l;
}

// The expert matmul `r` as its NPU group and its PIM group (each expert decided alone).
void split_by_device(const OpRecord& r, const LayerLoad& l, const ExpertOnPim& on_pim, OpTrace& out,
                     RankExpertLoad* count) {
    double rows[2] = {0, 0}, active[2] = {0, 0};
    const int64_t group = std::max<int64_t>(1, whole(l.active));
    for (size_t i = 0; i < l.experts.rows.size(); ++i) {
        const double a = l.experts.active[i];
        if (a <= 0) continue;
        const int g = on_pim(experts_of(r, std::max<int64_t>(1, whole(l.experts.rows[i] / a)), group)) ? 1 : 0;
        rows[g] += l.experts.rows[i];
        active[g] += a;
    }
    for (int g = 0; g < 2; ++g) {
        OpRecord part = r;
        part.expert_group = g == 0 ? graph::ExpertGroup::NPU : graph::ExpertGroup::PIM;
        part.sibling_of_prev = g == 1 || r.sibling_of_prev;
        set_expert_rows(part, rows[g], active[g]);
        out.push_back(part);
    }
    if (count) {
        count->on_npu += active[0];
        count->on_pim += active[1];
    }
}

// The records of forward `fw` re-priced for the rank, appended to `out`.
void apply_forward(const Plan& p, const ForwardSpan& fw, const ModelShape& s, const ExpertLoadOptions& o,
                   const graph::EpShard& sh, const ExpertOnPim& on_pim, OpTrace& out, RankExpertLoad* count) {
    const double tokens = double(fw.n_new) * double(o.seqs_total);
    int64_t cur_layer = -1;
    LayerLoad l;
    for (size_t i = fw.begin; i < fw.end; ++i) {
        OpRecord r = p.ops[i];
        const bool moe = r.kind == OpKind::MOE_MATMUL || r.kind == OpKind::ALL_TO_ALL;
        if (moe && r.layer != cur_layer) {
            l = layer_load(s, o, sh, r.layer, tokens);
            cur_layer = r.layer;
            if (count) {
                count->rows += l.rows;
                count->active += l.active;
                ++count->layers;
            }
        }
        if (r.kind == OpKind::ALL_TO_ALL) {
            // the lowering's rows: the group's tokens x k; the rank dispatches 1/tp of them
            const double own_tokens = double(r.m) / double(s.n_expert_used) / double(o.tp);
            r.m = int64_t(o.ep) * whole(own_tokens * double(s.n_expert_used) * l.share_max);
            r.in_bytes = r.out_bytes = 4 * uint64_t(r.m * r.n);
        } else if (r.kind == OpKind::SWIGLU && i > fw.begin && p.ops[i - 1].kind == OpKind::MOE_MATMUL &&
                   whole(l.rows) != r.m * s.n_expert_used) {  // the rows the rank's experts received
            r.n /= s.n_expert_used;  // one expert's features on this rank (1/tp of them under TP)
            r.m = whole(l.rows);
            r.in_bytes = 8 * uint64_t(r.m * r.n);
            r.out_bytes = 4 * uint64_t(r.m * r.n);
            r.flops = 4.0 * double(r.m) * double(r.n);
        } else if (r.kind == OpKind::MOE_MATMUL) {
            const bool gate = r.role == WeightRole::FFN_GATE_EXPS;
            if (on_pim) {
                split_by_device(r, l, on_pim, out, gate ? count : nullptr);
                continue;
            }
            set_expert_rows(r, l.rows, l.active);
            if (gate && count) count->on_npu += l.active;
        }
        out.push_back(r);
    }
}

}  // namespace

void apply_expert_load(Plan& p, const ModelShape& s, const ExpertLoadOptions& o, int rank, const ExpertOnPim& on_pim,
                       RankExpertLoad* decode) {
    if (!o.routing || !s.is_moe()) return;
    const graph::EpShard sh = graph::ep_shard(s, o.ep, rank);
    size_t last_decode = p.forwards.size();
    for (size_t f = 0; f < p.forwards.size(); ++f)
        if (p.forwards[f].phase == Phase::DECODE) last_decode = f;
    OpTrace out;
    out.reserve(p.ops.size() + p.ops.size() / 8);
    for (size_t f = 0; f < p.forwards.size(); ++f) {
        ForwardSpan& fw = p.forwards[f];
        const size_t begin = out.size();
        apply_forward(p, fw, s, o, sh, on_pim, out, f == last_decode ? decode : nullptr);
        fw.begin = begin;
        fw.end = out.size();
    }
    p.ops = std::move(out);
}

int64_t pim_row_threshold(const OpRecord& r, const ExpertOnPim& on_pim) {
    if (!on_pim) return 1;
    for (int64_t rows = 1; rows <= 256; ++rows)
        if (!on_pim(experts_of(r, rows, std::max<int64_t>(1, r.n_expert_active)))) return rows;
    return -1;
}

namespace {

std::string placement_text(int tp, int ep) {
    if (tp > 1 && ep > tp)
        return fmt::format("whole experts: device e holds experts [e*E/ep, (e+1)*E/ep), attention in {} data-parallel "
                           "groups of {} tensor-parallel devices", ep / tp, tp);
    if (tp > 1 && ep > 1) return "whole experts: device e holds experts [e*E/ep, (e+1)*E/ep), tensor-parallel attention";
    if (tp > 1) return fmt::format("tensor parallel: every device holds 1/{} of every expert's features", tp);
    return "contiguous: device e holds experts [e*E/ep, (e+1)*E/ep)";
}

}  // namespace

nlohmann::json expert_report_json(const ExpertLoadOptions& o, const ModelShape& s,
                                  const std::vector<RankExpertLoad>& ranks, const nlohmann::json& thresholds, int tp) {
    nlohmann::json rows = nlohmann::json::array(), active = nlohmann::json::array(), pim = nlohmann::json::array(),
                   npu = nlohmann::json::array();
    size_t busiest = 0;
    for (size_t r = 0; r < ranks.size(); ++r) {
        const double n = double(std::max<int64_t>(1, ranks[r].layers));
        rows.push_back(ranks[r].rows / n);
        active.push_back(ranks[r].active / n);
        pim.push_back(ranks[r].on_pim / n);
        npu.push_back(ranks[r].on_npu / n);
        if (ranks[r].rows > ranks[busiest].rows + 1e-9) busiest = r;
    }
    return {{"routing", o.routing ? o.routing->source : "uniform"},
            {"model", "expected values per expert: rows T*k*f, active 1-(1-k*f)^T"},
            {"ep", o.ep},
            {"tp", tp},
            {"experts_per_device", s.n_expert / o.ep},
            {"placement", placement_text(tp, o.ep)},
            {"decode_rows_per_layer", rows},
            {"decode_active_experts_per_layer", active},
            {"decode_experts_on_pim_per_layer", pim},
            {"decode_experts_on_npu_per_layer", npu},
            {"busiest_device", busiest},
            {"pim_row_threshold", thresholds}};
}

namespace {

// The thresholds of the decode step's expert matmuls, by role (`on_pim` of rank 0).
nlohmann::json thresholds_json(const Plan& p, const ExpertOnPim& on_pim) {
    nlohmann::json t = nlohmann::json::object();
    if (!on_pim) return t;
    for (const OpRecord& r : p.ops)
        if (r.kind == OpKind::MOE_MATMUL && r.phase == Phase::DECODE && !t.contains(weight_role_name(r.role))) {
            const int64_t rows = pim_row_threshold(r, on_pim);
            t[weight_role_name(r.role)] = rows < 0 ? nlohmann::json(nullptr) : nlohmann::json(rows);
        }
    return t;
}

}  // namespace

Plan plan_with_expert_loads(const Plan& plan, const ModelShape& s, const RunOptions& opts, const SimHardware& hw,
                            nlohmann::json& report) {
    if (!opts.experts.routing || !s.is_moe()) return plan;
    ExpertLoadOptions o = opts.experts;
    o.tp = opts.parallel.tp;
    const int ranks = graph::stage_ranks(opts.parallel.tp, o.ep);
    // rank 0's sub-machine decides (every rank has the same devices, or shares them in turn)
    const std::vector<RankMachine> machines = split_machine(hw, ranks, opts.parallel.pp);
    const Placer placer(opts.placement, machines.front().hw);
    const bool pim = opts.placement.policy != Policy::NPU_ONLY && !machines.front().hw.devices_of(DeviceKind::PIM).empty();
    ExpertOnPim on_pim;
    if (pim) {  // memoised: every forward asks again for the same layers, roles and row counts
        auto seen = std::make_shared<std::map<std::vector<int64_t>, bool>>();
        on_pim = [&placer, seen](const OpRecord& one) {
            const std::vector<int64_t> key = {one.layer, int64_t(one.role), int64_t(one.phase), int64_t(one.kind),
                                              one.m, one.k, one.n, one.n_expert_active, int64_t(one.weight_dtype),
                                              int64_t(one.weight_bytes)};
            const auto [it, fresh] = seen->try_emplace(key, false);
            if (fresh) it->second = placer.expert_on_pim(one);
            return it->second;
        };
    }
    std::vector<RankExpertLoad> loads(size_t(o.ep));
    const auto stage = [&](const Plan& in) {
        Plan out = in;
        out.next_stages.clear();
        for (int e = 1; e < o.ep; ++e) {
            Plan r = in;
            r.next_stages.clear();
            apply_expert_load(r, s, o, e, on_pim, &loads[size_t(e)]);
            out.ep_ranks.push_back(std::move(r));
        }
        apply_expert_load(out, s, o, 0, on_pim, &loads[0]);
        return out;
    };
    Plan first = stage(plan);
    for (const Plan& next : plan.next_stages) first.next_stages.push_back(stage(next));
    report = expert_report_json(o, s, loads, thresholds_json(plan, on_pim), opts.parallel.tp);
    return first;
}

}  // namespace duet::sim
