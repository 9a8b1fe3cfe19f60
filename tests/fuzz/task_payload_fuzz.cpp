// libFuzzer target for the task payload of POST /v1/tasks (server/task_service.h): any body must
// be accepted and stored, or end in one ApiError 400; a stored task must read back with the
// parameters it was given. The input is the request body as the HTTP layer parses it.
//
// The validator registered here applies the parameters through the config field tables
// (config/field.h: type, range, allowed values, extra rules) exactly as `duet serve`'s task
// validator does (cli/serve_cmd.cpp apply_param), because that one is internal to the CLI.
// assumption: when the CLI's validator moves into a library, call it here instead.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "config/coop_config.h"
#include "config/settings.h"
#include "core/error.h"
#include "fuzz_util.h"
#include "server/api_error.h"
#include "server/task_service.h"
#include "server/task_store.h"

namespace {

using nlohmann::json;
namespace cfg = duet::config;
namespace srv = duet::server;

template <class T>
bool apply(const std::vector<cfg::Field<T>>& fields, const std::string& key, const json& v, T& target) {
    for (const auto& f : fields) {
        if (f.dotted() != key && f.key != key) continue;
        cfg::Value val;
        val.kind = f.kind;
        bool ok = true;
        switch (f.kind) {
            case cfg::FieldKind::INT: ok = v.is_number_integer(); if (ok) val.i = v.get<int64_t>(); break;
            case cfg::FieldKind::DOUBLE: ok = v.is_number(); if (ok) val.d = v.get<double>(); break;
            case cfg::FieldKind::BOOL: ok = v.is_boolean(); if (ok) val.b = v.get<bool>(); break;
            default: ok = v.is_string(); if (ok) val.s = v.get<std::string>(); break;
        }
        if (!ok) throw srv::ApiError::bad_request("task parameter '" + key + "' has the wrong type", key);
        const std::string err = cfg::validate_value(f, val, "task");
        if (!err.empty()) throw srv::ApiError::bad_request(err, key);
        f.set(target, val);
        return true;
    }
    return false;
}

json validate(const json& params) {
    cfg::Settings st;
    cfg::CoopConfig cc;
    for (const auto& [key, v] : params.items()) {
        if (key == "model" || key == "baseline" || key == "target") {
            if (!v.is_string()) throw srv::ApiError::bad_request("task parameter '" + key + "' must be a string", key);
            continue;
        }
        if (!apply(cfg::settings_fields(), key, v, st) && !apply(cfg::coop_config_fields(), key, v, cc))
            throw srv::ApiError::bad_request("unknown task parameter '" + key + "'", key);
    }
    return params;
}

struct Service {
    std::string path;
    std::unique_ptr<srv::TaskStore> store;
    std::unique_ptr<srv::TaskService> tasks;
    Service() {
        const char* dir = std::getenv("TMPDIR");
        path = std::string(dir && *dir ? dir : "/tmp") + "/duet-task-fuzz-XXXXXX";
        const int fd = mkstemp(path.data());
        if (fd < 0) duet::fuzz::unexpected("mkstemp failed");
        close(fd);
        unlink(path.c_str());
        store = std::make_unique<srv::TaskStore>(path);
        tasks = std::make_unique<srv::TaskService>(*store);
        // The runners do no work: the target is the validation and the store round trip.
        srv::TaskKind k{validate, [](const json&, const auto&, const auto&) { return json::object(); }};
        tasks->register_kind("bench", k);
        tasks->register_kind("npu_pim_gemv_optimize", k);
    }
};

Service& service() {
    static Service s;
    return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const json body = json::parse(data, data + size, nullptr, false);
    if (body.is_discarded()) return 0;  // the HTTP layer answers 400 before the task service
    Service& s = service();
    try {
        const std::string id = s.tasks->submit(body);
        const auto rec = s.store->get(id);
        if (!rec) duet::fuzz::unexpected("submitted task not in the store");
        json expect = body;
        expect.erase("task");
        if (rec->params != expect) duet::fuzz::unexpected("stored parameters differ from the submitted ones");
        (void)srv::TaskService::to_json(*rec).dump();
        s.store->cancel(id);
    } catch (const srv::ApiError& e) {
        if (e.status() != 400) duet::fuzz::unexpected("task error that is not a 400", &e);
    } catch (const std::exception& e) {
        duet::fuzz::unexpected("exception other than ApiError", &e);
    }
    return 0;
}
