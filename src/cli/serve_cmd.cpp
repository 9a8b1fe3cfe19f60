// `duet serve`: the OpenAI-compatible HTTP API over one model, with continuous batching, a
// paged + prefix-shared KV cache, persistent tasks and the modelled NPU/PIM timings of every
// response (docs/server.md).
#include <csignal>
#include <cstdio>
#include <cctype>
#include <filesystem>
#include <limits>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/warmup_flags.h"
#include "config/coop_config.h"
#include "config/runtime_knobs.h"
#include "config/settings.h"
#include "core/error.h"
#include "core/log.h"
#include "core/memory_info.h"
#include "model/chat_template.h"
#include "parallel/communicator.h"
#include "runtime/batcher.h"
#include "runtime/model.h"
#include "runtime/tp_rank.h"
#include "server/api_error.h"
#include "server/http_server.h"
#include "server/task_kinds.h"
#include "server/task_service.h"
#include "server/task_store.h"
#include "server/timings_cache.h"
#include "tune/memory_estimate.h"
#include "workload/ctx_check.h"
#include "workload/knob_effects.h"
#include "workload/modelled_machine.h"
#include "workload/serve_twin.h"
#include "workload/trace_bench.h"

namespace duet::cli {
namespace {

struct ServeArgs {
    std::string kv_type = "f16";
    std::string model_path, settings_path, config_path, host = "127.0.0.1", tasks_db = "duet-tasks.db", model_id,
                                                        chat_template;
    int port = 8080;
    int64_t max_schema_work = int64_t(1) << 20;
    int64_t parallel = 4, ctx = 0, queue = 64, max_body_bytes = 1 << 20, kv_blocks = 0, max_connections = 256;
    int64_t max_head_bytes = 32768, max_headers = 100, head_timeout_ms = 10000, idle_timeout_ms = 5000,
            body_timeout_ms = 30000;
    int64_t fault_at_step = -1;
    int64_t max_stored_responses = 1000;
    int64_t task_memory_mb = int64_t(tune::kDefaultMemoryCapBytes >> 20);  // tune/memory_estimate.h
    int64_t admit_window_ms = 0;  // runtime::BatcherOptions::admit_window_us
    std::string request_log;      // runtime::BatcherOptions::request_log
    int threads = 0, tp = 1, pp = 1;
    bool no_auth = false, no_continuous = false, no_prefix_cache = false;
    std::optional<std::string> api_prefix;
    runtime::WarmupOptions warmup;
};

std::atomic<server::HttpServer*> g_server{nullptr};

void on_signal(int) {
    if (auto* s = g_server.load()) s->stop();
}

void serve(const ServeArgs& a, const CLI::App& root) {
    const config::EnvMap env = config::process_env();
    const config::Settings st = config::load_settings(a.settings_path, env, workload::known_soc_names());
    const config::CoopConfig cfg = config::load_coop_config(a.config_path, env);
    if (root.get_option("--log-level")->count() == 0) set_log_level(st.runtime.log_level, "settings runtime.log_level");

    server::ServerOptions so;
    so.host = a.host;
    so.port = a.port;
    so.max_body_bytes = size_t(a.max_body_bytes);
    so.max_connections = size_t(a.max_connections);
    so.responses_db = a.tasks_db;  // stored /v1/responses live beside the tasks
    so.max_stored_responses = a.max_stored_responses;
    so.max_schema_work = size_t(a.max_schema_work);
    so.max_head_bytes = size_t(a.max_head_bytes);
    so.max_headers = size_t(a.max_headers);
    so.head_timeout_ms = int(a.head_timeout_ms);
    so.idle_timeout_ms = int(a.idle_timeout_ms);
    so.body_timeout_ms = int(a.body_timeout_ms);
    // --api-prefix, else the path of settings api_base (https://host/api -> /api/v1/...)
    so.api_prefix = a.api_prefix ? config::parse_api_base("http://x" + *a.api_prefix).prefix
                                 : config::parse_api_base(st.api.api_base).prefix;
    const std::string key = config::api_key(st.api, env);
    if (key.empty() && !a.no_auth)
        fail("the API key variable {} (settings api.api_key_env) is not set: set it, or start with --no-auth to serve "
             "without authentication", st.api.api_key_env);
    if (!a.no_auth) so.api_key = key;

    const auto comm = parallel::make_world_communicator();
    runtime::check_parallel_world(a.tp, a.pp, *comm);
    const DType kv_type = workload::kv_type_from_flag(a.kv_type);
    auto model = runtime::load_model(a.model_path, a.warmup, a.tp * a.pp > 1);
    if (a.kv_blocks == 0)  // the pool is --parallel x --ctx: check it fits before allocating
        workload::check_ctx(model->hparams(), a.ctx, a.parallel, kv_type, "--ctx", available_memory_bytes());
    else
        workload::check_kv_blocks(model->hparams(), a.kv_blocks, kv_type, available_memory_bytes());
    so.model_id = a.model_id.empty() ? std::filesystem::path(a.model_path).stem().string() : a.model_id;
    if (!a.chat_template.empty())
        so.chat_template = chat_template_flag(a.chat_template);
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
    eo.kv_type = kv_type;
    const config::RuntimeKnobs knobs = workload::runtime_knobs_of(st);
    workload::apply_engine_knobs(knobs, eo);
    runtime::BatcherOptions bo;
    bo.n_parallel = a.parallel;
    bo.max_queue = a.queue;
    bo.continuous = !a.no_continuous;
    bo.prefix_cache = !a.no_prefix_cache;
    bo.fault_at_step = a.fault_at_step;
    bo.admit_window_us = a.admit_window_ms * 1000;
    bo.request_log = a.request_log;
    bo.warmup_rounds = runtime::serve_warm_rounds(a.warmup);  // dummy forwards on the batcher's engine thread
    // Every real step timed on the modelled machine as it runs (workload/serve_twin.h): each
    // response's duet.in_batch. TASK_QUEUE_ENABLE picks the modelled NPU's dispatch mode.
    const std::string dispatch = config::effective_npu_dispatch("", knobs);
    const workload::ServeTwin twin = workload::make_serve_twin(st, cfg, a.model_path, dispatch);
    if (twin.twin)
        bo.on_step = [w = twin.worker](const runtime::StepRecord& r) { w->post(r.arrived, r.step); };
    else
        DUET_LOG_WARN("the modelled twin is off (duet.in_batch gives the reason): {}", twin.unavailable);
    server::Metrics metrics;  // outlives the batcher: its callbacks update it
    server::register_server_metrics(metrics);
    std::unique_ptr<runtime::TpRank> tp;  // --tp or --pp > 1: outlives the batcher, then tells the other ranks to stop
    std::unique_ptr<runtime::Batcher> batcher_ptr;
    if (a.tp == 1 && a.pp == 1) {
        log_warmup(runtime::warm_up(*model, nullptr, a.warmup));
        batcher_ptr = std::make_unique<runtime::Batcher>(model, eo, bo);
    } else {
        // Rank 0 serves and steps the batch; the other ranks run its forwards (runtime/tp_rank.h).
        runtime::WarmupOptions prefault_only = a.warmup;
        prefault_only.n_rounds = 0;  // the batcher's warm forwards run on rank 0, mirrored
        runtime::RankEngine re = runtime::make_rank_engine(model, *comm, a.tp, a.pp, eo);
        log_warmup(runtime::warm_up_rank(*model, re, prefault_only));
        tp = std::move(re.tp);
        if (!tp->leader()) {
            tp->follow(*re.engine);
            return;
        }
        bo.prefix_cache = false;  // a cached prefix is KV the other ranks never computed
        bo.forks = false;         // likewise the shared prompt of n > 1
        batcher_ptr = std::make_unique<runtime::Batcher>(std::move(re.engine), bo);
    }
    runtime::Batcher& batcher = *batcher_ptr;

    server::TaskStore store(a.tasks_db);
    if (store.interrupted_at_open() > 0)
        DUET_LOG_WARN("{}: {} task(s) were unfinished when the server last stopped; marked interrupted", a.tasks_db,
                      store.interrupted_at_open());
    server::TaskService tasks(store);
    const std::string path = a.model_path;
    server::register_task_kinds(tasks, st, cfg, path, uint64_t(a.task_memory_mb) << 20);

    // The modelled NPU-only and NPU+PIM timings of a request of this size on the served model,
    // computed once per size (server/timings_cache.h), and of each request in its real batch.
    server::ModelledTimings timings;
    timings.in_batch = [twin](int64_t id) { return workload::in_batch_json(twin, id); };
    timings.by_size = server::memoise_timings([st, cfg, path, dispatch](int64_t n_prompt, int64_t n_gen) -> nlohmann::json {
        workload::TraceBenchInputs in;
        in.model = path;
        in.dispatch = dispatch;
        in.seq_len = std::max<int64_t>(1, n_prompt);
        in.gen_len = std::max<int64_t>(1, n_gen);
        try {
            const sim::BenchReport r = workload::run_trace_bench(st, cfg, in);
            auto run = [](const sim::RunReport& x) {
                return nlohmann::json{{"policy", x.policy},
                                      {"ttft_ms", x.timeline.ttft_ns / 1e6},
                                      {"tbt_ms", x.tbt_mean_ns / 1e6},
                                      {"decode_energy_per_token_pj", x.decode_energy_per_token_pj}};
            };
            return {{"npu", r.npu}, {"pim", r.pim}, {"baseline", run(r.baseline)}, {"target", run(r.target)}};
        } catch (const Error& e) {
            return {{"error", e.what()}};
        }
    });

    server::HttpServer http(so, batcher, tasks, metrics, timings);
    http.bind();
    const std::string tp_note = !tp           ? ""
                                 : a.pp > 1 ? fmt::format(", pp {} over {}", a.pp, comm->kind())
                                            : fmt::format(", tp {} over {}", a.tp, comm->kind());
    std::printf("duet serve: %s on http://%s:%d%s (model id '%s', %lld parallel, ctx %lld, auth %s, tasks %s%s)\n",
                a.model_path.c_str(), a.host.c_str(), http.port(), so.api_prefix.c_str(), so.model_id.c_str(), (long long)a.parallel,
                (long long)batcher.n_ctx(), so.api_key ? ("via " + st.api.api_key_env).c_str() : "off",
                a.tasks_db.c_str(), tp_note.c_str());
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
        "Serve a GGUF model over an OpenAI-compatible HTTP API (chat/completions and responses with SSE\n"
        "streaming, models, tasks, health, Prometheus metrics). The Bearer key comes from the variable named by settings\n"
        "api.api_key_env. Examples:\n"
        "  DUET_API_KEY=secret duet serve -m model.gguf --port 8080 --parallel 4\n"
        "  duet serve -m model.gguf --no-auth --port 0      # any free port, printed at start");
    a->settings_path = default_settings_path();
    a->config_path = default_config_path();
    c->add_option("-m,--model", a->model_path, help::kModelFile)->required();
    text(c, "--settings", a->settings_path, help::kSettings);
    text(c, "--config", a->config_path, help::kConfig);
    text(c, "--host", a->host, "Address to listen on (the loopback only unless you name another, e.g. 0.0.0.0)");
    number(c, "--port", a->port, "Port (0: any free port)", 0, 65535);
    number(c, "--parallel", a->parallel, "Sequences in the running batch at most", int64_t(1), int64_t(256));
    text(c, "--kv-type", a->kv_type, help::kKvType)->transform(dtype_alias("--kv-type", {"int8"}));
    number(c, "--ctx", a->ctx, help::kCtx, int64_t(0),
           kMaxCtx);
    number(c, "--kv-blocks", a->kv_blocks,
           "KV cache pool in blocks of 16 tokens (0: enough for --parallel sequences of --ctx tokens); a prompt the "
           "whole pool cannot hold gets 503",
           int64_t(0), int64_t(1) << 30);
    number(c, "--queue", a->queue, "Waiting requests at most (more get 429)", int64_t(0), int64_t(1) << 20);
    number(c, "--task-memory-mb", a->task_memory_mb,
           "Memory a bench or optimisation task may hold, estimated at submission (more gets 400; docs/server.md)",
           int64_t(128), int64_t(1) << 22);
    number(c, "--admit-window-ms", a->admit_window_ms,
           "When a request finds the engine idle, wait this long for more before the first step (a burst starts "
           "in one step; a lone request's first token comes this much later)",
           int64_t(0), int64_t(1000));
    c->add_option("--request-log", a->request_log,
                  "Append one JSON line per finished request (arrival, prompt and output tokens, latencies): the "
                  "trace `duet bench --workload serving --workload-file` replays (docs/serving.md)");
    number(c, "--threads", a->threads, help::kEngineThreads, 0, int(kMaxThreads));
    number(c, "--tp", a->tp,
           "Tensor-parallel ranks: run as mpirun -np N duet serve --tp N; rank 0 serves HTTP, n = 1 only, no prefix "
           "cache (docs/scale-out.md)",
           1, 1024);
    number(c, "--pp", a->pp,
           "Pipeline stages: run as mpirun -np M duet serve --pp M; rank s runs its layers, rank 0 serves HTTP, n = 1 "
           "only, no prefix cache; not with --tp > 1 (docs/scale-out.md)",
           1, 1024);
    text(c, "--tasks-db", a->tasks_db, "SQLite file of the tasks API and of stored /v1/responses (created 0600)");
    number(c, "--max-schema-work", a->max_schema_work,
           "JSON values compiling one request's schema may copy (resolving $ref with siblings, nullable, allOf); "
           "past it the request gets 400",
           int64_t(1), int64_t(1) << 30);
    number(c, "--max-stored-responses", a->max_stored_responses,
           "Responses kept for GET /v1/responses/{id} and previous_response_id; storing one more deletes the oldest",
           int64_t(1), int64_t(1) << 30);
    text(c, "--model-id", a->model_id, "Model name clients use", DefaultFrom{"the file name without .gguf"});
    text(c, "--chat-template", a->chat_template, help::kChatTemplate, DefaultFrom{"from the file"});
    number(c, "--max-body-bytes", a->max_body_bytes,
           "Larger request bodies get 413 (any Content-Type; counted while reading, chunked bodies too)",
           int64_t(1), int64_t(1) << 30);
    number(c, "--max-connections", a->max_connections,
           "Open connections at most (idle, being read or served); more get 503 and are closed", int64_t(1),
           int64_t(1) << 16);
    number(c, "--max-head-bytes", a->max_head_bytes, "Request line + headers at most, in bytes; more get 431",
           int64_t(1024), int64_t(1) << 20);
    number(c, "--max-headers", a->max_headers, "Header fields per request at most; more get 431", int64_t(8),
           int64_t(10000));
    number(c, "--head-timeout-ms", a->head_timeout_ms,
           "A request's line and headers must arrive within this of its first byte (408 otherwise)", int64_t(100),
           int64_t(600000));
    number(c, "--idle-timeout-ms", a->idle_timeout_ms,
           "A connection that sends no request byte this long (after connecting or between keep-alive requests) is "
           "closed",
           int64_t(100), int64_t(600000));
    number(c, "--body-timeout-ms", a->body_timeout_ms,
           "A request body must arrive within this of its head (408 otherwise)", int64_t(100), int64_t(3600000));
    c->add_option("--api-prefix", a->api_prefix, "Serve the API at PREFIX/v1/... (e.g. /api)")
        ->default_str("the path of settings api.api_base")
        ->check([](const std::string& p) {
            if (p.empty()) return std::string();
            bool ok = p[0] == '/';
            for (char ch : p) ok = ok && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '/' || ch == '-' || ch == '_');
            return ok ? std::string() : "--api-prefix = \"" + p + "\" is not allowed (allowed: a path like /api)";
        });
    add_warmup_flags(c, a->warmup, /*serve_rounds=*/true);
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
