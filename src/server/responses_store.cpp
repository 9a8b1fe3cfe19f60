#include "server/responses_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include "core/error.h"

namespace duet::server {
namespace {

using nlohmann::ordered_json;

// RAII prepared statement.
class Stmt {
  public:
    Stmt(sqlite3* db, const char* sql, const std::string& path) : db_(db) {
        if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK)
            duet::fail("{}: responses store query failed: {}", path, sqlite3_errmsg(db));
    }
    ~Stmt() { sqlite3_finalize(s_); }
    void bind(int i, const std::string& v) { sqlite3_bind_text(s_, i, v.c_str(), int(v.size()), SQLITE_TRANSIENT); }
    void bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
    int step() { return sqlite3_step(s_); }
    std::string text(int col) const {
        const auto* p = sqlite3_column_text(s_, col);
        return p ? reinterpret_cast<const char*>(p) : "";
    }
    int64_t i64(int col) const { return sqlite3_column_int64(s_, col); }
    void done(const std::string& path, const char* what) {
        if (step() != SQLITE_DONE) duet::fail("{}: cannot {} a stored response: {}", path, what, sqlite3_errmsg(db_));
    }

  private:
    sqlite3* db_;
    sqlite3_stmt* s_ = nullptr;
};

std::string tokens_text(const std::vector<int32_t>& t) {
    std::string s;
    s.reserve(t.size() * 6);
    for (size_t i = 0; i < t.size(); ++i) {
        if (i) s += ',';
        s += std::to_string(t[i]);
    }
    return s;
}

std::vector<int32_t> tokens_of(const std::string& s) {
    std::vector<int32_t> t;
    size_t at = 0;
    while (at < s.size()) {
        size_t end = s.find(',', at);
        if (end == std::string::npos) end = s.size();
        t.push_back(int32_t(std::stol(s.substr(at, end - at))));
        at = end + 1;
    }
    return t;
}

}  // namespace

ResponsesStore::ResponsesStore(const std::string& path, int64_t max_records) : path_(path), max_records_(max_records) {
    if (max_records_ < 1) duet::fail("{}: responses store needs room for at least 1 response", path);
    // Created owner-only (0600) before SQLite opens it, like the task store of the same file.
    if (path != ":memory:")
        if (const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600); fd >= 0) ::close(fd);
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        nullptr) != SQLITE_OK) {
        std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
        sqlite3_close(db_);
        db_ = nullptr;
        duet::fail("{}: cannot open responses store: {}", path, msg);
    }
    sqlite3_busy_timeout(db_, 5000);
    try {
        if (path != ":memory:") exec("PRAGMA journal_mode=WAL");
        exec("PRAGMA synchronous=NORMAL");
        exec(
            "CREATE TABLE IF NOT EXISTS duet_responses ("
            " id TEXT PRIMARY KEY, created_ms INTEGER NOT NULL, response TEXT NOT NULL, context TEXT NOT NULL,"
            " tokens TEXT NOT NULL)");
    } catch (...) {
        sqlite3_close(db_);
        db_ = nullptr;
        throw;
    }
}

ResponsesStore::~ResponsesStore() { sqlite3_close(db_); }

void ResponsesStore::exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
        std::string msg = err ? err : "unknown error";
        sqlite3_free(err);
        duet::fail("{}: responses store is not usable: {}", path_, msg);
    }
}

void ResponsesStore::put(const StoredResponse& r) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto dump = [](const ordered_json& j) {
        return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
    };
    {
        Stmt s(db_, "INSERT OR REPLACE INTO duet_responses VALUES (?1, ?2, ?3, ?4, ?5)", path_);
        s.bind(1, r.id);
        s.bind(2, r.created_ms);
        s.bind(3, dump(r.response));
        s.bind(4, dump(r.context));
        s.bind(5, tokens_text(r.tokens));
        s.done(path_, "insert");
    }
    Stmt evict(db_,
               "DELETE FROM duet_responses WHERE rowid NOT IN"
               " (SELECT rowid FROM duet_responses ORDER BY created_ms DESC, rowid DESC LIMIT ?1)",
               path_);
    evict.bind(1, max_records_);
    evict.done(path_, "evict");
}

std::optional<StoredResponse> ResponsesStore::get(const std::string& id) const {
    std::lock_guard<std::mutex> lock(mu_);
    Stmt s(db_, "SELECT id, created_ms, response, context, tokens FROM duet_responses WHERE id=?1", path_);
    s.bind(1, id);
    if (s.step() != SQLITE_ROW) return std::nullopt;
    StoredResponse r;
    r.id = s.text(0);
    r.created_ms = s.i64(1);
    r.response = ordered_json::parse(s.text(2), nullptr, false);
    r.context = ordered_json::parse(s.text(3), nullptr, false);
    if (r.response.is_discarded() || !r.context.is_array())
        duet::fail("{}: stored response {} is not valid JSON", path_, id);
    r.tokens = tokens_of(s.text(4));
    return r;
}

bool ResponsesStore::remove(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    Stmt s(db_, "DELETE FROM duet_responses WHERE id=?1", path_);
    s.bind(1, id);
    s.done(path_, "delete");
    return sqlite3_changes(db_) == 1;
}

int64_t ResponsesStore::count() const {
    std::lock_guard<std::mutex> lock(mu_);
    Stmt s(db_, "SELECT COUNT(*) FROM duet_responses", path_);
    s.step();
    return s.i64(0);
}

}  // namespace duet::server
