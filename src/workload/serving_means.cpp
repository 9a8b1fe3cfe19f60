#include "workload/serving_means.h"

#include "sched/block_pool.h"
#include "serving/kv_capacity.h"
#include "serving/serving_run.h"
#include "serving/step_cost.h"
#include "workload/serving_trace.h"
#include "workload/trace_bench.h"

namespace duet::workload {

namespace {

constexpr int64_t kMaxSeqs = 256, kStepTokens = 512;  // duet bench --workload serving's defaults

ServingMeans means_of(const serving::ServingResult& r) {
    ServingMeans m;
    int64_t n_ttft = 0, n_tpot = 0;
    for (const serving::RequestOutcome& o : r.requests) {
        if (o.ttft_ns >= 0) m.ttft_ms += double(o.ttft_ns) / 1e6, ++n_ttft;
        if (o.tpot_ns() >= 0) m.tpot_ms += o.tpot_ns() / 1e6, ++n_tpot;
    }
    m.ttft_ms = n_ttft ? m.ttft_ms / double(n_ttft) : 0;
    m.tpot_ms = n_tpot ? m.tpot_ms / double(n_tpot) : 0;
    return m;
}

}  // namespace

ServingMeans serving_means(const config::Settings& st, const config::CoopConfig& cfg, const TraceBenchInputs& in,
                           double rate_rps, int64_t n_requests) {
    const BenchSetup s = prepare_bench(st, cfg, in, false);
    const sim::RunOptions ro = bench_run_options(cfg, s.pb, in);
    const sim::SimHardware& hw = s.rig->hw;
    const serving::KvCapacity kv = serving::kv_capacity(s.shape_b, ro, hw, kStepTokens);
    serving::StepCostModel cost(s.shape_b, ro, hw);
    sched::BlockPool pool(kv.n_blocks, kv.block_tokens);
    sched::SchedulerOptions so;
    so.n_parallel = kMaxSeqs;
    so.step_token_budget = kStepTokens;
    so.n_ctx = in.seq_len + in.gen_len;  // every request fits; the bound never ends one
    so.prefix_sharing = false;
    ArrivalSpec spec;
    spec.rate_rps = rate_rps;
    const auto reqs = synthetic_requests(spec, n_requests, in.seq_len, in.gen_len);
    const auto timer = [&](const sched::Step& step, int64_t) { return int64_t(cost.step_ns(step)); };
    return means_of(serving::run_serving(reqs, so, pool, timer));
}

}  // namespace duet::workload
