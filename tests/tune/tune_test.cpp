// duet tune's search machinery on the real device models: the space applies the loader's rules,
// the grid's best equals an independent brute force through `duet bench`'s own path (no
// reused rigs, plans or baselines), the results file resumes to the same file, the Pareto front is exactly the
// non-dominated set, and the best point's config.toml loads back to the same knobs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/coop_config.h"
#include "core/error.h"
#include "tune/evaluator.h"
#include "tune/memory_estimate.h"
#include "tune/outputs.h"
#include "tune/tune.h"
#include "workload/trace_bench.h"

using namespace duet;
using namespace duet::tune;

namespace {

TuneOptions small_options() {
    TuneOptions o;
    o.base.in.model = "llama2-7b";
    o.base.in.seq_len = 256;
    o.base.st.runtime.seq_len = 256;
    o.base.in.gen_len = 8;
    o.space.only = {"pim.alignment", "reorder.block_size_kb", "scheduling.zero_copy_switch"};
    o.strategy = Strategy::GRID;
    o.sensitivity = false;
    return o;
}

std::string slurp(const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string tmp(const std::string& name) { return std::string(DUET_BINARY_DIR) + "/tune_test_" + name; }

}  // namespace

TEST(TuneSpace, KeysValuesAndTheLoadersRules) {
    TuneOptions o = small_options();
    const Space s = make_space(o);
    ASSERT_EQ(s.dims().size(), 3u);
    EXPECT_EQ(s.size(), 2 * 6 * 2);
    const Point p = {1, 2, 1};
    EXPECT_EQ(s.key(p), "pim.alignment=256 reorder.block_size_kb=16 scheduling.zero_copy_switch=false");
    Point back;
    ASSERT_TRUE(s.point_from_json(s.values_json(p), back));
    EXPECT_EQ(back, p);
    const Candidate c = s.apply(o.base, p);
    EXPECT_EQ(c.cfg.pim.alignment_bits, 256);
    EXPECT_EQ(c.cfg.pim.layout, config::PimLayout::ROW_MAJOR_256BIT);  // layout follows alignment unless fixed
    EXPECT_FALSE(c.cfg.scheduling.zero_copy_switch);
    EXPECT_EQ(s.base_point(o.base), (Point{0, 2, 0}));  // configs/config.toml defaults: 128, 16, true

    o.space.fixed["pim.layout"] = "\"row_major_128bit\"";
    o.space.fixed["pim.alignment"] = "256";
    const Space f = make_space(o);
    EXPECT_EQ(f.dims().size(), 2u);  // alignment fixed: not swept
    try {
        f.apply(o.base, {0, 0});
        FAIL() << "expected the loader's refusal";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "tune point: key 'pim.layout' = \"row_major_128bit\" needs pim.alignment = 128 (found 256)");
    }
    o.space.fixed = {{"reorder.block_size_kb", "24"}};
    try {
        Candidate c2 = o.base;
        set_knob(c2, "reorder.block_size_kb", "24", "--fix");
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "--fix: key 'reorder.block_size_kb' = 24 is not allowed (allowed: a power of two)");
    }
    o.space.only = {"pim.alignmnet"};
    EXPECT_THROW(make_space(o), Error);
}

