#pragma once
// Process metrics in Prometheus text exposition format (version 0.0.4): counters, gauges and
// histograms with fixed buckets. Naming follows Prometheus: a counter's name ends in `_total`
// (add_counter refuses others) and is typed `counter`; a gauge's does not. Thread-safe: every method may be called from any thread.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace duet::server {

class Metrics {
public:
    // Registration fixes a metric's type and help text; the name must be a valid Prometheus name.
    void add_counter(const std::string& name, const std::string& help);
    void add_gauge(const std::string& name, const std::string& help);
    void add_histogram(const std::string& name, const std::string& help, std::vector<double> upper_bounds);

    void inc(const std::string& name, double by = 1.0);
    void set(const std::string& name, double value);  // gauges only
    // A counter mirrored from a monotonic source (e.g. batcher stats): value must not be below
    // the counter's current value (a counter never decreases).
    void set_total(const std::string& name, double value);
    void observe(const std::string& name, double value);

    double value(const std::string& name) const;  // counter or gauge; for tests and /health
    std::string render() const;                   // the /metrics body

private:
    enum class Kind { COUNTER, GAUGE, HISTOGRAM };
    struct Metric {
        Kind kind;
        std::string help;
        double value = 0;
        std::vector<double> bounds;     // histogram upper bounds, ascending
        std::vector<uint64_t> buckets;  // per bound, non-cumulative
        uint64_t count = 0;
        double sum = 0;
    };
    Metric& get(const std::string& name, Kind kind);
    void add(const std::string& name, Kind kind, const std::string& help, std::vector<double> bounds);

    mutable std::mutex mu_;
    std::map<std::string, Metric> metrics_;
};

}  // namespace duet::server
