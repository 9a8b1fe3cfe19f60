#include "server/task_kinds.h"
#include "config/json_value.h"

#include <fmt/format.h>

#include <map>
#include <optional>

#include "core/error.h"
#include "model/arch_presets.h"
#include "server/api_error.h"
#include "sim/report.h"
#include "tune/memory_estimate.h"
#include "tune/outputs.h"
#include "tune/tune.h"
#include "workload/model_limits.h"
#include "workload/modelled_machine.h"
#include "workload/trace_bench.h"

namespace duet::server {
namespace {

// A JSON value as a config field Value, type-checked; ApiError 400 naming the parameter.
template <class T>
void apply_param(const config::Field<T>& f, const std::string& param, const nlohmann::json& v, T& target) {
    config::Value val;
    const bool ok = config::value_from_json(f.kind, v, val);
    if (!ok)
        throw server::ApiError::bad_request(
            fmt::format("task parameter '{}' has the wrong type (allowed: {})", param,
                        config::describe_allowed(f.kind, f.min, f.max, f.allowed)),
            param);
    const std::string err = config::validate_value(f, val, "task");
    if (!err.empty()) throw server::ApiError::bad_request(err + fmt::format(" [task parameter '{}']", param), param);
    f.set(target, val);
}

// Task parameters: the config.toml / settings.json knobs by their dotted names ("pim.alignment",
// "runtime.seq_len") or the short names of the tasks API; plus gen_len, model, baseline, target.
struct TaskInputs {
    config::Settings st;
    config::CoopConfig cfg;
    workload::TraceBenchInputs in;
};

const std::map<std::string, std::string>& task_aliases() {
    static const std::map<std::string, std::string> a = {
        {"seq_len", "runtime.seq_len"},          {"dtype", "runtime.dtype"},
        {"batch_size", "runtime.batch_size"},    {"soc_version", "ascend.soc_version"},
        {"pim_layout", "pim.layout"},            {"alignment", "pim.alignment"},
        {"precision", "pim.precision"},          {"compute_unit", "pim.compute_unit"},
        {"reorder_block_kb", "reorder.block_size_kb"}, {"index_ratio_limit", "reorder.index_ratio_limit"},
        {"prefetch_depth", "reorder.prefetch_depth"},  {"target_format", "reorder.target_format"},
        {"zero_copy", "scheduling.zero_copy_switch"},  {"preconvert_first_token", "scheduling.preconvert_first_token"},
        {"weight_base_shared", "memory.weight_base_shared"}, {"index_granularity", "memory.index_granularity"},
        {"cache_limit_mb", "memory.cache_limit_mb"},
    };
    return a;
}

bool is_tune_param(const std::string& key) {
    return key == "objective" || key == "strategy" || key == "budget" || key == "hw_pairs";
}

// The knob a payload key names ("pim_layout" -> "pim.layout"), or "" for the other parameters.
std::string knob_of(const std::string& key) {
    if (key == "model" || key == "gen_len" || key == "baseline" || key == "target" || is_tune_param(key) ||
        key == "tbt_reduction_min" || key == "ttft_increase_max_ms" || key == "memory_increase_max")
        return "";
    const auto al = task_aliases().find(key);
    return al != task_aliases().end() ? al->second : key;
}

double threshold_param(const nlohmann::json& v, const std::string& key, double lo, double hi) {
    if (!v.is_number() || v.get<double>() < lo || v.get<double>() > hi)
        throw server::ApiError::bad_request(
            fmt::format("task parameter '{}' = {} is not allowed (allowed: a number from {} to {})", key, v.dump(), lo, hi),
            key);
    return v.get<double>();
}

TaskInputs task_inputs(const nlohmann::json& params, const config::Settings& st0, const config::CoopConfig& cfg0,
                       const std::string& default_model, bool tune_kind) {
    TaskInputs t{st0, cfg0, {}};
    t.in.model = default_model;
    t.in.gen_len = 256;
    for (const auto& [key, v] : params.items()) {
        if (tune_kind && is_tune_param(key)) continue;  // read by optimize_options
        if (key == "tbt_reduction_min") {
            t.in.thresholds.tbt_reduction_min = threshold_param(v, key, 0, 1);
            continue;
        }
        if (key == "ttft_increase_max_ms") {
            t.in.thresholds.ttft_increase_max_ms = threshold_param(v, key, 0, 1e9);
            continue;
        }
        if (key == "memory_increase_max") {
            t.in.thresholds.memory_increase_max = threshold_param(v, key, 0, 1e9);
            continue;
        }
        if (key == "model") {
            if (!v.is_string()) throw server::ApiError::bad_request("task parameter 'model' must be a string", key);
            t.in.model = v.get<std::string>();
            continue;
        }
        if (key == "gen_len") {
            if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 65536)
                throw server::ApiError::bad_request("task parameter 'gen_len' must be an integer from 1 to 65536", key);
            t.in.gen_len = v.get<int64_t>();
            continue;
        }
        if (key == "baseline" || key == "target") {
            if (!v.is_string()) throw server::ApiError::bad_request(fmt::format("task parameter '{}' must be a string", key), key);
            try {
                sim::policy_from_name(v.get<std::string>(), key);
            } catch (const Error& e) {
                throw server::ApiError::bad_request(e.what(), key);
            }
            (key == "baseline" ? t.in.baseline : t.in.target) = v.get<std::string>();
            continue;
        }
        const auto al = task_aliases().find(key);
        const std::string dotted = al != task_aliases().end() ? al->second : key;
        bool found = false;
        for (const auto& f : config::settings_fields())
            if (f.dotted() == dotted) apply_param(f, key, v, t.st), found = true;
        for (const auto& f : config::coop_config_fields())
            if (f.dotted() == dotted) apply_param(f, key, v, t.cfg), found = true;
        if (!found) {
            std::vector<std::string> names = {"model", "gen_len", "baseline", "target", "tbt_reduction_min",
                                              "ttft_increase_max_ms", "memory_increase_max"};
            if (tune_kind) names.insert(names.end(), {"objective", "strategy", "budget", "hw_pairs"});
            for (const auto& [alias, _] : task_aliases()) names.push_back(alias);
            throw server::ApiError::bad_request(
                fmt::format("unknown task parameter '{}' (allowed: {}, or any settings/config key by its dotted name "
                            "such as 'pim.alignment')", key, config::join_names(names)),
                key);
        }
    }
    t.in.seq_len = t.st.runtime.seq_len;
    t.in.batch = int32_t(t.st.runtime.batch_size);
    if (t.cfg.topology.ep > 1) {  // [topology] ep or "topology.ep": `duet bench --ep` (docs/scale-out.md; tune: every point)
        try {
            workload::set_expert_inputs(t.in, int(t.cfg.topology.ep), -1, "", t.st.runtime.dtype);
            workload::check_expert_parallel_ranks(t.in.ep, 1, 1, workload::modelled_npu_count(t.cfg));
        } catch (const Error& e) {
            throw server::ApiError::bad_request(std::string(e.what()) + " [task parameter 'topology.ep']", "topology.ep");
        }
    }
    return t;
}

// The layers of scheduling.npu_only_layers and seq_len + gen_len against the task's model; a 400
// naming the payload key (or the server's file when the payload does not set it).
void check_model_limits(const nlohmann::json& params, const TaskInputs& t) {
    const workload::ModelLimits m = workload::model_limits(t.in.model);
    const std::string layers = "scheduling.npu_only_layers";
    const std::string seq = params.contains("seq_len") ? "seq_len"
                            : params.contains("runtime.seq_len") ? "runtime.seq_len"
                                                                 : "";
    try {
        workload::check_npu_only_layers(m, t.cfg.scheduling.npu_only_layers,
                                        params.contains(layers) ? "task parameter '" + layers + "'"
                                                                : "serve's config.toml: " + layers);
    } catch (const Error& e) {
        throw server::ApiError::bad_request(e.what(), layers);
    }
    try {
        workload::check_context(m, t.in.seq_len, t.in.gen_len,
                                {seq.empty() ? "settings runtime.seq_len" : "task parameter '" + seq + "'", "gen_len",
                                 seq.empty() ? "seq_len" : seq});
    } catch (const Error& e) {
        const std::string param = t.in.gen_len >= m.n_ctx ? "gen_len" : seq.empty() ? "seq_len" : seq;
        throw server::ApiError::bad_request(e.what(), param);
    }
}

using Progress = server::TaskKind::Progress;

// The model a task runs: the payload's, else settings api.model when it is a preset, else the served file.
std::string default_model(const config::Settings& st, const std::string& served_path) {
    return model::find_arch_preset(st.api.model) ? st.api.model : served_path;
}

constexpr const char* kCapName = "duet serve --task-memory-mb";

// duet tune options for an optimisation payload: every knob the payload sends is fixed.
tune::TuneOptions optimize_options(const nlohmann::json& params, const TaskInputs& t, uint64_t memory_cap_bytes) {
    tune::TuneOptions o;
    o.memory_cap_bytes = memory_cap_bytes;
    o.memory_cap_name = kCapName;
    o.memory_knobs = "a smaller gen_len or budget, hw_pairs false, or a fixed runtime.batch_size";
    o.base = {t.st, t.cfg, t.in};
    o.budget = 1000;
    o.max_grid = 2000;
    o.restarts = 2;
    for (const auto& [key, v] : params.items()) {
        const std::string knob = knob_of(key);
        if (!knob.empty()) o.space.fixed[knob] = v.dump();
    }
    try {
        if (params.contains("objective"))
            o.objective = tune::objective_from_name(params["objective"].is_string() ? params["objective"].get<std::string>() : "?");
        if (params.contains("strategy"))
            o.strategy = tune::strategy_from_name(params["strategy"].is_string() ? params["strategy"].get<std::string>() : "?");
    } catch (const Error& e) {
        throw server::ApiError::bad_request(std::string(e.what()) + " [task parameter]",
                                            params.contains("objective") ? "objective" : "strategy");
    }
    if (params.contains("budget")) {
        const auto& b = params["budget"];
        if (!b.is_number_integer() || b.get<int64_t>() < 1 || b.get<int64_t>() > 1000000)
            throw server::ApiError::bad_request("task parameter 'budget' must be an integer from 1 to 1000000", "budget");
        o.budget = b.get<int64_t>();
    }
    if (params.contains("hw_pairs")) {
        if (!params["hw_pairs"].is_boolean())
            throw server::ApiError::bad_request("task parameter 'hw_pairs' must be true or false", "hw_pairs");
        o.space.hw_pairs = params["hw_pairs"].get<bool>();
    }
    o.sensitivity = false;
    return o;
}

nlohmann::json bench_task(const nlohmann::json& params, const config::Settings& st, const config::CoopConfig& cfg,
                          const std::string& model, const Progress& progress) {
    TaskInputs t = task_inputs(params, st, cfg, model, false);
    progress(0.1, nullptr);
    sim::BenchReport r = workload::run_trace_bench(t.st, t.cfg, t.in);
    progress(0.9, nullptr);
    return sim::report_to_json(r);
}

nlohmann::json optimize_task(const nlohmann::json& params, const config::Settings& st, const config::CoopConfig& cfg,
                             const std::string& model, const Progress& progress, const std::function<bool()>& cancelled,
                             uint64_t memory_cap_bytes) {
    TaskInputs t = task_inputs(params, st, cfg, model, true);
    tune::TuneOptions o = optimize_options(params, t, memory_cap_bytes);
    auto on_progress = [&](const tune::TuneProgress& p) {
        nlohmann::json d = {{"points_done", p.done}, {"points_total", p.total}};
        if (p.best && p.best->ok) d["best_so_far"] = tune::point_to_json(*p.best);
        progress(p.total > 0 ? 0.99 * double(p.done) / double(p.total) : 0.0, d);
    };
    tune::TuneResult r = tune::run_tune(o, on_progress, cancelled);
    nlohmann::json out = {{"model", t.in.model}, {"seq_len", t.in.seq_len}, {"gen_len", t.in.gen_len},
                          {"fixed", o.space.fixed}, {"strategy", tune::strategy_name(r.strategy)},
                          {"space_size", r.space_size}, {"points_evaluated", r.points.size()}};
    if (r.cancelled) out["cancelled"] = true;
    if (r.best < 0) {
        out["best"] = nullptr;
        out["error"] = r.points.empty() ? "no point evaluated" : r.points.front().error;
        return out;
    }
    const tune::PointResult& b = r.points[size_t(r.best)];
    const tune::Space space = tune::make_space(o);
    tune::Point bp;
    space.point_from_json(b.values, bp);
    const tune::Candidate best = space.apply(o.base, bp);
    nlohmann::json cfg_json = nlohmann::json::object();
    for (const auto& f : config::coop_config_fields()) cfg_json[f.dotted()] = nlohmann::json::parse(f.show(best.cfg));
    out["best"] = tune::point_to_json(b);
    out["best"]["config"] = cfg_json;
    out["all_verdicts_met"] = b.feasible;
    out["verdicts"] = out["best"]["verdicts"];
    const std::string cmd = tune::reproduce_command(best, "best.toml", st, "settings.json");
    out["config_toml"] = tune::best_toml(best, cmd);
    out["reproduce"] = cmd;
    out["pareto"] = tune::pareto_json(r)["points"];
    return out;
}

}  // namespace