TEST(TuneGrid, BestEqualsIndependentBruteForce) {
    TuneOptions o = small_options();
    const TuneResult r = run_tune(o);
    const Space s = make_space(o);
    ASSERT_EQ(r.points.size(), 24u);
    ASSERT_GE(r.best, 0);
    // Independent reference: every point through run_trace_bench (fresh rig each time).
    double best_tbt = 1e300;
    bool any_feasible = false;
    for (size_t i = 0; i < r.points.size(); ++i) {
        Point p;
        ASSERT_TRUE(s.point_from_json(r.points[i].values, p));
        const Candidate c = s.apply(o.base, p);
        const sim::BenchReport b = workload::run_trace_bench(c.st, c.cfg, c.in);
        EXPECT_EQ(r.points[i].tbt_ms, b.target.tbt_mean_ns / 1e6) << r.points[i].key;
        EXPECT_EQ(r.points[i].memory_bytes, double(b.target.memory.total_bytes()));
        EXPECT_EQ(r.points[i].ttft_ms, b.target.timeline.ttft_ns / 1e6);
        // The evaluator simulates each distinct baseline once and shares it across points.
        EXPECT_EQ(r.points[i].baseline_tbt_ms, b.baseline.tbt_mean_ns / 1e6);
        EXPECT_EQ(r.points[i].baseline_ttft_ms, b.baseline.timeline.ttft_ns / 1e6);
        bool met = true;
        for (const auto& v : b.verdicts) met = met && v.met;
        EXPECT_EQ(r.points[i].feasible, met);
        if (met) any_feasible = true, best_tbt = std::min(best_tbt, b.target.tbt_mean_ns / 1e6);
    }
    if (any_feasible) {
        EXPECT_EQ(r.points[size_t(r.best)].tbt_ms, best_tbt);
    }
    EXPECT_LT(r.rigs_built, 24);  // rigs are shared between points (zero_copy_switch does not rebuild)
}

// `duet tune --hw-pairs` kept every rig it built (181 rigs, 5.3 GB for 300 points). Now an
// evaluator keeps at most kMaxCachedSetups; a point whose rig was dropped is rebuilt and gives the
// same numbers.
TEST(TuneEvaluator, KeepsABoundedNumberOfRigsWithTheSameNumbers) {
    TuneOptions o = small_options();
    o.space.hw_pairs = true;
    o.space.only = {"hw.pair"};
    const Space space = make_space(o);
    ASSERT_EQ(space.dims().size(), 1u);
    const size_t n = space.dims()[0].values.size();
    ASSERT_GT(n, Evaluator::kMaxCachedSetups) << "too few hardware pairs to exercise the bound";
    Evaluator ev(space, o.base, Objective::TBT);
    Point p = space.base_point(o.base);
    std::vector<PointResult> first;
    for (size_t i = 0; i < n; ++i) {
        p[0] = int(i);
        first.push_back(ev.evaluate(p));
        EXPECT_LE(ev.cached_setups(), Evaluator::kMaxCachedSetups);
    }
    EXPECT_EQ(size_t(ev.rigs_built()), n);
    p[0] = 0;  // its rig was dropped long ago
    const PointResult again = ev.evaluate(p);
    EXPECT_EQ(again.ok, first[0].ok);
    EXPECT_EQ(again.tbt_ms, first[0].tbt_ms);
    EXPECT_EQ(again.memory_bytes, first[0].memory_bytes);
    EXPECT_EQ(size_t(ev.rigs_built()), n + 1);
}

// A hw.pair row with the bf16-only GDDR6-AiM keeps config.toml's precision = "auto", so the bench
// picks bf16 for it and the PIM runs the decode GEMVs (the row used to force f16 from the f16
// runtime dtype: the AiM then ran nothing and the target equalled the NPU-only baseline).
TEST(TuneSpace, HwPairRowsKeepAutoPrecision) {
    TuneOptions o = small_options();
    o.space.hw_pairs = true;
    o.space.only = {"hw.pair"};
    ASSERT_EQ(o.base.cfg.pim.precision, config::PimPrecision::AUTO);
    ASSERT_EQ(o.base.st.runtime.dtype, "f16");  // configs/settings.json's "float16", read as f16
    const Space space = make_space(o);
    const auto& vals = space.dims()[0].values;
    const auto it = std::find(vals.begin(), vals.end(), "\"Ascend910B4+pim_gddr6_aim\"");
    ASSERT_NE(it, vals.end());
    const Point p = {int(it - vals.begin())};
    const Candidate c = space.apply(o.base, p);
    EXPECT_EQ(c.cfg.pim.precision, config::PimPrecision::AUTO);
    Evaluator ev(space, o.base, Objective::TBT);
    const sim::BenchReport r = ev.report(p);
    ASSERT_TRUE(r.pim_precision.is_object());
    EXPECT_EQ(r.pim_precision.value("configured", ""), "auto");
    EXPECT_EQ(r.pim_precision.value("precision", ""), "bf16");
    EXPECT_TRUE(r.pim_precision.value("pim_supports", false));
    EXPECT_GT(r.target.timeline.decode.pim().ops, 0);  // the AiM serves the decode GEMVs
    const PointResult pr = ev.evaluate(p);
    ASSERT_TRUE(pr.ok) << pr.error;
    EXPECT_NE(pr.tbt_ms, pr.baseline_tbt_ms);  // (one AiM chip is slower than the 910B4's HBM: not equal, not less)

    // An explicit fp16 still follows the runtime dtype (and the AiM, fp16-less, runs nothing).
    Candidate fp16 = o.base;
    fp16.cfg.pim.precision = config::PimPrecision::FP16;
    EXPECT_EQ(space.apply(fp16, p).cfg.pim.precision, config::PimPrecision::FP16);
}

