#pragma once
// The modelled time of one serving step: the step's exact mix of prompt chunks and decode
// tokens lowered to operator records and run through the timeline (sim/timeline.h) on the
// modelled machine under one placement policy.
//
// Records of a ragged step (the engine's dispatch emits the same, sim/op_trace.h): the decode
// tokens are one group planned with sim::plan_forward(n_seq = decode sequences, n_past = their
// mean context, 1 token) — attention's KV bytes and FLOPs are linear in each sequence's
// context, so the mean gives their sum — and every prompt chunk is its own group (n_past,
// n_new). The groups' records, node by node of the same graph, merge into one forward: tokens
// (m), activation bytes and FLOPs add; a matrix's weight_bytes are read once for the whole step
// (max), EMBED's and ATTENTION's per-token/per-sequence bytes add; n_seq adds; ATTENTION's n is
// the longest context of any sequence after the step. tests/serving/step_records_test.cpp checks
// these records against the engine's own for a ragged batch. The forward is PREFILL when any chunk brings more than one token (the
// engine's rule), so a mixed step's matmuls are prefill matmuls for the placement policy.
//
// Cache: steps are timed once per composition key, with every length and the number of decode
// sequences rounded to a grid of 8 steps per octave (up to 16 exact; at most 6.25 % off) and
// timed at the rounded values, so the time of a step does not depend on which step came first.
// Decode context is the mean over the decode sequences, rounded the same way. (Rounding the
// decode count too cut the compositions of 2000 requests of llama2-70b at TP 8 from 2771 to 1845,
// wall 23.5 s -> 15.9 s, with the same output tokens/s.)
// Expert parallelism (go.ep ranks, a MoE model): the ranks run data-parallel attention, so a
// step's records are EP rank 0's share of its sequences — ⌈decode/ep⌉ decode sequences and the
// prompt chunks 1, ep+1, 2ep+1, ... in order of size, largest first: the busiest rank's, which
// every rank is priced as (sim/scale_out.h) — while the routed experts of every rank see all the
// step's tokens (sim/expert_load.h with T = the step's tokens over the whole group): a step of
// few tokens gives each expert a row or two (GEMV-like, where PIM pays), a step of many tokens
// gives GEMMs. With go.tp == go.ep (the experts on the tensor-parallel ranks, graph/parallel.h)
// every rank runs every sequence's attention over its heads and its E/ep whole experts' rows of
// all the step's tokens: rank 0's records hold all the step's chunks. With opts.experts.routing set (a MoE model) the expert records are priced from
// the routing and placed per expert, also at ep 1, as `duet bench` prices them.
// At most kMaxCachedSteps compositions are kept (emptied when full: a long-running server's
// twin must not grow; a 10 000-request simulation times about a thousand).
// Thread safety: none (the cache); one per thread.
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "graph/graph.h"
#include "sched/scheduler.h"
#include "sim/hardware.h"
#include "graph/model_shape.h"
#include "sim/op_trace.h"
#include "sim/run_options.h"
#include "sim/timeline_parts.h"

namespace duet::serving {

// The rounding grid of the cache: x itself up to 16, else the nearest of 8 steps per octave.
int64_t length_bucket(int64_t x);

// Records of one forward over `chunks` (n_past, n_new per sequence; n_new = 1 are decode
// tokens) of graph g, merged as the header says.
sim::OpTrace step_records(const graph::Graph& g, const std::vector<sched::Chunk>& chunks);

inline constexpr size_t kMaxCachedSteps = 65536;

class StepCostModel {
public:
    // `go`: the graph's split (tp or ep ranks, FlashComm; go.tp must equal opts.parallel.tp and
    // go.ep opts.experts.ep): every step runs as rank 0's graph with its collectives on the
    // machine's ranks (sim/scale_out.h).
    // go.pp stages (vLLM's virtual engines, serving/serving_cluster.h): a step is one batch through
    // every stage in turn (its time: the forward's latency), and it holds the pipeline's entry for
    // last_issue_ns(): the slowest stage's time, its devices' compute and sends (or the step's host
    // work, when longer), after which another engine's step may enter. Not with go.ep > 1.
    StepCostModel(const graph::ModelShape& shape, const sim::RunOptions& opts, const sim::SimHardware& hw,
                  const graph::GraphOptions& go = {});
    // Modelled time of the step, ns (0 for a step with no chunks).
    double step_ns(const sched::Step& step);
    // Time each device of the machine (SimHardware::devices) computed, summed over the steps
    // step_ns has timed so far (every rank's devices; a cached composition adds its figures again).
    const std::vector<double>& device_busy_ns() const { return busy_ns_; }
    // The pipeline's entry time of the step step_ns last timed (= its time without stages).
    double last_issue_ns() const { return last_issue_ns_; }
    int64_t evaluations() const { return evaluations_; }  // distinct compositions timed
    int64_t lookups() const { return lookups_; }
    int64_t pim_steps() const { return pim_steps_; }  // steps looked up in which a PIM device computed
    // Where the placement's crossover lies: the largest number of decode sequences, each at
    // `context` positions, whose decode-only step still runs a weight matmul on a PIM device,
    // scanning batches 1, 2, ... max_batch (timed on the cache's grid, length_bucket) up to the
    // first that runs none; 0 when one sequence already runs none. Not counted in lookups/pim_steps.
    int64_t last_pim_matmul_batch(int64_t context, int64_t max_batch);
    // Routed-expert rows of the steps looked up, summed over the EP ranks and MoE layers (one per
    // token and expert it picks; 0 without routing), and those computed on PIM.
    double expert_rows() const { return expert_rows_; }
    double expert_rows_on_pim() const { return expert_rows_pim_; }

private:
    using Key = std::vector<int64_t>;
    graph::ModelShape shape_;
    sim::RunOptions opts_;
    graph::GraphOptions go_;
    const sim::SimHardware& hw_;
    std::vector<std::shared_ptr<const graph::Graph>> stages_;  // one graph per pipeline stage
    struct Timed {
        double ns = 0;
        double issue_ns = 0;  // last_issue_ns()
        bool pim = false;  // a PIM device ran operators in the step
        bool pim_matmul = false;  // ... a weight matmul among them
        std::vector<double> busy_ns;  // per device: compute time in the step
        double expert_rows = 0, expert_rows_pim = 0;
    };
    Timed time_step(const std::vector<sched::Chunk>& chunks, sim::Phase phase, int64_t dec_past, int64_t tokens);
    const Timed& timed(const sched::Step& step);  // the cache's entry for the step's composition
    std::map<Key, Timed> cache_;
    sim::detail::CostCache costs_;  // device estimates shared by every step timed
    int64_t evaluations_ = 0, lookups_ = 0, pim_steps_ = 0;
    double last_issue_ns_ = 0;
    std::vector<double> busy_ns_;  // device_busy_ns()
    double expert_rows_ = 0, expert_rows_pim_ = 0;
};

}  // namespace duet::serving
