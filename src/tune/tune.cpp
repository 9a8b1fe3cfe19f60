#include "tune/tune.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <random>

#include <fmt/format.h>

#include "core/error.h"
#include "tune/results_file.h"
#include "workload/model_limits.h"

namespace duet::tune {

Strategy strategy_from_name(const std::string& name) {
    if (name == "auto") return Strategy::AUTO;
    if (name == "grid") return Strategy::GRID;
    if (name == "adaptive") return Strategy::ADAPTIVE;
    fail("--strategy = \"{}\" is not allowed (allowed: auto, grid, adaptive)", name);
}

const char* strategy_name(Strategy s) {
    switch (s) {
        case Strategy::AUTO: return "auto";
        case Strategy::GRID: return "grid";
        case Strategy::ADAPTIVE: return "adaptive";
    }
    return "?";
}

namespace {

// --fix and --vary values checked against the model before any point is evaluated: layers it has,
// prompts that fit its context (a value past either was modelled silently).
void check_against_model(const SpaceOptions& sp, const Candidate& base, const workload::ModelLimits& m) {
    using Check = std::function<void(const nlohmann::json&, const std::string&)>;
    auto each = [&](const std::string& key, const Check& check) {
        auto value = [](const std::string& literal) { return nlohmann::json::parse(literal, nullptr, false); };
        if (auto it = sp.fixed.find(key); it != sp.fixed.end()) check(value(it->second), "--fix: key '" + key + "'");
        if (auto it = sp.values.find(key); it != sp.values.end())
            for (const std::string& v : it->second) check(value(v), "--vary: key '" + key + "'");
    };
    each("scheduling.npu_only_layers", [&](const nlohmann::json& v, const std::string& where) {
        if (v.is_string()) workload::check_npu_only_layers(m, v.get<std::string>(), where);
    });
    each("runtime.seq_len", [&](const nlohmann::json& v, const std::string& where) {
        if (v.is_number_integer())
            workload::check_context(m, v.get<int64_t>(), base.in.gen_len, {where, "--gen-len", "runtime.seq_len"});
    });
}

}  // namespace

Space make_space(const TuneOptions& opt) {
    const workload::ModelLimits limits = workload::model_limits(opt.base.in.model);
    check_against_model(opt.space, opt.base, limits);
    return Space(opt.space, limits.n_layer);
}

namespace {

// Evaluates through a memo (results file and earlier batches), appends new points to the file
// (root rank only), reports progress.
class Session {
public:
    Session(const TuneOptions& opt, const Space& space, Executor& exec, TuneResult& out,
            const std::function<void(const TuneProgress&)>& progress, const std::function<bool()>& cancelled)
        : space_(space), exec_(exec), out_(out), progress_(progress), cancelled_(cancelled) {
        if (opt.results_path.empty()) return;
        nlohmann::json run = {{"model", opt.base.in.model},
                              {"seq_len", opt.base.in.seq_len},
                              {"gen_len", opt.base.in.gen_len},
                              {"objective", objective_name(opt.objective)},
                              {"tbt_reduction_min", opt.base.in.thresholds.tbt_reduction_min},
                              {"ttft_increase_max_ms", opt.base.in.thresholds.ttft_increase_max_ms},
                              {"memory_increase_max", opt.base.in.thresholds.memory_increase_max},
                              {"strategy", strategy_name(opt.strategy)},
                              {"budget", opt.budget},
                              {"restarts", opt.restarts},
                              {"seed", opt.seed},
                              {"fixed", opt.space.fixed}};
        nlohmann::json dims = nlohmann::json::array();
        for (const auto& d : space.dims()) dims.push_back({{"name", d.name}, {"values", d.values}});
        run["dims"] = dims;
        // Every rank reads the file (for the memo); only the root writes it.
        if (exec.is_root()) {
            file_ = std::make_unique<ResultsFile>(opt.results_path, nlohmann::json{{"schema", kResultsSchema}, {"run", run}},
                                                  opt.resume);
            load(file_->previous());
        } else if (opt.resume) {  // the root checked the header
            load(read_points(opt.results_path));
        }
    }

    void set_total(int64_t total) { total_ = total; }
    bool cancelled() const { return cancelled_ && cancelled_(); }

