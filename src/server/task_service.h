#pragma once
// Runs the tasks of POST /v1/tasks one at a time on a worker thread, recording everything in
// the TaskStore (so a restart keeps the list and marks unfinished work interrupted).
// Task kinds are registered by name with a validator (throws ApiError 400 naming the bad
// parameter) and a runner that reports progress and polls for cancellation.
//
// Thread safety: all methods may be called from any thread.
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "server/task_store.h"

namespace duet::server {

struct TaskKind {
    // Checks and normalises the parameters (fills defaults) before the task is stored.
    std::function<nlohmann::json(const nlohmann::json& params)> validate;
    // Does the work; returns the result stored with the task. progress(f) with f in [0, 1] and
    // an optional detail object shown as the task's "progress_detail" (null: none); should
    // return early when cancelled() becomes true. Throws duet::Error on failure.
    using Progress = std::function<void(double fraction, const nlohmann::json& detail)>;
    std::function<nlohmann::json(const nlohmann::json& params, const Progress& progress,
                                 const std::function<bool()>& cancelled)>
        run;
};

class TaskService {
public:
    explicit TaskService(TaskStore& store);
    ~TaskService();  // stops the worker; a running task is left "running" and becomes interrupted at the next open
    TaskService(const TaskService&) = delete;
    TaskService& operator=(const TaskService&) = delete;

    void register_kind(const std::string& name, TaskKind kind);
    std::vector<std::string> kinds() const;

    // Unfinished (queued + running) tasks at most; more get 429.
    static constexpr size_t kMaxUnfinished = 64;

    // body: {"task": "<kind>", ...params}. Returns the new id; ApiError 400 for a bad body,
    // 429 when kMaxUnfinished tasks are unfinished. Finished tasks are purged (TaskStore::purge).
    std::string submit(const nlohmann::json& body);
    TaskStore& store() { return store_; }

    static nlohmann::json to_json(const TaskRecord& t);  // the API's view of a task

private:
    void loop();

    TaskStore& store_;
    std::map<std::string, TaskKind> kinds_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::string> pending_;
    bool stop_ = false;
    std::thread worker_;
};

}  // namespace duet::server
