#include "serving/step_cost.h"

#include <algorithm>
#include <bit>

#include "core/error.h"
#include "graph/parallel.h"
#include "sim/expert_load.h"
#include "sim/placement.h"
#include "sim/planner.h"
#include "sim/scale_out.h"
#include "sim/timeline.h"

namespace duet::serving {

int64_t length_bucket(int64_t x) {
    if (x <= 16) return x;
    const int top = 63 - std::countl_zero(uint64_t(x));  // 2^top <= x < 2^(top+1)
    const int64_t step = int64_t(1) << (top - 3);         // 8 steps per octave
    return (x + step / 2) / step * step;
}

namespace {

void merge_into(sim::OpRecord& a, const sim::OpRecord& b) {
    DUET_CHECK(a.kind == b.kind && a.layer == b.layer && a.role == b.role, "merging records of different nodes");
    a.n_seq += b.n_seq;
    a.m += b.m;
    a.n = std::max(a.n, b.n);
    const bool per_token = a.kind == sim::OpKind::EMBED || a.kind == sim::OpKind::ATTENTION;
    a.weight_bytes = per_token ? a.weight_bytes + b.weight_bytes : std::max(a.weight_bytes, b.weight_bytes);
    a.in_bytes += b.in_bytes;
    a.out_bytes += b.out_bytes;
    a.flops += b.flops;
}

}  // namespace

sim::OpTrace step_records(const graph::Graph& g, const std::vector<sched::Chunk>& chunks) {
    bool prefill = false;
    int64_t n_dec = 0, past_dec = 0;
    for (const sched::Chunk& c : chunks) {
        prefill |= c.n_tokens > 1;
        if (c.n_tokens == 1) ++n_dec, past_dec += c.n_past;
    }
    const sim::Phase phase = prefill ? sim::Phase::PREFILL : sim::Phase::DECODE;
    sim::OpTrace out;
    auto add_group = [&](int32_t n_seq, int64_t n_past, int64_t n_new) {
        sim::OpTrace grp;
        sim::plan_forward(g, n_seq, n_past, n_new, phase, grp);
        if (out.empty()) {
            out = std::move(grp);
            return;
        }
        DUET_CHECK(grp.size() == out.size());
        for (size_t i = 0; i < out.size(); ++i) merge_into(out[i], grp[i]);
    };
    if (n_dec > 0) add_group(int32_t(n_dec), (past_dec + n_dec / 2) / n_dec, 1);
    for (const sched::Chunk& c : chunks)
        if (c.n_tokens > 1) add_group(1, c.n_past, c.n_tokens);
    int64_t longest = 0;  // ATTENTION's n: the longest context after the step, over the real sequences
    for (const sched::Chunk& c : chunks) longest = std::max(longest, c.n_past + c.n_tokens);
    for (sim::OpRecord& r : out) {
        r.phase = phase;
        if (r.kind == sim::OpKind::ATTENTION) r.n = longest;
    }
    return out;
}

namespace {

// EP rank 0's chunks of a step of n_dec decode sequences (context dec_past) and prompt chunks
// `pre` (tokens, context): the header's busiest share of `ep` data-parallel ranks; ep 1 (also
// tensor-parallel attention with expert parallelism: every rank holds every sequence): all of them.
std::vector<sched::Chunk> rank_chunks(int64_t n_dec, int64_t dec_past, std::vector<std::pair<int64_t, int64_t>> pre,
                                      int ep) {
    std::vector<sched::Chunk> chunks;
    for (int64_t i = 0; i < (n_dec + ep - 1) / ep; ++i) chunks.push_back({i, dec_past, 1, true});
    std::sort(pre.begin(), pre.end(), [](const auto& a, const auto& b) { return a > b; });
    for (size_t i = 0; i < pre.size(); i += size_t(ep)) chunks.push_back({0, pre[i].second, pre[i].first, true});
    return chunks;
}

// Rows of the routed experts' gate matmuls in `p` and its EP ranks' plans: all, and on PIM.
void count_expert_rows(const sim::Plan& p, double& rows, double& pim) {
    for (const sim::OpRecord& r : p.ops)
        if (r.kind == sim::OpKind::MOE_MATMUL && r.role == sim::WeightRole::FFN_GATE_EXPS) {
            rows += double(r.m);
            if (r.expert_group == graph::ExpertGroup::PIM) pim += double(r.m);
        }
    for (const sim::Plan& q : p.ep_ranks) count_expert_rows(q, rows, pim);
}

}  // namespace

StepCostModel::StepCostModel(const graph::ModelShape& shape, const sim::RunOptions& opts, const sim::SimHardware& hw,
                             const graph::GraphOptions& go)
    : shape_(shape), opts_(opts), go_(go), hw_(hw), costs_(hw) {
    opts_.record_events = false;
    DUET_CHECK(go_.tp == opts_.parallel.tp, "graph split over {} ranks, run options over {}", go_.tp, opts_.parallel.tp);
    DUET_CHECK(go_.ep == opts_.experts.ep, "experts split over {} ranks, run options over {}", go_.ep, opts_.experts.ep);
    DUET_CHECK(go_.pp == opts_.parallel.pp, "graph in {} stages, run options in {}", go_.pp, opts_.parallel.pp);
    DUET_CHECK(go_.pp == 1 || go_.ep == 1, "pipeline stages with expert parallelism");
    opts_.parallel.micro_batches = 1;  // a step is one batch; the engines overlap steps (header)
    go_.tp_rank = 0;
    go_.ep_rank = 0;
    const bool split = go_.tp > 1 || go_.ep > 1 || go_.pp > 1 || go_.fuse;
    for (int s = 0; s < go_.pp; ++s) {
        go_.pp_stage = s;
        stages_.push_back(
            std::make_shared<const graph::Graph>(split ? graph::build_graph(shape, go_) : graph::build_graph(shape)));
    }
    go_.pp_stage = 0;
}

double StepCostModel::step_ns(const sched::Step& step) {
    last_issue_ns_ = 0;
    if (step.chunks.empty()) return 0;
    const Timed& t = timed(step);
    ++lookups_;
    pim_steps_ += t.pim ? 1 : 0;
    expert_rows_ += t.expert_rows;
    expert_rows_pim_ += t.expert_rows_pim;
    last_issue_ns_ = t.issue_ns;
    busy_ns_.resize(t.busy_ns.size(), 0.0);
    for (size_t d = 0; d < t.busy_ns.size(); ++d) busy_ns_[d] += t.busy_ns[d];
    return t.ns;
}

int64_t StepCostModel::last_pim_matmul_batch(int64_t context, int64_t max_batch) {
    int64_t last = 0;
    for (int64_t b = 1; b <= max_batch; ++b) {  // batches on one grid point share one timing
        sched::Step step;
        for (int64_t i = 0; i < b; ++i) step.chunks.push_back({i, context, 1, true});
        if (!timed(step).pim_matmul) break;
        last = b;
    }
    return last;
}

const StepCostModel::Timed& StepCostModel::timed(const sched::Step& step) {
    // The composition at the grid's values: decode count and mean context, then each prompt
    // chunk's (tokens, context) in a canonical order.
    int64_t n_dec = 0, past_dec = 0;
    std::vector<std::pair<int64_t, int64_t>> pre;
    for (const sched::Chunk& c : step.chunks) {
        if (c.n_tokens == 1) ++n_dec, past_dec += c.n_past;
        else pre.push_back({length_bucket(c.n_tokens), length_bucket(c.n_past)});
    }
    std::sort(pre.begin(), pre.end());
    const int64_t dec_past = n_dec ? length_bucket((past_dec + n_dec / 2) / n_dec) : 0;
    n_dec = length_bucket(n_dec);
    Key key{n_dec, dec_past};
    for (const auto& [n, p] : pre) key.push_back(n), key.push_back(p);
    auto it = cache_.find(key);
    if (it == cache_.end()) {
        int64_t tokens = n_dec;  // over the whole EP group: what the routed experts see
        for (const auto& np : pre) tokens += np.first;
        const sim::Phase phase = pre.empty() ? sim::Phase::DECODE : sim::Phase::PREFILL;
        const int dp_ranks = graph::attention_dp(go_.tp, go_.ep);  // attention groups splitting the sequences
        const Timed t = time_step(rank_chunks(n_dec, dec_past, pre, dp_ranks), phase, dec_past, tokens);
        ++evaluations_;
        if (cache_.size() >= kMaxCachedSteps) cache_.clear();  // a server runs for days (workload/serve_twin.h)
        it = cache_.emplace(std::move(key), t).first;
    }
    return it->second;
}

StepCostModel::Timed StepCostModel::time_step(const std::vector<sched::Chunk>& chunks, sim::Phase phase,
                                              int64_t dec_past, int64_t tokens) {
    const auto stage_plan = [&](const std::shared_ptr<const graph::Graph>& g) {
        sim::Plan p;
        p.graph = g;
        p.ops = step_records(*g, chunks);
        if (go_.flashcomm && go_.tp > 1) sim::apply_flashcomm(p.ops, go_.tp);
        p.forwards.push_back({phase, dec_past, 1, 0, p.ops.size()});
        return p;
    };
    sim::Plan plan = stage_plan(stages_[0]);
    for (size_t s = 1; s < stages_.size(); ++s) plan.next_stages.push_back(stage_plan(stages_[s]));
    sim::RunOptions o = opts_;
    o.experts.seqs_total = int32_t(tokens);  // one token per "sequence" (ForwardSpan::n_new = 1)
    Timed t;
    if (o.experts.routing && shape_.is_moe()) {
        nlohmann::json unused;
        plan = sim::plan_with_expert_loads(plan, shape_, o, hw_, unused);
        count_expert_rows(plan, t.expert_rows, t.expert_rows_pim);
    }
    const sim::Placer placer(o.placement, hw_);
    const sim::Timeline tl = sim::simulate_timeline(shape_, plan, placer, o, hw_, costs_);
    t.ns = phase == sim::Phase::PREFILL ? tl.ttft_ns : tl.tbt_ns.at(0);
    t.pim = tl.prefill.pim().ops + tl.decode.pim().ops > 0;
    t.pim_matmul = tl.pim_matmul_parts > 0;
    for (size_t d = 0; d < tl.prefill.device.size(); ++d)
        t.busy_ns.push_back(tl.prefill.device[d].busy_ns + tl.decode.device[d].busy_ns);
    t.issue_ns = t.ns;
    if (go_.pp > 1) {  // the slowest stage: its devices' compute and sends, or the step's host work
        const sim::PhaseStats& ps = phase == sim::Phase::PREFILL ? tl.prefill : tl.decode;
        t.issue_ns = ps.step_host_ns;
        for (const sim::DeviceStats& d : ps.device) t.issue_ns = std::max(t.issue_ns, d.busy_ns + d.comm_ns);
        t.issue_ns = std::min(t.issue_ns, t.ns);
    }
    return t;
}

}  // namespace duet::serving