// The plan bytes of the setups an evaluator keeps besides the one in use stay within its
// cache_bytes (tune/memory_estimate.h gives it what the cap leaves), with the same numbers.
TEST(TuneEvaluator, KeepsItsCachedPlansWithinItsBytes) {
    TuneOptions o = small_options();
    o.space.hw_pairs = true;
    o.space.only = {"hw.pair"};
    const Space space = make_space(o);
    const MemoryEstimate e = plan_memory(o.base.in.model, o.base.st.runtime.dtype, o.base.in.gen_len);
    // records of one plan x gen_len x sizeof(OpRecord), both plans per setup
    EXPECT_EQ(e.plan_bytes, uint64_t(e.records_per_forward) * 8 * sizeof(graph::OpRecord));
    const uint64_t cache_bytes = 3 * e.setup_bytes();  // room for three other setups
    Evaluator bounded(space, o.base, Objective::TBT, cache_bytes), unbounded(space, o.base, Objective::TBT);
    Point p = space.base_point(o.base);
    for (size_t i = 0; i < space.dims()[0].values.size(); ++i) {
        p[0] = int(i);
        const PointResult a = bounded.evaluate(p), b = unbounded.evaluate(p);
        EXPECT_LE(bounded.cached_plan_bytes(), cache_bytes + e.setup_bytes());
        EXPECT_EQ(a.tbt_ms, b.tbt_ms);
        EXPECT_EQ(a.memory_bytes, b.memory_bytes);
    }
    EXPECT_GE(bounded.cached_setups(), 2u);
    EXPECT_LE(bounded.cached_setups(), 4u);
    EXPECT_GT(unbounded.cached_plan_bytes(), cache_bytes + e.setup_bytes());  // the bound did something
}

// A search whose floor (base + every point + one setup per thread) exceeds the cap is refused
// before any point, with the arithmetic.
TEST(TuneMemory, RefusesASearchPastTheCap) {
    TuneOptions o = small_options();
    o.threads = 256;
    o.memory_cap_bytes = uint64_t(256) << 20;
    const MemoryEstimate e = estimate_memory(o, make_space(o));
    EXPECT_EQ(e.points, 24);  // the grid: 2 pim.alignment x 6 reorder.block_size_kb x 2 zero_copy_switch
    EXPECT_EQ(e.floor_bytes(), kBaseBytes + 24 * 3 * kPointBytesPerDim + 256 * 2 * e.plan_bytes);
    try {
        run_tune(o);
        FAIL() << "not refused";
    } catch (const Error& err) {
        const std::string m = err.what();
        EXPECT_EQ(m.rfind("tune of llama2-7b (grid) needs at least ", 0), 0u) << m;
        EXPECT_NE(m.find("more than the cap of 0.25 GiB (--max-memory-mb 256; allowed: a smaller --gen-len"),
                  std::string::npos)
            << m;
    }
}

