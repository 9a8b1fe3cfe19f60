// Client side of the API channel: `duet ping` (is the endpoint there, is the key right, does it
// know the model) and `duet task submit|status|wait|list` (optimisation and bench tasks).
// Both read settings.json's api section: api_base, api_key_env, timeout_ms, max_retries, model.
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <thread>

#include "cli/commands.h"
#include "cli/flags.h"
#include "config/coop_config.h"
#include "config/settings.h"
#include "core/error.h"

namespace duet::cli {
namespace {

using nlohmann::json;

struct ClientArgs {
    std::string settings_path, config_path;
};

struct Endpoint {
    config::ApiSettings api;
    std::string key;
    std::string prefix;  // api_base's path ("/api"): every request goes to prefix + "/v1/..." 
    std::unique_ptr<httplib::Client> http;
};

Endpoint connect(const ClientArgs& a) {
    const config::EnvMap env = config::process_env();
    Endpoint e;
    e.api = config::load_settings(a.settings_path, env, {}).api;
    e.key = config::api_key(e.api, env);
    const config::ApiBase base = config::parse_api_base(e.api.api_base);
    e.prefix = base.prefix;
    e.http = std::make_unique<httplib::Client>(base.origin);
    if (!e.http->is_valid()) fail("settings api.api_base = \"{}\" is not a usable URL", e.api.api_base);
    const auto ms = std::chrono::milliseconds(e.api.timeout_ms);
    e.http->set_connection_timeout(ms);
    e.http->set_read_timeout(ms);
    e.http->set_write_timeout(ms);
    if (!e.key.empty()) e.http->set_bearer_token_auth(e.key);
    return e;
}

// One request with max_retries retries on transport errors, 429 and 5xx (backoff 0.2 s, doubling).
httplib::Result send(Endpoint& e, const std::string& method, const std::string& v1_path, const std::string& body = "") {
    const std::string path = e.prefix + v1_path;
    int64_t delay_ms = 200;
    for (int64_t attempt = 0;; ++attempt) {
        httplib::Result r = method == "GET"      ? e.http->Get(path)
                            : method == "DELETE" ? e.http->Delete(path)
                                                 : e.http->Post(path, body, "application/json");
        const bool retry = !r || r->status == 429 || r->status >= 500;
        if (!retry || attempt >= e.api.max_retries) return r;
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
        delay_ms *= 2;
    }
}

std::string error_message(const httplib::Response& r) {
    json j = json::parse(r.body, nullptr, false);
    if (j.is_object() && j.contains("error") && j["error"].contains("message")) return j["error"]["message"];
    return r.body.substr(0, 200);
}

// Turns a failed exchange into the one-line explanation a user needs.
[[noreturn]] void explain_failure(const Endpoint& e, const httplib::Result& r, const std::string& what) {
    if (!r) {
        if (r.error() == httplib::Error::Read || r.error() == httplib::Error::ConnectionTimeout)
            fail("{}: no answer from {} within timeout_ms = {} ({} retries)", what, e.api.api_base, e.api.timeout_ms,
                 e.api.max_retries);
        fail("{}: cannot reach {} ({}; after {} retries)", what, e.api.api_base, httplib::to_string(r.error()),
             e.api.max_retries);
    }
    if (r->status == 401)
        fail("{}: the server at {} refused the API key: the variable {} (settings api.api_key_env) is {}", what,
             e.api.api_base, e.api.api_key_env, e.key.empty() ? "not set" : "set but holds a wrong key");
    fail("{}: HTTP {} from {}: {}", what, r->status, e.api.api_base, error_message(*r));
}

void ping(const ClientArgs& a) {
    Endpoint e = connect(a);
    const json body = {{"model", e.api.model},
                       {"messages", json::array({{{"role", "user"}, {"content", "ping"}}})},
                       {"max_tokens", 1},
                       {"temperature", 0}};
    const auto t0 = std::chrono::steady_clock::now();
    auto r = send(e, "POST", "/v1/chat/completions", body.dump());
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (r && r->status == 404)
        fail("ping: the server at {} does not know the model '{}' (settings api.model): {}", e.api.api_base,
             e.api.model, error_message(*r));
    if (!r || r->status != 200) explain_failure(e, r, "ping");
    std::printf("ok: %s answered for model '%s' in %.1f ms%s\n", e.api.api_base.c_str(), e.api.model.c_str(), ms,
                e.key.empty() ? " (no API key sent)" : "");
}

void print_task(const json& t) {
    std::printf("%s  %-22s %-11s %5.1f%%", t.value("id", "").c_str(), t.value("task", "").c_str(),
                t.value("status", "").c_str(), 100.0 * t.value("progress", 0.0));
    if (t.contains("error") && t["error"].is_string()) std::printf("  %s", t["error"].get<std::string>().c_str());
    std::printf("\n");
}

json get_task(Endpoint& e, const std::string& id) {
    auto r = send(e, "GET", "/v1/tasks/" + id);
    if (r && r->status == 404) fail("task: no task '{}' on {}", id, e.api.api_base);
    if (!r || r->status != 200) explain_failure(e, r, "task status");
    return json::parse(r->body);
}

json wait_task(Endpoint& e, const std::string& id, double poll_s) {
    for (;;) {
        json t = get_task(e, id);
        const std::string st = t.value("status", "");
        const double p = t.value("progress", 0.0);
        const int filled = int(p * 30);
        std::fprintf(stderr, "\r[%s%s] %5.1f%% %-11s", std::string(size_t(filled), '#').c_str(),
                     std::string(size_t(30 - filled), '.').c_str(), 100 * p, st.c_str());
        std::fflush(stderr);
        if (st != "queued" && st != "running") {
            std::fprintf(stderr, "\n");
            return t;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(int64_t(poll_s * 1000)));
    }
}

void finish_wait(const json& t, const std::string& output) {
    print_task(t);
    if (t.value("status", "") != "done") fail("task {} ended {}", t.value("id", ""), t.value("status", ""));
    const std::string result = t["result"].dump(2) + "\n";
    if (output.empty()) {
        std::fputs(result.c_str(), stdout);
        return;
    }
    const std::string tmp = output + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) fail("{}: cannot write", output);
    const bool ok = std::fwrite(result.data(), 1, result.size(), f) == result.size();
    if (std::fclose(f) != 0 || !ok || std::rename(tmp.c_str(), output.c_str()) != 0) fail("{}: cannot write", output);
    std::printf("result: %s\n", output.c_str());
}

}  // namespace

