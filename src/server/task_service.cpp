#include "server/task_service.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/log.h"
#include "server/api_error.h"

namespace duet::server {

TaskService::TaskService(TaskStore& store) : store_(store) {
    store_.purge(TaskStore::kMaxFinished, TaskStore::kMaxFinishedAgeMs);
    worker_ = std::thread([this] { loop(); });
}

TaskService::~TaskService() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
}

void TaskService::register_kind(const std::string& name, TaskKind kind) {
    std::lock_guard<std::mutex> lock(mu_);
    kinds_[name] = std::move(kind);
}

std::vector<std::string> TaskService::kinds() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> k;
    for (const auto& [name, _] : kinds_) k.push_back(name);
    return k;
}

std::string TaskService::submit(const nlohmann::json& body) {
    if (!body.is_object()) throw ApiError::bad_request("request body must be a JSON object");
    auto it = body.find("task");
    if (it == body.end()) throw ApiError::bad_request("'task' is required", "task");
    const std::vector<std::string> names = kinds();
    const std::string allowed = fmt::format("{}", fmt::join(names, ", "));
    if (!it->is_string()) throw ApiError::bad_request(fmt::format("'task' must be a string (one of: {})", allowed), "task");
    const std::string kind = it->get<std::string>();
    TaskKind k;
    {
        std::lock_guard<std::mutex> lock(mu_);
        auto kit = kinds_.find(kind);
        if (kit == kinds_.end())
            throw ApiError::bad_request(fmt::format("'task' = \"{}\" is not allowed (allowed: {})", kind, allowed), "task");
        k = kit->second;
    }
    nlohmann::json params = body;
    params.erase("task");
    params = k.validate ? k.validate(params) : params;
    if (store_.count_unfinished() >= kMaxUnfinished)
        throw ApiError::rate_limited(fmt::format("The server has {} unfinished tasks, its limit; wait for one to finish "
                                                 "or cancel one (DELETE /v1/tasks/ID)",
                                                 kMaxUnfinished));
    store_.purge(TaskStore::kMaxFinished, TaskStore::kMaxFinishedAgeMs);
    const std::string id = store_.create(kind, params);
    {
        std::lock_guard<std::mutex> lock(mu_);
        pending_.push_back(id);
    }
    cv_.notify_all();
    return id;
}

nlohmann::json TaskService::to_json(const TaskRecord& t) {
    nlohmann::json j = {{"id", t.id},           {"object", "task"},        {"task", t.kind},
                        {"status", t.status},   {"progress", t.progress},  {"params", t.params},
                        {"created_at", t.created_ms / 1000}, {"updated_at", t.updated_ms / 1000}};
    if (!t.progress_detail.is_null()) j["progress_detail"] = t.progress_detail;
    j["result"] = t.result;
    j["error"] = t.error.empty() ? nlohmann::json() : nlohmann::json(t.error);
    return j;
}

void TaskService::loop() {
    for (;;) {
        std::string id;
        TaskKind kind;
        {
            std::unique_lock<std::mutex> lock(mu_);
            cv_.wait(lock, [&] { return stop_ || !pending_.empty(); });
            if (stop_) return;
            id = pending_.front();
            pending_.pop_front();
        }
        auto rec = store_.get(id);
        if (!rec || !store_.start(id)) continue;  // cancelled while queued
        {
            std::lock_guard<std::mutex> lock(mu_);
            kind = kinds_.at(rec->kind);
        }
        auto stopping = [&] {
            std::lock_guard<std::mutex> lock(mu_);
            return stop_;
        };
        auto cancelled = [&] { return stopping() || store_.is_cancelled(id); };
        try {
            auto progress = [&](double p, const nlohmann::json& detail) {
                store_.set_progress(id, p);
                if (!detail.is_null()) store_.set_progress_detail(id, detail);
            };
            nlohmann::json result = kind.run(rec->params, progress, cancelled);
            // A task cut short by shutdown stays "running" in the store: the next open marks it interrupted.
            if (!stopping() && !store_.is_cancelled(id)) store_.finish(id, result);
        } catch (const std::exception& e) {
            if (stopping()) continue;
            DUET_LOG_WARN("task {} failed: {}", id, e.what());
            store_.mark_failed(id, e.what());
        }
    }
}

}  // namespace duet::server
