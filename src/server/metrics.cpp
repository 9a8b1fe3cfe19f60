#include "server/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace duet::server {
namespace {

bool valid_name(const std::string& s) {
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
    return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':'; });
}

std::string num(double v) {
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    return fmt::format("{}", v);
}

}  // namespace

void Metrics::add(const std::string& name, Kind kind, const std::string& help, std::vector<double> bounds) {
    DUET_CHECK(valid_name(name), "bad metric name '{}'", name);
    DUET_CHECK(std::is_sorted(bounds.begin(), bounds.end()), "histogram {} bounds not ascending", name);
    std::lock_guard<std::mutex> lock(mu_);
    DUET_CHECK(!metrics_.count(name), "metric {} registered twice", name);
    Metric m;
    m.kind = kind;
    m.help = help;
    m.buckets.assign(bounds.size(), 0);
    m.bounds = std::move(bounds);
    metrics_.emplace(name, std::move(m));
}

void Metrics::add_counter(const std::string& name, const std::string& help) {
    DUET_CHECK(name.ends_with("_total"), "counter {} must end in _total (Prometheus naming)", name);
    add(name, Kind::COUNTER, help, {});
}
void Metrics::add_gauge(const std::string& name, const std::string& help) {
    DUET_CHECK(!name.ends_with("_total"), "gauge {} must not end in _total (that names a counter)", name);
    add(name, Kind::GAUGE, help, {});
}
void Metrics::add_histogram(const std::string& name, const std::string& help, std::vector<double> upper_bounds) {
    add(name, Kind::HISTOGRAM, help, std::move(upper_bounds));
}

Metrics::Metric& Metrics::get(const std::string& name, Kind kind) {
    auto it = metrics_.find(name);
    DUET_CHECK(it != metrics_.end() && it->second.kind == kind, "metric {} not registered with this type", name);
    return it->second;
}

void Metrics::inc(const std::string& name, double by) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = metrics_.find(name);
    DUET_CHECK(it != metrics_.end() && it->second.kind != Kind::HISTOGRAM, "metric {} is not a counter/gauge", name);
    DUET_CHECK(it->second.kind == Kind::GAUGE || by >= 0, "counter {} cannot decrease", name);
    it->second.value += by;
}

void Metrics::set(const std::string& name, double value) {
    std::lock_guard<std::mutex> lock(mu_);
    get(name, Kind::GAUGE).value = value;
}

void Metrics::set_total(const std::string& name, double value) {
    std::lock_guard<std::mutex> lock(mu_);
    Metric& m = get(name, Kind::COUNTER);
    DUET_CHECK(value >= m.value, "counter {} cannot decrease ({} -> {})", name, m.value, value);
    m.value = value;
}

void Metrics::observe(const std::string& name, double value) {
    std::lock_guard<std::mutex> lock(mu_);
    Metric& m = get(name, Kind::HISTOGRAM);
    const auto it = std::lower_bound(m.bounds.begin(), m.bounds.end(), value);
    if (it != m.bounds.end()) ++m.buckets[size_t(it - m.bounds.begin())];
    ++m.count;
    m.sum += value;
}

double Metrics::value(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = metrics_.find(name);
    DUET_CHECK(it != metrics_.end(), "metric {} not registered", name);
    return it->second.kind == Kind::HISTOGRAM ? double(it->second.count) : it->second.value;
}

std::string Metrics::render() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    for (const auto& [name, m] : metrics_) {
        const char* type = m.kind == Kind::COUNTER ? "counter" : m.kind == Kind::GAUGE ? "gauge" : "histogram";
        out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, m.help, name, type);
        if (m.kind != Kind::HISTOGRAM) {
            out += fmt::format("{} {}\n", name, num(m.value));
            continue;
        }
        uint64_t cumulative = 0;
        for (size_t i = 0; i < m.bounds.size(); ++i) {
            cumulative += m.buckets[i];
            out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, num(m.bounds[i]), cumulative);
        }
        out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, m.count, name, num(m.sum),
                           name, m.count);
    }
    return out;
}

}  // namespace duet::server