void register_task_kinds(TaskService& tasks, const config::Settings& st, const config::CoopConfig& cfg,
                          const std::string& served_path, uint64_t memory_cap_bytes) {
    const std::string model = default_model(st, served_path);
    auto check_model = [served_path](const TaskInputs& t) {
        if (t.in.model != served_path && !model::find_arch_preset(t.in.model))
            throw server::ApiError::bad_request(
                fmt::format("task parameter 'model' = \"{}\" is not an architecture preset (allowed: {}, or omit it "
                            "for settings api.model or the served model)", t.in.model, model::arch_preset_list()),
                "model");
    };
    // Submission-time validation: the loader's own rules (config::check_coop_config; for the
    // optimisation, the fixed knobs through tune's Space, which applies the same check), and the
    // model's limits (workload/model_limits.h) before anything is built.
    auto validate_bench = [st, cfg, model, check_model, memory_cap_bytes](const nlohmann::json& p) {
        TaskInputs t = task_inputs(p, st, cfg, model, false);
        check_model(t);
        check_model_limits(p, t);
        try {  // one baseline and one target plan
            tune::check_memory(tune::plan_memory(t.in.model, t.st.runtime.dtype, t.in.gen_len), memory_cap_bytes,
                               "a bench task of " + t.in.model, kCapName, "a smaller gen_len or another model");
        } catch (const Error& e) {
            throw server::ApiError::bad_request(e.what(), "gen_len");
        }
        try {
            config::Diagnostics diag;
            config::check_coop_config(t.cfg, "task", diag);
        } catch (const Error& e) {
            throw server::ApiError::bad_request(e.what(), p.contains("alignment") ? "alignment" : "pim_layout");
        }
        return p;
    };
    auto validate_optimize = [st, cfg, model, check_model, memory_cap_bytes](const nlohmann::json& p) {
        TaskInputs t = task_inputs(p, st, cfg, model, true);
        check_model(t);
        check_model_limits(p, t);
        tune::TuneOptions o = optimize_options(p, t, memory_cap_bytes);
        std::optional<tune::Space> space;
        try {
            space.emplace(tune::make_space(o));
            space->apply(o.base, space->base_point(o.base), "task");
        } catch (const Error& e) {
            throw server::ApiError::bad_request(e.what(), "task");
        }
        try {  // the same estimate run_tune refuses with, at submission
            tune::check_memory(tune::estimate_memory(o, *space), o.memory_cap_bytes, "this optimisation task",
                               o.memory_cap_name, o.memory_knobs);
        } catch (const Error& e) {
            throw server::ApiError::bad_request(e.what(), p.contains("budget") ? "budget" : "gen_len");
        }
        return p;
    };
    tasks.register_kind("bench", {validate_bench, [st, cfg, model](const nlohmann::json& p, const Progress& progress,
                                                                    const std::function<bool()>&) {
                                      return bench_task(p, st, cfg, model, progress);
                                  }});
    tasks.register_kind("npu_pim_gemv_optimize",
                        {validate_optimize, [st, cfg, model, memory_cap_bytes](const nlohmann::json& p,
                                                                               const Progress& progress,
                                                                               const std::function<bool()>& cancelled) {
                             return optimize_task(p, st, cfg, model, progress, cancelled, memory_cap_bytes);
                         }});
}

}  // namespace duet::server
