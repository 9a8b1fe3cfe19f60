#include "server/task_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <random>

#include "core/error.h"

namespace duet::server {
namespace {

int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string new_id() {
    static std::mutex mu;
    static std::mt19937_64 rng{std::random_device{}()};
    std::lock_guard<std::mutex> lock(mu);
    return fmt::format("task-{:016x}", rng());
}

// RAII prepared statement.
class Stmt {
public:
    Stmt(sqlite3* db, const char* sql, const std::string& path) {
        if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK)
            duet::fail("{}: task store query failed: {}", path, sqlite3_errmsg(db));
    }
    ~Stmt() { sqlite3_finalize(s_); }
    void bind(int i, const std::string& v) { sqlite3_bind_text(s_, i, v.c_str(), int(v.size()), SQLITE_TRANSIENT); }
    void bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
    void bind(int i, double v) { sqlite3_bind_double(s_, i, v); }
    int step() { return sqlite3_step(s_); }
    std::string text(int col) const {
        const auto* p = sqlite3_column_text(s_, col);
        return p ? reinterpret_cast<const char*>(p) : "";
    }
    double dbl(int col) const { return sqlite3_column_double(s_, col); }
    int64_t i64(int col) const { return sqlite3_column_int64(s_, col); }

private:
    sqlite3_stmt* s_ = nullptr;
};

constexpr const char* kColumns = "id, kind, status, progress, params, result, error, created_ms, updated_ms";

TaskRecord read_row(const Stmt& s) {
    TaskRecord r;
    r.id = s.text(0);
    r.kind = s.text(1);
    r.status = s.text(2);
    r.progress = s.dbl(3);
    r.params = nlohmann::json::parse(s.text(4), nullptr, false);
    const std::string result = s.text(5);
    r.result = result.empty() ? nlohmann::json() : nlohmann::json::parse(result, nullptr, false);
    r.error = s.text(6);
    r.created_ms = s.i64(7);
    r.updated_ms = s.i64(8);
    return r;
}

}  // namespace

// Owner-only: a file found with group/other bits loses them (the store holds task parameters).
void tighten_mode(int fd, const std::string& path) {
    struct stat st {};
    if (::fstat(fd, &st) == 0 && (st.st_mode & 077) != 0 && ::fchmod(fd, st.st_mode & 0700) != 0)
        duet::fail("{}: task store is readable by others (mode {:o}) and cannot be made owner-only: {}", path,
                   st.st_mode & 0777, std::strerror(errno));
}

TaskStore::TaskStore(const std::string& path) : path_(path) {
    // Created owner-only (0600) before SQLite opens it; its journal files copy this mode.
    lock_fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (lock_fd_ < 0) duet::fail("{}: cannot open task store: {}", path, std::strerror(errno));
    struct stat st {};
    if (::fstat(lock_fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(lock_fd_);
        duet::fail("{}: the task store is not a regular file", path);
    }
    // flock is independent of SQLite's own (fcntl) locks: it marks the file as this server's.
    if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
        ::close(lock_fd_);
        duet::fail("{}: the task store is in use by another duet serve (each server needs its own --tasks-db)",
                   path);
    }
    try {
        tighten_mode(lock_fd_, path);
        for (const char* suffix : {"-wal", "-shm"}) {
            const std::string side = path + suffix;
            if (const int fd = ::open(side.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW); fd >= 0) {
                tighten_mode(fd, side);
                ::close(fd);
            }
        }
    } catch (...) {
        ::close(lock_fd_);
        throw;
    }
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        nullptr) != SQLITE_OK) {
        std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
        sqlite3_close(db_);
        db_ = nullptr;
        ::close(lock_fd_);
        duet::fail("{}: cannot open task store: {}", path, msg);
    }
    sqlite3_busy_timeout(db_, 5000);
    try {
        exec("PRAGMA journal_mode=WAL");
        exec("PRAGMA synchronous=NORMAL");
        exec("CREATE TABLE IF NOT EXISTS duet_tasks ("
             " id TEXT PRIMARY KEY, kind TEXT NOT NULL, status TEXT NOT NULL, progress REAL NOT NULL,"
             " params TEXT NOT NULL, result TEXT, error TEXT, created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL)");
        Stmt s(db_,
               "UPDATE duet_tasks SET status='interrupted', error='the server stopped while the task was ' || status,"
               " updated_ms=?1 WHERE status IN ('queued','running')",
               path_);
        s.bind(1, now_ms());
        s.step();
        interrupted_at_open_ = sqlite3_changes(db_);
    } catch (...) {
        sqlite3_close(db_);
        db_ = nullptr;
        ::close(lock_fd_);
        throw;
    }
}

TaskStore::~TaskStore() {
    sqlite3_close(db_);
    ::close(lock_fd_);  // releases the flock
}

void TaskStore::exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
        std::string msg = err ? err : "unknown error";
        sqlite3_free(err);
        duet::fail("{}: task store is not usable: {}", path_, msg);
    }
}

std::string TaskStore::create(const std::string& kind, const nlohmann::json& params) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string id = new_id();
    Stmt s(db_, "INSERT INTO duet_tasks VALUES (?1, ?2, 'queued', 0, ?3, NULL, '', ?4, ?4)", path_);
    s.bind(1, id);
    s.bind(2, kind);
    s.bind(3, params.dump());
    s.bind(4, now_ms());
    if (s.step() != SQLITE_DONE) duet::fail("{}: cannot insert task: {}", path_, sqlite3_errmsg(db_));
    return id;
}

