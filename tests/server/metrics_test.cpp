#include "server/metrics.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace duet::server
