// `duet tune`: design-space search for the configuration with the best decode TBT (or energy,
// or tokens/s) that meets the three `duet bench` verdicts (src/tune, docs/tune.md).
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "cli/commands.h"
#include "cli/flags.h"
#include "config/coop_config.h"
#include "config/settings.h"
#include "core/error.h"
#include "sim/report_files.h"
#include "tune/outputs.h"
#include "tune/tune.h"
#include "workload/model_limits.h"
#include "workload/modelled_machine.h"

namespace duet::cli {
namespace {

// A path as the reproduce line shows it: relative to the working directory when the path is absolute
// (the default --settings is the build's absolute configs/ folder), so the printed command and
// best.toml carry no machine's folder layout; a relative path stays as given.
std::string shown_path(const std::string& p) {
    const std::filesystem::path path(p);
    if (!path.is_absolute()) return p;
    std::error_code ec;
    const std::filesystem::path cwd = std::filesystem::current_path(ec);
    return ec ? p : path.lexically_proximate(cwd).string();
}

struct TuneArgs {
    std::string settings_path, config_path, model, pim, dispatch, objective = "tbt", strategy = "auto";
    std::string results = "tune-results.jsonl", out, pareto_json, pareto_svg;
    int64_t seq_len = -1, gen_len = 256, max_grid = 20000, budget = 3000;
    int restarts = 4, threads = 1;
    int64_t max_memory_mb = int64_t(tune::kDefaultMemoryCapBytes >> 20);
    uint64_t seed = 1;
    std::vector<std::string> fix, vary, only;
    bool hw_pairs = false, resume = false, no_sensitivity = false, progress = false, quiet = false;
    sim::Thresholds th;
};

std::pair<std::string, std::string> split_kv(const std::string& kv, const char* flag) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) fail("{} '{}' is not KEY=VALUE", flag, kv);
    return {kv.substr(0, eq), kv.substr(eq + 1)};
}

std::string literal(const std::string& v) {  // bare words are strings
    auto j = nlohmann::json::parse(v, nullptr, false);
    return j.is_discarded() ? nlohmann::json(v).dump() : j.dump();
}