    // Indices into out.points of the results for `batch`, in order (-1: not evaluated, when
    // cancelled); new points are evaluated in chunks of `chunk`. Indices, not pointers: the
    // points vector grows.
    std::vector<int> eval(const std::vector<Point>& batch, size_t chunk = 256) {
        std::vector<Point> todo;
        std::map<std::string, bool> queued;
        for (const auto& p : batch) {
            const std::string k = space_.key(p);
            if (!memo_.count(k) && !queued.count(k)) todo.push_back(p), queued[k] = true;
        }
        for (size_t i = 0; i < todo.size() && !cancelled(); i += chunk) {
            std::vector<Point> part(todo.begin() + long(i), todo.begin() + long(std::min(todo.size(), i + chunk)));
            for (auto& r : exec_.run(part)) add(std::move(r), true);
            if (file_) file_->flush();
            report();
        }
        std::vector<int> res;
        for (const auto& p : batch) {
            auto it = memo_.find(space_.key(p));
            res.push_back(it == memo_.end() ? -1 : int(it->second));
        }
        return res;
    }
    const PointResult& at(int i) const { return out_.points[size_t(i)]; }
    int64_t done() const { return int64_t(out_.points.size()); }
    int64_t fresh() const { return done() - out_.resumed; }

private:
    std::vector<PointResult> read_points(const std::string& path) {
        std::vector<PointResult> v;
        std::ifstream in(path);
        std::string line;
        bool first = true;
        while (std::getline(in, line)) {
            if (in.eof()) break;
            auto j = nlohmann::json::parse(line, nullptr, false);
            if (j.is_discarded()) break;
            if (!first) v.push_back(point_from_json(j));
            first = false;
        }
        return v;
    }
    void load(const std::vector<PointResult>& prev) {
        for (PointResult r : prev) {
            Point p;
            if (!space_.point_from_json(r.values, p)) continue;
            r.key = space_.key(p);
            add(std::move(r), false);
            ++out_.resumed;
        }
    }
    void add(PointResult r, bool write) {
        if (memo_.count(r.key)) return;
        if (write && file_) file_->append(r, int64_t(out_.points.size()));
        memo_[r.key] = out_.points.size();
        out_.points.push_back(std::move(r));
        const PointResult& x = out_.points.back();
        if (out_.points[size_t(best_)].key != x.key && better(x, out_.points[size_t(best_)])) best_ = int(out_.points.size() - 1);
    }
    void report() {
        if (!progress_) return;
        TuneProgress p;
        p.done = done();
        p.total = std::max(total_, p.done);
        p.best = out_.points.empty() ? nullptr : &out_.points[size_t(best_)];
        progress_(p);
    }

