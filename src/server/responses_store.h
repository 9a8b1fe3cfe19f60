#pragma once
// Persistent store of Responses API responses (POST /v1/responses with "store": true) in an
// SQLite file, so GET /v1/responses/{id} and previous_response_id work across a restart.
// duet serve keeps them in the tasks database file (--tasks-db), table duet_responses.
//
// Each record holds what continuing the conversation needs, so no chain is walked and an
// evicted or deleted ancestor never breaks a descendant:
//   response  the response object as returned (JSON)
//   context   every item of the conversation up to and including this response's output
//             (normalised items, responses_request.h), instructions excluded
//   tokens    the token ids the engine held for it (prompt + generated), so the next turn's
//             prompt can start with exactly these and reuse their KV blocks (prefix cache)
//
// Bounded: at most max_records; storing one more deletes the oldest.
// Thread-safe: one connection guarded by a mutex; SQLite in WAL mode with synchronous=NORMAL.
#include <sqlite3.h>

#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace duet::server {

struct StoredResponse {
    std::string id;
    nlohmann::ordered_json response;
    nlohmann::ordered_json context;  // array of items
    std::vector<int32_t> tokens;
    int64_t created_ms = 0;  // Unix epoch milliseconds
};

class ResponsesStore {
  public:
    // Opens (creating if needed) the database at `path` (":memory:" for none on disk).
    // Throws duet::Error naming the path when it cannot be opened or used. max_records >= 1.
    ResponsesStore(const std::string& path, int64_t max_records);
    ~ResponsesStore();
    ResponsesStore(const ResponsesStore&) = delete;
    ResponsesStore& operator=(const ResponsesStore&) = delete;

    void put(const StoredResponse& r);  // replaces a record with the same id; then evicts the oldest
    std::optional<StoredResponse> get(const std::string& id) const;
    bool remove(const std::string& id);  // false: no such id
    int64_t count() const;
    int64_t max_records() const { return max_records_; }

  private:
    void exec(const char* sql);

    std::string path_;
    int64_t max_records_;
    sqlite3* db_ = nullptr;
    mutable std::mutex mu_;
};

}  // namespace duet::server