void run_tune_cmd(const TuneArgs& a) {
    const auto t0 = std::chrono::steady_clock::now();
    const config::EnvMap env = config::process_env();
    tune::TuneOptions o;
    o.base.st = config::load_settings(a.settings_path, env, workload::known_soc_names());
    o.base.cfg = config::load_coop_config(a.config_path, env);
    const config::Settings file_settings = o.base.st;
    auto& in = o.base.in;
    in.model = a.model.empty() ? o.base.st.api.model : a.model;
    in.seq_len = a.seq_len != -1 ? a.seq_len : o.base.st.runtime.seq_len;
    if (in.seq_len < 1) fail("--seq-len = {} is not allowed (allowed: 1 or more)", in.seq_len);
    if (a.gen_len < 1) fail("--gen-len = {} is not allowed (allowed: 1 or more)", a.gen_len);
    o.base.st.runtime.seq_len = in.seq_len;
    in.gen_len = a.gen_len;
    in.batch = int32_t(o.base.st.runtime.batch_size);
    in.thresholds = a.th;
    o.objective = tune::objective_from_name(a.objective);
    o.strategy = tune::strategy_from_name(a.strategy);
    o.max_grid = a.max_grid;
    o.budget = a.budget;
    o.restarts = a.restarts;
    o.seed = a.seed;
    o.threads = a.threads;
    o.memory_cap_bytes = uint64_t(a.max_memory_mb) << 20;
    o.sensitivity = !a.no_sensitivity;
    o.results_path = a.results;
    o.resume = a.resume;
    o.space.hw_pairs = a.hw_pairs;
    if (!a.pim.empty()) o.space.fixed["hw.pair"] = literal(o.base.st.ascend.soc_version + "+" + a.pim);
    if (!a.dispatch.empty()) o.space.fixed["npu.dispatch"] = literal(a.dispatch);
    for (const auto& kv : a.fix) {
        auto [k, v] = split_kv(kv, "--fix");
        o.space.fixed[k] = literal(v);
    }
    for (const auto& kv : a.vary) {
        auto [k, v] = split_kv(kv, "--vary");
        std::vector<std::string> vals;
        for (size_t p = 0; p <= v.size();) {
            size_t c = v.find(',', p);
            if (c == std::string::npos) c = v.size();
            vals.push_back(literal(v.substr(p, c - p)));
            p = c + 1;
        }
        o.space.values[k] = vals;
    }
    for (const auto& k : a.only) o.space.only.push_back(k);
    // The base against the model before any point (the --fix/--vary values: tune::make_space).
    const workload::ModelLimits limits = workload::model_limits(in.model);
    workload::check_npu_only_layers(limits, o.base.cfg.scheduling.npu_only_layers,
                                    a.config_path + ": scheduling.npu_only_layers");
    if (!o.space.fixed.count("runtime.seq_len") && !o.space.values.count("runtime.seq_len"))
        workload::check_context(limits, in.seq_len, in.gen_len,
                                {a.seq_len != -1 ? "--seq-len" : "settings runtime.seq_len", "--gen-len", ""});
    for (const auto& [k, v] : o.space.fixed) tune::set_knob(o.base, k, v, "--fix");  // refuse bad values now
    for (const auto& [k, vals] : o.space.values)  // each --vary value alone, before the search
        for (const auto& v : vals) {
            auto probe = o.base;
            tune::set_knob(probe, k, v, "--vary");
        }

    const bool bar = a.progress || (!a.quiet && isatty(2));
    tune::TuneResult r = tune::run_tune(o, [&](const tune::TuneProgress& p) {
        if (!bar) return;
        const int filled = p.total > 0 ? int(30 * p.done / p.total) : 0;
        std::string best = p.best && p.best->ok ? fmt::format("best TBT {:.3f} ms{}", p.best->tbt_ms,
                                                              p.best->feasible ? " (all MET)" : " (not all met)")
                                                : "";
        std::fprintf(stderr, "\r[%s%s] %lld/%lld points  %s   ", std::string(size_t(filled), '#').c_str(),
                     std::string(size_t(30 - filled), '.').c_str(), (long long)p.done, (long long)p.total, best.c_str());
        std::fflush(stderr);
    });
    if (bar) std::fprintf(stderr, "\n");
    // every rank computed the same result; only the root prints and writes
    if (!r.root) return;
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("duet tune: %s, %s at seq_len %lld + gen_len %lld; %zu dimensions, %.0f points; strategy %s\n",
                in.model.c_str(), o.base.st.ascend.soc_version.c_str(), (long long)in.seq_len, (long long)in.gen_len,
                r.dims.size(), r.space_size, tune::strategy_name(r.strategy));
    std::printf("evaluated %zu points (%lld from %s) in %.1f s on %d rank(s) x %d thread(s); %d hardware rig(s) built\n",
                r.points.size(), (long long)r.resumed, a.results.empty() ? "-" : a.results.c_str(), wall_s, r.ranks,
                a.threads, r.rigs_built);
    std::fputs(tune::format_best(r, o.objective).c_str(), stdout);
    std::fputs(tune::format_pairs(r).c_str(), stdout);
    std::fputs(tune::format_pareto(r).c_str(), stdout);
    std::fputs(tune::format_sensitivity(r).c_str(), stdout);
    if (!a.results.empty()) std::printf("results: %s\n", a.results.c_str());
    if (!a.pareto_json.empty()) {
        sim::write_file_atomic(a.pareto_json, tune::pareto_json(r).dump(2) + "\n");
        std::printf("pareto json: %s\n", a.pareto_json.c_str());
    }
    if (!a.pareto_svg.empty()) {
        sim::write_file_atomic(a.pareto_svg, tune::pareto_svg(r));
        std::printf("pareto svg: %s\n", a.pareto_svg.c_str());
    }
    if (r.best >= 0 && !a.out.empty()) {
        const tune::Space space = tune::make_space(o);
        tune::Point bp;
        space.point_from_json(r.points[size_t(r.best)].values, bp);
        const tune::Candidate best = space.apply(o.base, bp);
        const std::string cmd = tune::reproduce_command(best, a.out, file_settings, shown_path(a.settings_path));
        sim::write_file_atomic(a.out, tune::best_toml(best, cmd));
        std::printf("best config: %s\nreproduce: %s\n", a.out.c_str(), cmd.c_str());
    }
    if (r.cancelled) fail("tune was interrupted");
    if (r.best < 0 || !r.points[size_t(r.best)].feasible) throw ExitStatus{3};
}

}  // namespace

