#include "server/timings_cache.h"

#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace duet::server {

SizeTimings memoise_timings(SizeTimings compute, size_t max_entries) {
    struct Cache {
        std::mutex mu;
        std::map<std::pair<int64_t, int64_t>, nlohmann::json> results;
    };
    auto cache = std::make_shared<Cache>();
    max_entries = max_entries == 0 ? 1 : max_entries;
    return [cache, compute = std::move(compute), max_entries](int64_t prompt, int64_t completion) {
        const auto key = std::make_pair(prompt, completion);
        {
            std::lock_guard<std::mutex> lock(cache->mu);
            if (auto it = cache->results.find(key); it != cache->results.end()) return it->second;
        }
        nlohmann::json value = compute(prompt, completion);  // outside the lock: other sizes go on meanwhile
        std::lock_guard<std::mutex> lock(cache->mu);
        if (cache->results.size() >= max_entries) cache->results.clear();
        cache->results.emplace(key, value);
        return value;
    };
}

}  // namespace duet::server