TEST(TuneAdaptive, DeterministicAndWithinBudget) {
    TuneOptions o = small_options();
    o.space.only.clear();  // the whole default space (millions of points)
    o.strategy = Strategy::ADAPTIVE;
    o.budget = 60;
    o.restarts = 1;
    const TuneResult a = run_tune(o), b = run_tune(o);
    EXPECT_EQ(a.strategy, Strategy::ADAPTIVE);
    EXPECT_GT(a.space_size, 1e6);
    ASSERT_EQ(a.points.size(), b.points.size());
    for (size_t i = 0; i < a.points.size(); ++i) EXPECT_EQ(a.points[i].key, b.points[i].key);
    // The budget may be exceeded by at most one coordinate sweep (the largest dimension).
    EXPECT_LE(int64_t(a.points.size()), o.budget + 6);
    EXPECT_EQ(a.best, b.best);
}

TEST(TuneResults, ResumeWritesTheSameFile) {
    TuneOptions o = small_options();
    o.results_path = tmp("full.jsonl");
    run_tune(o);
    const std::string full = slurp(o.results_path);
    // Interrupted after 5 points, the last line torn.
    std::istringstream in(full);
    std::string line, part;
    for (int i = 0; i < 6 && std::getline(in, line); ++i) part += line + "\n";
    std::getline(in, line);
    part += line.substr(0, line.size() / 2);
    o.results_path = tmp("part.jsonl");
    std::ofstream(o.results_path) << part;
    o.resume = true;
    const TuneResult r = run_tune(o);
    EXPECT_EQ(r.resumed, 5);
    EXPECT_EQ(slurp(o.results_path), full);
    // A different search refuses the file.
    o.base.in.gen_len = 9;
    try {
        run_tune(o);
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), o.results_path +
                                             ": --resume: the file was written by a different search ('gen_len' = 8 "
                                             "there, 9 now); allowed: the same flags, or a new results file");
    }
}

TEST(TunePareto, FrontIsExactlyTheNonDominatedSet) {
    TuneOptions o = small_options();
    const TuneResult r = run_tune(o);
    std::vector<bool> on(r.points.size(), false);
    for (int i : r.pareto) on[size_t(i)] = true;
    auto dominates = [](const PointResult& b, const PointResult& a) {
        return b.tbt_ms <= a.tbt_ms && b.memory_bytes <= a.memory_bytes && b.ttft_ms <= a.ttft_ms &&
               (b.tbt_ms < a.tbt_ms || b.memory_bytes < a.memory_bytes || b.ttft_ms < a.ttft_ms);
    };
    for (size_t i = 0; i < r.points.size(); ++i) {
        if (!r.points[i].ok) continue;
        bool dominated = false, dup_before = false;
        for (size_t j = 0; j < r.points.size(); ++j) {
            if (!r.points[j].ok || i == j) continue;
            dominated = dominated || dominates(r.points[j], r.points[i]);
            dup_before = dup_before || (j < i && r.points[j].tbt_ms == r.points[i].tbt_ms &&
                                        r.points[j].memory_bytes == r.points[i].memory_bytes &&
                                        r.points[j].ttft_ms == r.points[i].ttft_ms);
        }
        EXPECT_EQ(on[i], !dominated && !dup_before) << r.points[i].key;
    }
    const std::string svg = pareto_svg(r);
    EXPECT_EQ(svg.rfind("<svg", 0), 0u);
    EXPECT_EQ(pareto_json(r)["points"].size(), r.pareto.size());
}

TEST(TuneOutputs, BestTomlLoadsBackToTheSameKnobs) {
    TuneOptions o = small_options();
    const Space s = make_space(o);
    const Candidate c = s.apply(o.base, {1, 4, 1});
    const std::string path = tmp("best.toml");
    std::ofstream(path) << best_toml(c, "duet bench --config best.toml");
    const config::CoopConfig back = config::load_coop_config(path, {});
    for (const auto& f : config::coop_config_fields()) EXPECT_EQ(f.show(back), f.show(c.cfg)) << f.dotted();
    EXPECT_EQ(reproduce_command(c, "best.toml", o.base.st, "s.json"),
              "duet bench --settings s.json --config best.toml --model llama2-7b --seq-len 256 --gen-len 8 --batch 1 "
              "--tbt-reduction-min 0.8 --ttft-increase-max-ms 20 --memory-increase-max 0.05");
}
