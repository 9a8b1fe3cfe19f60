#pragma once
// `duet tune`: searches the design space (tune/space.h) for the configuration with the best
// objective (decode TBT, decode energy per token, or tokens/s) among those meeting the three
// verdicts of `duet bench` (TBT reduction, TTFT increase, memory increase).
//
// Strategies:
//  - grid: every point, in mixed-radix order (last dimension fastest); chosen by "auto" when
//    the space has at most max_grid points;
//  - adaptive: coordinate descent with restarts. From the base configuration and `restarts`
//    seeded random points it sweeps one dimension at a time (all its values, others held),
//    moves to the best point of the sweep, and repeats until a full pass over the dimensions
//    improves nothing or `budget` new evaluations are spent. Infeasible points are ranked by
//    how far they miss the verdicts, so the descent walks towards the feasible region.
// Afterwards a one-at-a-time sensitivity sweep around the best point (its points also go to
// the results file).
// Deterministic: the same options give the same points in the same order, whether one
// process, threads or MPI ranks evaluate them (tune/executor.h).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tune/evaluator.h"
#include "tune/executor.h"
#include "tune/memory_estimate.h"
#include "tune/space.h"

namespace duet::tune {

enum class Strategy { AUTO, GRID, ADAPTIVE };
Strategy strategy_from_name(const std::string& name);  // auto, grid, adaptive
const char* strategy_name(Strategy s);

struct TuneOptions {
    Candidate base;            // settings + config + bench inputs (model, lengths, thresholds)
    SpaceOptions space;
    Objective objective = Objective::TBT;
    Strategy strategy = Strategy::AUTO;
    int64_t max_grid = 20000;  // auto: grid up to this many points
    int64_t budget = 3000;     // adaptive: new evaluations at most (sensitivity sweep not counted)
    int restarts = 4;          // adaptive: random starting points besides the base
    uint64_t seed = 1;
    bool sensitivity = true;
    std::string results_path;  // "" = no results file
    bool resume = false;
    int threads = 1;           // evaluator threads per process
    // Memory (tune/memory_estimate.h): a search whose floor exceeds the cap is refused before it
    // starts; otherwise the evaluators' setup caches share what is left. 0 = no cap.
    uint64_t memory_cap_bytes = kDefaultMemoryCapBytes;
    std::string memory_cap_name = "--max-memory-mb";  // how the cap is set, for the refusal
    std::string memory_knobs =
        "a smaller --gen-len, --budget, --max-grid or --threads, or fewer runtime.batch_size values";
};

struct TuneProgress {
    int64_t done = 0, total = 0;      // points evaluated (resumed ones included) / planned
    const PointResult* best = nullptr;  // best so far (null before the first)
};

struct SensitivityRow {
    std::string dim, value;
    PointResult result;
};

struct TuneResult {
    Strategy strategy = Strategy::GRID;
    double space_size = 0;
    std::vector<Dimension> dims;
    std::vector<PointResult> points;   // every evaluated point, in evaluation order
    int64_t resumed = 0;               // of which read from the results file
    int best = -1;                     // index into points: best feasible, else closest (-1: none ok)
    std::vector<int> pareto;           // indices: non-dominated in (TBT, memory, TTFT) among ok points
    std::vector<SensitivityRow> sensitivity;
    int ranks = 1, rigs_built = 0;
    bool root = true;                  // false on MPI ranks other than 0 (they print and write nothing)
    bool cancelled = false;
};

// Runs the search. progress is called after every batch (on every rank); cancelled() is polled
// between batches. Throws duet::Error for bad options (unknown keys, unusable base).
TuneResult run_tune(const TuneOptions& opt, const std::function<void(const TuneProgress&)>& progress = {},
                    const std::function<bool()>& cancelled = {});

// Space of a TuneOptions (needs the model's layer count for npu_only_layers values).
Space make_space(const TuneOptions& opt);

// What a search of `space` holds at most (points by strategy, setups by thread) before it runs;
// run_tune refuses it with check_memory when its floor exceeds opt.memory_cap_bytes.
MemoryEstimate estimate_memory(const TuneOptions& opt, const Space& space);

}  // namespace duet::tune