std::optional<TaskRecord> TaskStore::get(const std::string& id) const {
    std::lock_guard<std::mutex> lock(mu_);
    Stmt s(db_, fmt::format("SELECT {} FROM duet_tasks WHERE id=?1", kColumns).c_str(), path_);
    s.bind(1, id);
    if (s.step() != SQLITE_ROW) return std::nullopt;
    TaskRecord r = read_row(s);
    if (auto it = details_.find(id); it != details_.end()) r.progress_detail = it->second;
    return r;
}

std::vector<TaskRecord> TaskStore::list() const {
    std::lock_guard<std::mutex> lock(mu_);
    Stmt s(db_, fmt::format("SELECT {} FROM duet_tasks ORDER BY created_ms DESC, rowid DESC", kColumns).c_str(), path_);
    std::vector<TaskRecord> out;
    while (s.step() == SQLITE_ROW) {
        out.push_back(read_row(s));
        if (auto it = details_.find(out.back().id); it != details_.end()) out.back().progress_detail = it->second;
    }
    return out;
}

std::vector<TaskRecord> TaskStore::list_page(size_t limit, const std::string& after_id, bool& has_more) const {
    std::lock_guard<std::mutex> lock(mu_);
    // Order: created_ms DESC, rowid DESC; "after" is the position of after_id in that order.
    const std::string where =
        after_id.empty() ? ""
                         : "WHERE (created_ms, rowid) < (SELECT created_ms, rowid FROM duet_tasks WHERE id=?2)";
    Stmt s(db_,
           fmt::format("SELECT {} FROM duet_tasks {} ORDER BY created_ms DESC, rowid DESC LIMIT ?1", kColumns, where)
               .c_str(),
           path_);
    s.bind(1, int64_t(limit) + 1);
    if (!after_id.empty()) s.bind(2, after_id);
    std::vector<TaskRecord> out;
    while (s.step() == SQLITE_ROW) {
        out.push_back(read_row(s));
        if (auto it = details_.find(out.back().id); it != details_.end()) out.back().progress_detail = it->second;
    }
    has_more = out.size() > limit;
    if (has_more) out.pop_back();
    return out;
}

size_t TaskStore::count_unfinished() const {
    std::lock_guard<std::mutex> lock(mu_);
    Stmt s(db_, "SELECT COUNT(*) FROM duet_tasks WHERE status IN ('queued','running')", path_);
    return s.step() == SQLITE_ROW ? size_t(s.i64(0)) : 0;
}

int TaskStore::purge(size_t keep_finished, int64_t max_age_ms) {
    std::lock_guard<std::mutex> lock(mu_);
    Stmt s(db_,
           "DELETE FROM duet_tasks WHERE status NOT IN ('queued','running') AND (updated_ms < ?1 OR id NOT IN "
           "(SELECT id FROM duet_tasks WHERE status NOT IN ('queued','running') ORDER BY created_ms DESC, rowid DESC "
           "LIMIT ?2))",
           path_);
    s.bind(1, now_ms() - max_age_ms);
    s.bind(2, int64_t(keep_finished));
    if (s.step() != SQLITE_DONE) duet::fail("{}: cannot purge finished tasks: {}", path_, sqlite3_errmsg(db_));
    const int n = sqlite3_changes(db_);
    return n;
}

void TaskStore::set_progress_detail(const std::string& id, const nlohmann::json& detail) {
    std::lock_guard<std::mutex> lock(mu_);
    details_[id] = detail;
}

bool TaskStore::transition(const std::string& id, const char* sql_tail, const std::vector<std::string>& binds) {
    std::lock_guard<std::mutex> lock(mu_);
    Stmt s(db_, fmt::format("UPDATE duet_tasks SET updated_ms=?1, {}", sql_tail).c_str(), path_);
    s.bind(1, now_ms());
    s.bind(2, id);
    for (size_t i = 0; i < binds.size(); ++i) s.bind(int(i) + 3, binds[i]);
    if (s.step() != SQLITE_DONE) duet::fail("{}: cannot update task {}: {}", path_, id, sqlite3_errmsg(db_));
    return sqlite3_changes(db_) == 1;
}

bool TaskStore::start(const std::string& id) {
    return transition(id, "status='running' WHERE id=?2 AND status='queued'", {});
}

bool TaskStore::set_progress(const std::string& id, double progress) {
    return transition(id, "progress=MAX(progress, MIN(1.0, CAST(?3 AS REAL))) WHERE id=?2 AND status='running'",
                      {fmt::format("{}", progress)});
}

bool TaskStore::finish(const std::string& id, const nlohmann::json& result) {
    return transition(id, "status='done', progress=1.0, result=?3 WHERE id=?2 AND status='running'", {result.dump()});
}

bool TaskStore::mark_failed(const std::string& id, const std::string& error) {
    return transition(id, "status='failed', error=?3 WHERE id=?2 AND status IN ('queued','running')", {error});
}

bool TaskStore::cancel(const std::string& id) {
    return transition(id, "status='cancelled' WHERE id=?2 AND status IN ('queued','running')", {});
}

bool TaskStore::is_cancelled(const std::string& id) const {
    auto t = get(id);
    return t && t->status == "cancelled";
}

}  // namespace duet::server