void register_tune(CLI::App& app) {
    auto a = std::make_shared<TuneArgs>();
    CLI::App* c = app.add_subcommand(
        "tune",
        "Search the configuration space (config.toml [pim] [reorder] [scheduling] [memory] knobs, NPU dispatch\n"
        "mode, batch, per-layer placement, attention on PIM, optionally NPU x PIM preset pairs) for the best\n"
        "decode TBT (or energy, or tokens/s) meeting the three bench verdicts. Grid search for small spaces,\n"
        "coordinate descent with restarts for large ones; every point goes to a JSONL results file that\n"
        "--resume continues. Exit 0: a point meets all targets; 3: none does; 2: error.\n"
        "Under `mpirun -np N duet tune ...` the points are spread over the ranks (same result).\n"
        "Examples:\n"
        "  duet tune --model llama2-7b --seq-len 2048 --out best.toml --pareto-svg pareto.svg\n"
        "  duet tune --only reorder.block_size_kb,reorder.prefetch_depth --fix zero_copy_switch=true\n"
        "  duet tune --hw-pairs --strategy adaptive --budget 5000 --results pairs.jsonl --resume");
    a->settings_path = default_settings_path();
    a->config_path = default_config_path();
    c->add_option("--settings", a->settings_path, help::kSettings)->capture_default_str();
    c->add_option("--config", a->config_path, help::kConfig)->capture_default_str();
    text(c, "--model,-m", a->model, help::kModelAny, DefaultFrom{"settings api.model"});
    number(c, "--seq-len", a->seq_len, "Prompt tokens", int64_t(1), kMaxTokens, DefaultFrom{"settings runtime.seq_len"});
    number(c, "--gen-len", a->gen_len, help::kGenLen, int64_t(1), int64_t(65536));
    text(c, "--pim", a->pim, help::kPim, DefaultFrom{"swept with --hw-pairs, else pim_hbm2_fimdram"});
    text(c, "--npu-dispatch", a->dispatch, help::kNpuDispatch, DefaultFrom{"swept"});
    c->add_option("--objective", a->objective, "tbt, energy (decode pJ/token) or tokens_per_s")->capture_default_str();
    c->add_option("--strategy", a->strategy, "auto, grid or adaptive")->capture_default_str();
    number(c, "--max-grid", a->max_grid, "auto: grid search up to this many points", int64_t(1), int64_t(10000000));
    number(c, "--budget", a->budget, "adaptive: new points at most", int64_t(1), int64_t(10000000));
    number(c, "--restarts", a->restarts, "adaptive: random restarts besides the base point", 0, 1000);
    number(c, "--seed", a->seed, "adaptive: seed of the restarts", uint64_t(0), std::numeric_limits<uint64_t>::max());
    c->add_option("--fix", a->fix, "KEY=VALUE kept fixed (dotted key, e.g. scheduling.zero_copy_switch=true)");
    c->add_option("--vary", a->vary, "KEY=V1,V2,... values tried for a key");
    c->add_option("--only", a->only, "Sweep only these keys (others stay at the base)")->delimiter(',');
    c->add_flag("--hw-pairs", a->hw_pairs, "Also sweep every NPU preset x PIM preset pair");
    c->add_option("--results", a->results, "JSONL file of every point (\"\" = none)")->capture_default_str();
    c->add_flag("--resume", a->resume, "Continue from the points already in --results");
    c->add_option("--out", a->out, "Write the best point as a config.toml");
    c->add_option("--pareto-json", a->pareto_json, "Write the Pareto front as JSON");
    c->add_option("--pareto-svg", a->pareto_svg, "Write the Pareto front as an SVG scatter plot");
    number(c, "--threads", a->threads, "Evaluator threads per process", 1, 256);
    number(c, "--max-memory-mb", a->max_memory_mb, help::kMaxMemoryMb, int64_t(128), int64_t(1) << 22);
    c->add_flag("--no-sensitivity", a->no_sensitivity, "Skip the one-at-a-time sweep around the best point");
    c->add_flag("--progress", a->progress, "Show the progress bar even when stderr is not a terminal");
    c->add_flag("--quiet", a->quiet, "No progress bar");
    number(c, "--tbt-reduction-min", a->th.tbt_reduction_min, "Verdict: required TBT reduction (fraction)", 0.0, 1.0);
    number(c, "--ttft-increase-max-ms", a->th.ttft_increase_max_ms, "Verdict: allowed TTFT increase (ms)", 0.0, 1e6);
    number(c, "--memory-increase-max", a->th.memory_increase_max,
           "Verdict: allowed peak memory increase (fraction, 1 = +100%)", 0.0, 10.0);
    c->callback([a]() { run_tune_cmd(*a); });
}

}  // namespace duet::cli