    const Space& space_;
    Executor& exec_;
    TuneResult& out_;
    std::function<void(const TuneProgress&)> progress_;
    std::function<bool()> cancelled_;
    std::unique_ptr<ResultsFile> file_;
    std::map<std::string, size_t> memo_;
    int best_ = 0;
    int64_t total_ = 0;
};

Point point_at(const Space& s, double index) {
    Point p(s.dims().size(), 0);
    for (size_t i = s.dims().size(); i-- > 0;) {
        const double n = double(s.dims()[i].values.size());
        const double q = std::floor(index / n);
        p[i] = int(index - q * n);
        index = q;
    }
    return p;
}

void run_grid(const Space& s, Session& ses) {
    const int64_t n = int64_t(s.size());
    ses.set_total(n);
    const int64_t chunk = 1024;
    for (int64_t i = 0; i < n && !ses.cancelled(); i += chunk) {
        std::vector<Point> batch;
        for (int64_t k = i; k < std::min(n, i + chunk); ++k) batch.push_back(point_at(s, double(k)));
        ses.eval(batch);
    }
}

void run_adaptive(const TuneOptions& opt, const Space& s, const Point& base, Session& ses) {
    ses.set_total(opt.budget);
    std::mt19937_64 rng(opt.seed);
    std::vector<Point> starts = {base};
    for (int r = 0; r < opt.restarts; ++r) {
        Point p(s.dims().size());
        for (size_t i = 0; i < p.size(); ++i) p[i] = int(rng() % s.dims()[i].values.size());
        starts.push_back(p);
    }
    for (const Point& start : starts) {
        Point cur = start;
        int cur_i = ses.eval({cur})[0];
        bool improved = true;
        while (improved && cur_i >= 0 && ses.fresh() < opt.budget && !ses.cancelled()) {
            improved = false;
            for (size_t d = 0; d < s.dims().size() && ses.fresh() < opt.budget && !ses.cancelled(); ++d) {
                std::vector<Point> batch;
                for (size_t v = 0; v < s.dims()[d].values.size(); ++v) {
                    Point p = cur;
                    p[d] = int(v);
                    batch.push_back(p);
                }
                const auto res = ses.eval(batch);
                for (size_t v = 0; v < res.size(); ++v)
                    if (res[v] >= 0 && better(ses.at(res[v]), ses.at(cur_i))) cur = batch[v], cur_i = res[v], improved = true;
            }
        }
        if (ses.fresh() >= opt.budget || ses.cancelled()) break;
    }
}

// Non-dominated ok points in (tbt, memory, ttft); identical triples keep the first.
std::vector<int> pareto_front(const std::vector<PointResult>& pts) {
    std::vector<int> front;
    for (size_t i = 0; i < pts.size(); ++i) {
        const auto& a = pts[i];
        if (!a.ok) continue;
        bool dominated = false;
        for (size_t j = 0; j < pts.size() && !dominated; ++j) {
            const auto& b = pts[j];
            if (i == j || !b.ok) continue;
            const bool le = b.tbt_ms <= a.tbt_ms && b.memory_bytes <= a.memory_bytes && b.ttft_ms <= a.ttft_ms;
            const bool lt = b.tbt_ms < a.tbt_ms || b.memory_bytes < a.memory_bytes || b.ttft_ms < a.ttft_ms;
            dominated = le && (lt || j < i);
        }
        if (!dominated) front.push_back(int(i));
    }
    std::sort(front.begin(), front.end(), [&](int x, int y) { return pts[size_t(x)].tbt_ms < pts[size_t(y)].tbt_ms; });
    return front;
}

}  // namespace

Strategy chosen_strategy(const TuneOptions& opt, const Space& space) {
    if (opt.strategy != Strategy::AUTO) return opt.strategy;
    return space.size() <= double(opt.max_grid) ? Strategy::GRID : Strategy::ADAPTIVE;
}

MemoryEstimate estimate_memory(const TuneOptions& opt, const Space& space) {
    MemoryEstimate e = plan_memory(opt.base.in.model, opt.base.st.runtime.dtype, opt.base.in.gen_len);
    e.threads = std::max(1, opt.threads);
    e.dims = int64_t(space.dims().size());
    int64_t widest = 1, all_values = 0;
    for (const Dimension& d : space.dims()) {
        widest = std::max<int64_t>(widest, int64_t(d.values.size()));
        all_values += int64_t(d.values.size());
        if (d.name == "runtime.batch_size") e.batches = int64_t(d.values.size());
    }
    // grid: every point; adaptive: the budget, the starting points and the last sweep's overshoot
    const double planned = chosen_strategy(opt, space) == Strategy::GRID
                               ? space.size()
                               : double(opt.budget) + double(opt.restarts + 1) + double(widest);
    e.points = int64_t(std::min(planned, 1e15)) + (opt.sensitivity ? all_values : 0);
    return e;
}

TuneResult run_tune(const TuneOptions& opt, const std::function<void(const TuneProgress&)>& progress,
                    const std::function<bool()>& cancelled) {
    if (opt.budget < 1) fail("--budget = {} is not allowed (allowed: 1 or more)", opt.budget);
    if (opt.restarts < 0) fail("--restarts = {} is not allowed (allowed: 0 or more)", opt.restarts);
    const Space space = make_space(opt);
    TuneResult out;
    out.space_size = space.size();
    out.dims = space.dims();
    out.strategy = chosen_strategy(opt, space);
    if (out.strategy == Strategy::GRID && space.size() > 5e7)
        fail("--strategy grid: the space has {:.3g} points (allowed: up to 5e7; use --strategy adaptive or --only/--fix "
             "to shrink it)", space.size());
    const MemoryEstimate mem = estimate_memory(opt, space);
    check_memory(mem, opt.memory_cap_bytes,
                 fmt::format("tune of {} ({})", opt.base.in.model, strategy_name(out.strategy)), opt.memory_cap_name,
                 opt.memory_knobs);
    const uint64_t cache_bytes =
        opt.memory_cap_bytes > 0 ? std::max<uint64_t>(1, mem.cache_bytes_per_thread(opt.memory_cap_bytes)) : 0;
    auto exec = make_executor(space, opt.base, opt.objective, opt.threads, cache_bytes);
    out.ranks = exec->ranks();
    out.root = exec->is_root();
    Session ses(opt, space, *exec, out, progress, cancelled);
    const Point base = space.base_point(opt.base);
    if (out.strategy == Strategy::GRID) run_grid(space, ses);
    else run_adaptive(opt, space, base, ses);
    out.cancelled = ses.cancelled();
    for (size_t i = 0; i < out.points.size(); ++i)
        if (out.points[i].ok && (out.best < 0 || better(out.points[i], out.points[size_t(out.best)]))) out.best = int(i);
    if (opt.sensitivity && out.best >= 0 && !out.cancelled) {
        Point bp;
        space.point_from_json(out.points[size_t(out.best)].values, bp);
        std::vector<Point> batch;
        std::vector<std::pair<std::string, std::string>> labels;
        for (size_t d = 0; d < space.dims().size(); ++d)
            for (size_t v = 0; v < space.dims()[d].values.size(); ++v) {
                Point p = bp;
                p[d] = int(v);
                batch.push_back(p);
                labels.emplace_back(space.dims()[d].name, space.dims()[d].values[v]);
            }
        ses.set_total(ses.done() + int64_t(batch.size()));
        const auto res = ses.eval(batch);
        for (size_t i = 0; i < res.size(); ++i)
            if (res[i] >= 0) out.sensitivity.push_back({labels[i].first, labels[i].second, ses.at(res[i])});
    }
    out.pareto = pareto_front(out.points);
    out.rigs_built = exec->rigs_built();
    return out;
}

}  // namespace duet::tune
