// `duet serve`: the OpenAI-compatible HTTP API over one model, with continuous batching, a
// paged + prefix-shared KV cache, persistent tasks and the modelled NPU/PIM timings of every
// response (docs/server.md).
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <thread>

#include "cli/bench_runner.h"
#include "cli/commands.h"
#include "cli/ctx_check.h"
#include "cli/flags.h"
#include "config/coop_config.h"
#include "config/settings.h"
#include "core/error.h"
#include "core/log.h"
#include "model/chat_template.h"
#include "runtime/batcher.h"
#include "runtime/model.h"
#include "server/api_error.h"
#include "server/http_server.h"
#include "server/task_service.h"
#include "server/task_store.h"

namespace duet::cli {
namespace {

struct ServeArgs {
    std::string model_path, settings_path, config_path, host = "127.0.0.1", tasks_db = "duet-tasks.db", model_id,
                                                        chat_template;
    int port = 8080;
    int64_t parallel = 4, ctx = 0, queue = 64, max_body_bytes = 1 << 20, kv_blocks = 0, max_connections = 256;
    int64_t fault_at_step = -1;
    int threads = 0;
    bool no_auth = false, no_continuous = false, no_prefix_cache = false;
};

std::atomic<server::HttpServer*> g_server{nullptr};

void on_signal(int) {
    if (auto* s = g_server.load()) s->stop();
}

// A JSON value as a config field Value, type-checked; ApiError 400 naming the parameter.
template <class T>
void apply_param(const config::Field<T>& f, const std::string& param, const nlohmann::json& v, T& target) {
    config::Value val;
    val.kind = f.kind;
    bool ok = true;
    switch (f.kind) {
        case config::FieldKind::INT: ok = v.is_number_integer(); if (ok) val.i = v.get<int64_t>(); break;
        case config::FieldKind::DOUBLE: ok = v.is_number(); if (ok) val.d = v.get<double>(); break;
        case config::FieldKind::BOOL: ok = v.is_boolean(); if (ok) val.b = v.get<bool>(); break;
        default: ok = v.is_string(); if (ok) val.s = v.get<std::string>(); break;
    }
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
    TraceBenchInputs in;
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

TaskInputs task_inputs(const nlohmann::json& params, const config::Settings& st0, const config::CoopConfig& cfg0,
                       const std::string& default_model) {
    TaskInputs t{st0, cfg0, {}};
    t.in.model = default_model;
    t.in.gen_len = 256;
    for (const auto& [key, v] : params.items()) {
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
            std::vector<std::string> names = {"model", "gen_len", "baseline", "target"};
            for (const auto& [alias, _] : task_aliases()) names.push_back(alias);
            throw server::ApiError::bad_request(
                fmt::format("unknown task parameter '{}' (allowed: {}, or any settings/config key by its dotted name "
                            "such as 'pim.alignment')", key, config::join_names(names)),
                key);
        }
    }
    t.in.seq_len = t.st.runtime.seq_len;
    t.in.batch = int32_t(t.st.runtime.batch_size);
    return t;
}

nlohmann::json bench_task(const nlohmann::json& params, const config::Settings& st, const config::CoopConfig& cfg,
                          const std::string& default_model, const std::function<void(double)>& progress) {
    TaskInputs t = task_inputs(params, st, cfg, default_model);
    progress(0.1);
    sim::BenchReport r = run_trace_bench(t.st, t.cfg, t.in);
    progress(0.9);
    return sim::report_to_json(r);
}

// npu_pim_gemv_optimize: sweeps the layout knobs that shape the PIM GEMV (alignment, reorder
// block size, prefetch depth) on the trace-only comparison and reports the best decode TBT
// among the points whose verdicts all pass (or the best overall when none does).
nlohmann::json optimize_task(const nlohmann::json& params, const config::Settings& st, const config::CoopConfig& cfg,
                             const std::string& default_model, const std::function<void(double)>& progress,
                             const std::function<bool()>& cancelled) {
    TaskInputs base = task_inputs(params, st, cfg, default_model);
    const std::vector<int64_t> alignments = {128, 256}, blocks = {4, 16, 64}, depths = {1, 4, 8};
    nlohmann::json points = nlohmann::json::array();
    const double total = double(alignments.size() * blocks.size() * depths.size());
    int done = 0;
    nlohmann::json best;
    for (int64_t al : alignments)
        for (int64_t bk : blocks)
            for (int64_t pd : depths) {
                if (cancelled()) return {{"cancelled", true}, {"points", points}};
                TaskInputs t = base;
                t.cfg.pim.alignment_bits = al;
                t.cfg.reorder.block_size_kb = bk;
                t.cfg.reorder.prefetch_depth = pd;
                nlohmann::json p = {{"pim.alignment", al}, {"reorder.block_size_kb", bk}, {"reorder.prefetch_depth", pd}};
                try {
                    sim::BenchReport r = run_trace_bench(t.st, t.cfg, t.in);
                    bool pass = true;
                    for (const auto& v : r.verdicts) pass = pass && v.met;
                    p["tbt_ms"] = r.target.tbt_mean_ns / 1e6;
                    p["ttft_ms"] = r.target.timeline.ttft_ns / 1e6;
                    p["memory_bytes"] = r.target.memory.total_bytes();
                    p["all_verdicts_pass"] = pass;
                    const bool better = best.is_null() || (pass && !best["all_verdicts_pass"].get<bool>()) ||
                                        (pass == best["all_verdicts_pass"].get<bool>() &&
                                         p["tbt_ms"].get<double>() < best["tbt_ms"].get<double>());
                    if (better) best = p;
                } catch (const Error& e) {
                    p["error"] = e.what();
                }
                points.push_back(p);
                progress(double(++done) / total);
            }
    return {{"best", best}, {"points", points}, {"model", base.in.model}, {"seq_len", base.in.seq_len}};
}

void serve(const ServeArgs& a, const CLI::App& root) {
    const config::EnvMap env = config::process_env();
    const config::Settings st = config::load_settings(a.settings_path, env, known_soc_names());
    const config::CoopConfig cfg = config::load_coop_config(a.config_path, env);
    if (root.get_option("--log-level")->count() == 0) set_log_level(st.runtime.log_level, "settings runtime.log_level");

    server::ServerOptions so;
    so.host = a.host;
    so.port = a.port;
    so.max_body_bytes = size_t(a.max_body_bytes);
    so.max_connections = size_t(a.max_connections);
    const std::string key = config::api_key(st.api, env);
    if (key.empty() && !a.no_auth)
        fail("the API key variable {} (settings api.api_key_env) is not set: set it, or start with --no-auth to serve "
             "without authentication", st.api.api_key_env);
    if (!a.no_auth) so.api_key = key;

    auto model = runtime::Model::load(a.model_path);
    if (a.kv_blocks == 0)  // the pool is --parallel x --ctx: check it fits before allocating
        check_ctx(model->hparams(), a.ctx, a.parallel, runtime::EngineOptions{}.kv_type, "--ctx",
                  available_memory_bytes());
    so.model_id = a.model_id.empty() ? std::filesystem::path(a.model_path).stem().string() : a.model_id;
    if (!a.chat_template.empty())
        so.chat_template = model::chat_template_from_name(a.chat_template);
    else if (model->chat_template())
        so.chat_template = *model->chat_template();
    else
        DUET_LOG_WARN("{}: no recognised tokenizer.chat_template; chat requests use chatml (override with --chat-template)",
                      a.model_path);

    runtime::EngineOptions eo;
    eo.n_threads = a.threads;
    eo.n_ctx = a.ctx;
    eo.n_seq_max = a.parallel;
    eo.kv_blocks = a.kv_blocks;
    runtime::BatcherOptions bo;
    bo.n_parallel = a.parallel;
    bo.max_queue = a.queue;
    bo.continuous = !a.no_continuous;
    bo.prefix_cache = !a.no_prefix_cache;
    bo.fault_at_step = a.fault_at_step;
    server::Metrics metrics;  // outlives the batcher: its callbacks update it
    server::register_server_metrics(metrics);
    runtime::Batcher batcher(model, eo, bo);

    server::TaskStore store(a.tasks_db);
    if (store.interrupted_at_open() > 0)
        DUET_LOG_WARN("{}: {} task(s) were unfinished when the server last stopped; marked interrupted", a.tasks_db,
                      store.interrupted_at_open());
    server::TaskService tasks(store);
    const std::string path = a.model_path;
    auto validate = [st, cfg, path](const nlohmann::json& p) {
        TaskInputs t = task_inputs(p, st, cfg, path);
        if (t.in.model != path && !model::find_arch_preset(t.in.model))
            throw server::ApiError::bad_request(
                fmt::format("task parameter 'model' = \"{}\" is not an architecture preset (allowed: {}, or omit it "
                            "for the served model)", t.in.model, model::arch_preset_list()),
                "model");
        return p;
    };
    tasks.register_kind("bench", {validate, [st, cfg, path](const nlohmann::json& p, const auto& progress, const auto&) {
                                      return bench_task(p, st, cfg, path, progress);
                                  }});
    tasks.register_kind("npu_pim_gemv_optimize",
                        {validate, [st, cfg, path](const nlohmann::json& p, const auto& progress, const auto& cancelled) {
                             return optimize_task(p, st, cfg, path, progress, cancelled);
                         }});

    // The modelled NPU-only and NPU+PIM timings of a request of this size on the served model.
    server::ModelledTimings timings = [st, cfg, path](int64_t n_prompt, int64_t n_gen) -> nlohmann::json {
        TraceBenchInputs in;
        in.model = path;
        in.seq_len = std::max<int64_t>(1, n_prompt);
        in.gen_len = std::max<int64_t>(1, n_gen);
        try {
            const sim::BenchReport r = run_trace_bench(st, cfg, in);
            auto run = [](const sim::RunReport& x) {
                return nlohmann::json{{"policy", x.policy},
                                      {"ttft_ms", x.timeline.ttft_ns / 1e6},
                                      {"tbt_ms", x.tbt_mean_ns / 1e6},
                                      {"energy_per_token_pj", x.decode_energy_per_token_pj}};
            };
            return {{"npu", r.npu}, {"pim", r.pim}, {"baseline", run(r.baseline)}, {"target", run(r.target)}};
        } catch (const Error& e) {
            return {{"error", e.what()}};
        }
    };

    server::HttpServer http(so, batcher, tasks, metrics, timings);
    http.bind();
    std::printf("duet serve: %s on http://%s:%d (model id '%s', %lld parallel, ctx %lld, auth %s, tasks %s)\n",
                a.model_path.c_str(), a.host.c_str(), http.port(), so.model_id.c_str(), (long long)a.parallel,
                (long long)batcher.n_ctx(), so.api_key ? ("via " + st.api.api_key_env).c_str() : "off",
                a.tasks_db.c_str());
    std::fflush(stdout);
    g_server.store(&http);
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    http.run();
    g_server.store(nullptr);
}

}  // namespace

void register_serve(CLI::App& app) {
    auto a = std::make_shared<ServeArgs>();
    CLI::App* c = app.add_subcommand(
        "serve",
        "Serve a GGUF model over an OpenAI-compatible HTTP API (chat/completions with SSE streaming, models,\n"
        "tasks, health, Prometheus metrics). The Bearer key comes from the variable named by settings\n"
        "api.api_key_env. Examples:\n"
        "  DUET_API_KEY=secret duet serve -m model.gguf --port 8080 --parallel 4\n"
        "  duet serve -m model.gguf --no-auth --port 0      # any free port, printed at start");
    a->settings_path = std::string(DUET_DEFAULT_CONFIG_DIR) + "/settings.json";
    a->config_path = std::string(DUET_DEFAULT_CONFIG_DIR) + "/config.toml";
    c->add_option("-m,--model", a->model_path, "GGUF model file")->required();
    text(c, "--settings", a->settings_path, "settings.json");
    text(c, "--config", a->config_path, "config.toml");
    text(c, "--host", a->host, "Address to listen on (the loopback only unless you name another, e.g. 0.0.0.0)");
    number(c, "--port", a->port, "Port (0: any free port)", 0, 65535);
    number(c, "--parallel", a->parallel, "Sequences in the running batch at most", int64_t(1), int64_t(256));
    number(c, "--ctx", a->ctx, "Context per sequence in tokens (0: min(training context, 4096))", int64_t(0),
           kMaxCtx);
    number(c, "--kv-blocks", a->kv_blocks,
           "KV cache pool in blocks of 16 tokens (0: enough for --parallel sequences of --ctx tokens); a prompt the "
           "whole pool cannot hold gets 503",
           int64_t(0), int64_t(1) << 30);
    number(c, "--queue", a->queue, "Waiting requests at most (more get 429)", int64_t(0), int64_t(1) << 20);
    number(c, "--threads", a->threads, "Engine threads (0: all)", 0, int(kMaxThreads));
    text(c, "--tasks-db", a->tasks_db, "SQLite file of the tasks API (created 0600)");
    text(c, "--model-id", a->model_id, "Model name clients use", DefaultFrom{"the file name without .gguf"});
    text(c, "--chat-template", a->chat_template, "llama2, llama3, chatml, mistral", DefaultFrom{"from the file"});
    number(c, "--max-body-bytes", a->max_body_bytes,
           "Larger request bodies get 413 (any Content-Type; counted while reading, chunked bodies too)",
           int64_t(1), int64_t(1) << 30);
    number(c, "--max-connections", a->max_connections,
           "Open connections at most (served or waiting for a worker); more get 503 and are closed", int64_t(1),
           int64_t(1) << 16);
    c->add_flag("--no-auth", a->no_auth, "Serve without an API key (refused otherwise when the key variable is unset)");
    c->add_flag("--no-continuous-batching", a->no_continuous, "A batch runs to completion before new requests join");
    c->add_flag("--no-prefix-cache", a->no_prefix_cache, "Do not share KV blocks of common prompt prefixes");
    // Test hook (fault injection, tests/server/server_limits_test.cpp): engine step N throws.
    number(c, "--fault-at-step", a->fault_at_step, "Test only: engine step N fails", int64_t(-1),
           std::numeric_limits<int64_t>::max())
        ->group("");
    c->callback([a, &app] { serve(*a, app); });
}

}  // namespace duet::cli
