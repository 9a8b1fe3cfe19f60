#pragma once
// Persistent store of optimisation/bench tasks in an SQLite file, so tasks and their results
// survive a restart. Status life cycle:
//   queued -> running -> done | failed | cancelled
// and, when the server restarts, every task found queued or running becomes `interrupted`
// (its work was lost with the process; the record is kept, not dropped).
// One server per store: the file is locked (flock, exclusive) for the store's lifetime, and a
// second TaskStore on it, in this process or another, throws naming the file. The file and
// its -wal/-shm companions are owner-only (0600), tightened when found wider.
// Finished tasks are purged beyond the newest kMaxFinished and after kMaxFinishedAgeMs.
// Thread-safe: one connection guarded by a mutex; SQLite in WAL mode with synchronous=NORMAL.
#include <sqlite3.h>

#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace duet::server {

struct TaskRecord {
    std::string id;      // "task-" + 16 hex digits
    std::string kind;    // "bench", "npu_pim_gemv_optimize"
    std::string status;  // queued, running, done, failed, cancelled, interrupted
    double progress = 0;  // 0..1
    nlohmann::json params;
    nlohmann::json result;  // null until done
    std::string error;      // set when failed or interrupted
    // What a running task reports beyond the fraction (e.g. {"points_done", "points_total",
    // "best_so_far"}); kept in memory only, null after a restart.
    nlohmann::json progress_detail;
    int64_t created_ms = 0, updated_ms = 0;  // Unix epoch milliseconds
};

class TaskStore {
public:
    // Opens (creating if needed) the database at `path` and marks unfinished tasks interrupted.
    // Throws duet::Error naming the path when the file cannot be opened or is not a duet store.
    explicit TaskStore(const std::string& path);
    ~TaskStore();
    TaskStore(const TaskStore&) = delete;
    TaskStore& operator=(const TaskStore&) = delete;

    std::string create(const std::string& kind, const nlohmann::json& params);
    std::optional<TaskRecord> get(const std::string& id) const;
    std::vector<TaskRecord> list() const;  // newest first
    // At most `limit` tasks, newest first, starting after the task `after_id` ("" = from the
    // newest); has_more tells whether older ones follow. Throws ApiError-free duet::Error only
    // on a database failure; an unknown after_id gives an empty page.
    std::vector<TaskRecord> list_page(size_t limit, const std::string& after_id, bool& has_more) const;
    size_t count_unfinished() const;  // queued + running
    // Deletes finished tasks (done, failed, cancelled, interrupted) beyond the newest
    // keep_finished and those last updated before now - max_age_ms; returns how many.
    int purge(size_t keep_finished, int64_t max_age_ms);

    static constexpr size_t kMaxFinished = 1000;
    static constexpr int64_t kMaxFinishedAgeMs = 7LL * 24 * 3600 * 1000;  // a week
    int interrupted_at_open() const { return interrupted_at_open_; }

    // Transitions; each returns false when the task is missing or already finished
    // (e.g. a worker finishing a task that was cancelled meanwhile).
    bool start(const std::string& id);
    bool set_progress(const std::string& id, double progress);
    void set_progress_detail(const std::string& id, const nlohmann::json& detail);  // in memory only
    bool finish(const std::string& id, const nlohmann::json& result);
    bool mark_failed(const std::string& id, const std::string& error);
    bool cancel(const std::string& id);
    bool is_cancelled(const std::string& id) const;

private:
    bool transition(const std::string& id, const char* sql_tail, const std::vector<std::string>& binds);
    void exec(const char* sql);

    std::string path_;
    int lock_fd_ = -1;  // the store file, flock'ed exclusively while this store lives
    sqlite3* db_ = nullptr;
    mutable std::mutex mu_;
    int interrupted_at_open_ = 0;
    std::map<std::string, nlohmann::json> details_;  // progress_detail by id (guarded by mu_)
};

}  // namespace duet::server
