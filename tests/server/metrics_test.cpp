#include "server/metrics.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "server/http_server.h"

namespace duet::server {
namespace {

TEST(Metrics, RendersPrometheusText) {
    Metrics m;
    m.add_counter("duet_requests_total", "HTTP requests served");
    m.add_gauge("duet_queue_depth", "Requests waiting");
    m.add_histogram("duet_ttft_seconds", "Time to first token", {0.1, 0.5, 1});
    m.inc("duet_requests_total");
    m.inc("duet_requests_total", 2);
    m.set("duet_queue_depth", 4);
    m.observe("duet_ttft_seconds", 0.05);
    m.observe("duet_ttft_seconds", 0.5);  // on a bound: counted in that bucket (le)
    m.observe("duet_ttft_seconds", 3);
    EXPECT_EQ(m.render(),
              "# HELP duet_queue_depth Requests waiting\n"
              "# TYPE duet_queue_depth gauge\n"
              "duet_queue_depth 4\n"
              "# HELP duet_requests_total HTTP requests served\n"
              "# TYPE duet_requests_total counter\n"
              "duet_requests_total 3\n"
              "# HELP duet_ttft_seconds Time to first token\n"
              "# TYPE duet_ttft_seconds histogram\n"
              "duet_ttft_seconds_bucket{le=\"0.1\"} 1\n"
              "duet_ttft_seconds_bucket{le=\"0.5\"} 2\n"
              "duet_ttft_seconds_bucket{le=\"1\"} 2\n"
              "duet_ttft_seconds_bucket{le=\"+Inf\"} 3\n"
              "duet_ttft_seconds_sum 3.55\n"
              "duet_ttft_seconds_count 3\n");
    EXPECT_EQ(m.value("duet_requests_total"), 3);
    EXPECT_EQ(m.value("duet_ttft_seconds"), 3);
}

TEST(Metrics, CountersEndInTotalAndNeverDecrease) {
    // Misuse is a bug (DUET_CHECK aborts naming it).
    EXPECT_DEATH(Metrics().add_counter("duet_preemptions", "x"), "must end in _total");
    EXPECT_DEATH(Metrics().add_gauge("duet_things_total", "x"), "must not end in _total");
    Metrics m;
    m.add_counter("duet_preemptions_total", "x");
    m.set_total("duet_preemptions_total", 5);
    EXPECT_EQ(m.value("duet_preemptions_total"), 5);
    EXPECT_DEATH(m.set_total("duet_preemptions_total", 4), "cannot decrease");
    EXPECT_DEATH(m.set("duet_preemptions_total", 9), "not registered with this type");  // set() is for gauges
}

// The server's monotonic series (preemptions, prefix-cache lookups and hits) were gauges
// without _total: Prometheus' rate() on them was wrong after a restart.
TEST(Metrics, ServerMonotonicSeriesAreCounters) {
    Metrics m;
    register_server_metrics(m);
    const std::string text = m.render();
    for (const char* name : {"duet_batch_preemptions_total", "duet_prefix_cache_lookup_tokens_total",
                             "duet_prefix_cache_hit_tokens_total", "duet_http_requests_total",
                             "duet_engine_step_failures_total"})
        EXPECT_NE(text.find(std::string("# TYPE ") + name + " counter\n"), std::string::npos) << name;
    EXPECT_EQ(text.find("# TYPE duet_batch_preemptions gauge"), std::string::npos);
    // Every counter ends in _total; no gauge does.
    size_t at = 0;
    while ((at = text.find("# TYPE ", at)) != std::string::npos) {
        const size_t end = text.find('\n', at);
        const std::string line = text.substr(at + 7, end - at - 7);
        const std::string name = line.substr(0, line.find(' '));
        if (line.ends_with(" counter")) {
            EXPECT_TRUE(name.ends_with("_total")) << line;
        }
        if (line.ends_with(" gauge")) {
            EXPECT_FALSE(name.ends_with("_total")) << line;
        }
        at = end;
    }
}

}  // namespace
}  // namespace duet::server