void register_client_commands(CLI::App& app) {
    auto a = std::make_shared<ClientArgs>();
    a->settings_path = default_settings_path();
    a->config_path = default_config_path();

    CLI::App* p = app.add_subcommand(
        "ping",
        "Send one tiny chat request to settings api.api_base with the key from api.api_key_env and api.model;\n"
        "explains a missing/wrong key (401), an unknown model (404) or an unreachable address.\n"
        "Example:\n  DUET_API_KEY=secret duet ping --settings configs/settings.json");
    p->add_option("--settings", a->settings_path, help::kSettings)->capture_default_str();
    p->callback([a] { ping(*a); });

    CLI::App* t = app.add_subcommand(
        "task",
        "Submit and follow optimisation / bench tasks on a duet server (settings api section).\n"
        "Examples:\n  duet task submit --task bench --wait --output reports/task.json\n"
        "  duet task submit --task npu_pim_gemv_optimize --set pim.alignment=256\n"
        "  duet task status task-0123456789abcdef\n  duet task list");
    t->require_subcommand(1);
    t->add_option("--settings", a->settings_path, help::kSettings)->capture_default_str();

    struct Submit {
        std::string kind = "bench", output;
        std::vector<std::string> sets;
        bool wait = false;
        bool from_config = true;
        double poll_s = 0.5;
    };
    auto s = std::make_shared<Submit>();
    CLI::App* sub = t->add_subcommand("submit",
                                      "Submit a task: bench carries every config.toml knob plus --set overrides;\n"
                                      "npu_pim_gemv_optimize carries only --set keys, which stay fixed while duet tune searches the rest");
    sub->add_option("--task", s->kind, "bench or npu_pim_gemv_optimize")->capture_default_str();
    sub->add_option("--config", a->config_path, help::kConfig)->capture_default_str();
    sub->add_option("--set", s->sets, "KEY=VALUE task parameter (JSON value), e.g. seq_len=4096 or pim.alignment=256");
    sub->add_flag("--wait", s->wait, "Wait for the task, showing progress, and print its result");
    sub->add_option("--output", s->output, "With --wait: write the result JSON here");
    sub->callback([a, s] {
        Endpoint e = connect(*a);
        const config::CoopConfig cfg = config::load_coop_config(a->config_path, config::process_env());
        json body = {{"task", s->kind}};
        // A bench carries every config.toml knob; an optimisation only what --set fixes (the rest is searched).
        if (s->kind == "bench")
            for (const auto& f : config::coop_config_fields()) body[f.dotted()] = json::parse(f.show(cfg));
        for (const auto& kv : s->sets) {
            const size_t eq = kv.find('=');
            if (eq == std::string::npos || eq == 0) fail("--set '{}' is not KEY=VALUE", kv);
            const std::string v = kv.substr(eq + 1);
            json val = json::parse(v, nullptr, false);
            body[kv.substr(0, eq)] = val.is_discarded() ? json(v) : val;  // bare words are strings
        }
        auto r = send(e, "POST", "/v1/tasks", body.dump());
        if (r && r->status == 400) fail("task submit: the server rejected the task: {}", error_message(*r));
        if (!r || r->status != 200) explain_failure(e, r, "task submit");
        const json task = json::parse(r->body);
        const std::string id = task.value("id", "");
        if (!s->wait) {
            std::printf("%s\n", id.c_str());
            return;
        }
        finish_wait(wait_task(e, id, s->poll_s), s->output);
    });

    auto id = std::make_shared<std::string>();
    CLI::App* st = t->add_subcommand("status", "Show a task's status and progress");
    st->add_option("id", *id, "Task id")->required();
    st->callback([a, id] {
        Endpoint e = connect(*a);
        print_task(get_task(e, *id));
    });

    auto wout = std::make_shared<std::string>();
    CLI::App* w = t->add_subcommand("wait", "Wait for a task with a progress bar, then print its result");
    w->add_option("id", *id, "Task id")->required();
    w->add_option("--output", *wout, "Write the result JSON here");
    w->callback([a, id, wout] {
        Endpoint e = connect(*a);
        finish_wait(wait_task(e, *id, 0.5), *wout);
    });

    CLI::App* l = t->add_subcommand("list", "List every task the server knows (newest first)");
    l->callback([a] {
        Endpoint e = connect(*a);
        // Pages of 100, newest first (?after = the last id of the previous page).
        std::string after;
        bool any = false;
        for (;;) {
            auto r = send(e, "GET", "/v1/tasks?limit=100" + (after.empty() ? "" : "&after=" + after));
            if (!r || r->status != 200) explain_failure(e, r, "task list");
            // Parse into a named object: a range-for over json::parse(...)["data"] iterates a reference into a
            // temporary destroyed before the loop body runs (printed nothing).
            const json list = json::parse(r->body, nullptr, false);
            if (!list.is_object() || !list.contains("data") || !list["data"].is_array())
                fail("task list: {} answered without a \"data\" array: {}", e.api.api_base, r->body.substr(0, 200));
            for (const auto& task : list["data"]) print_task(task), any = true;
            if (!list.value("has_more", false) || list["data"].empty()) break;
            after = list["data"].back().value("id", "");
        }
        if (!any) std::printf("no tasks on %s\n", e.api.api_base.c_str());
    });
}

}  // namespace duet::cli
