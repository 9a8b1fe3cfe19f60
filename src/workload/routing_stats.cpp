#include "workload/routing_stats.h"

#include <cmath>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_read.h"

namespace duet::workload {
namespace {

// The 1-based line on which each element of the top-level "layers" array starts (a small scan of
// the text: nlohmann's values keep no positions).
std::vector<int> layer_lines(const std::string& text) {
    std::vector<int> lines;
    std::vector<char> stack;
    std::string last_key, str;
    bool in_str = false, esc = false, layers_open = false;
    int line = 1;
    for (char c : text) {
        if (c == '\n') ++line;
        if (in_str) {
            if (esc) esc = false;
            else if (c == '\\') esc = true;
            else if (c == '"') in_str = false, last_key = str;
            else str += c;
            continue;
        }
        if (c == '"') in_str = true, str.clear();
        else if (c == '{' || c == '[') {
            if (layers_open && stack.size() == 2 && stack.back() == '[') lines.push_back(line);
            if (c == '[' && stack.size() == 1 && last_key == "layers") layers_open = true;
            stack.push_back(c);
        } else if (c == '}' || c == ']') {
            if (!stack.empty()) stack.pop_back();
            if (stack.size() == 1) layers_open = false;
        }
    }
    return lines;
}

struct Where {
    const std::string& path;
    int line;
    size_t index;
};

std::vector<double> layer_fractions(const nlohmann::json& e, const Where& w, const graph::ModelShape& s) {
    const auto& f = e.at("fractions");
    if (!f.is_array())
        fail("{}: line {}: layers[{}].fractions is not an array (allowed: {} numbers, one per routed expert)", w.path,
             w.line, w.index, s.n_expert);
    if (int64_t(f.size()) != s.n_expert)
        fail("{}: line {}: layers[{}].fractions has {} values but '{}' has {} routed experts (allowed: {} values)",
             w.path, w.line, w.index, f.size(), s.name, s.n_expert, s.n_expert);
    std::vector<double> out;
    double sum = 0;
    const double most = 1.0 / double(s.n_expert_used);
    for (size_t j = 0; j < f.size(); ++j) {
        if (!f[j].is_number() || !std::isfinite(f[j].get<double>()) || f[j].get<double>() < 0)
            fail("{}: line {}: layers[{}].fractions[{}] = {} is not allowed (allowed: a number >= 0)", w.path, w.line,
                 w.index, j, f[j].dump());
        const double x = f[j].get<double>();
        if (x > most + 1e-9)
            fail("{}: line {}: layers[{}].fractions[{}] = {} is more than 1/k = {:.6g}: each token picks {} distinct "
                 "experts (allowed: 0 to {:.6g})", w.path, w.line, w.index, j, f[j].dump(), most, s.n_expert_used, most);
        out.push_back(x);
        sum += x;
    }
    if (std::fabs(sum - 1) > 1e-3)
        fail("{}: line {}: layers[{}].fractions sum to {:.6g} (allowed: 1 within 0.001)", w.path, w.line, w.index, sum);
    return out;
}

int64_t layer_index(const nlohmann::json& e, const Where& w, const graph::ModelShape& s) {
    if (!e.contains("layer") || !e.at("layer").is_number_integer())
        fail("{}: line {}: layers[{}].layer is missing or not an integer (allowed: a MoE layer, {} to {})", w.path,
             w.line, w.index, s.n_layer_dense_lead, s.n_layer - 1);
    const int64_t l = e.at("layer").get<int64_t>();
    if (!s.moe_layer(l) || l >= s.n_layer)
        fail("{}: line {}: layers[{}].layer = {} is not a MoE layer of '{}' (allowed: {} to {})", w.path, w.line,
             w.index, l, s.name, s.n_layer_dense_lead, s.n_layer - 1);
    return l;
}

}  // namespace

sim::ExpertRouting parse_routing_stats(const std::string& text, const std::string& path, const graph::ModelShape& s) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        fail("{}: not JSON: {} (allowed: a routing-statistics file, docs/scale-out.md)", path, e.what());
    }
    if (!j.is_object() || !j.contains("layers") || !j.at("layers").is_array())
        fail("{}: line 1: field 'layers' is missing or not an array (allowed: {{\"layers\": [{{\"layer\": L, "
             "\"fractions\": [...]}}, ...]}})", path);
    for (const auto& [key, v] : j.items())
        if (key != "layers" && key != "model")
            fail("{}: line 1: unknown field '{}' (allowed: layers, model)", path, key);
    const std::vector<int> lines = layer_lines(text);
    sim::ExpertRouting r;
    r.source = "routing stats " + path;
    r.fractions.assign(size_t(s.n_layer), {});
    std::set<int64_t> seen;
    for (size_t i = 0; i < j.at("layers").size(); ++i) {
        const nlohmann::json& e = j.at("layers")[i];
        const Where w{path, i < lines.size() ? lines[i] : 1, i};
        if (!e.is_object()) fail("{}: line {}: layers[{}] is not an object (allowed: {{\"layer\", \"fractions\"}})", path, w.line, i);
        for (const auto& [key, v] : e.items())
            if (key != "layer" && key != "fractions")
                fail("{}: line {}: layers[{}] has unknown field '{}' (allowed: layer, fractions)", path, w.line, i, key);
        const int64_t l = layer_index(e, w, s);
        if (!seen.insert(l).second) fail("{}: line {}: layers[{}].layer = {} is listed twice (allowed: once)", path, w.line, i, l);
        if (!e.contains("fractions"))
            fail("{}: line {}: layers[{}].fractions is missing (allowed: {} numbers, one per routed expert)", path,
                 w.line, i, s.n_expert);
        r.fractions[size_t(l)] = layer_fractions(e, w, s);
    }
    return r;
}

sim::ExpertRouting load_routing_stats(const std::string& path, const graph::ModelShape& s) {
    return parse_routing_stats(read_small_file(path, "--routing-stats"), path, s);
}

std::shared_ptr<const sim::ExpertRouting> routing_from_flags(double skew, const std::string& path,
                                                             const graph::ModelShape& s) {
    if (skew >= 0 && !path.empty())
        fail("--expert-skew and --routing-stats are both set (allowed: one of them)");
    if (!s.is_moe() && (skew >= 0 || !path.empty()))
        fail("{}: '{}' has no routed experts (allowed: a Mixture-of-Experts model)",
             skew >= 0 ? "--expert-skew" : "--routing-stats", s.name);
    if (!path.empty()) return std::make_shared<const sim::ExpertRouting>(load_routing_stats(path, s));
    if (skew >= 0)
        return std::make_shared<const sim::ExpertRouting>(sim::zipf_routing(skew, s.n_layer, s.n_expert, s.n_expert_used));
    return std::make_shared<const sim::ExpertRouting>();
}

}  // namespace duet::workload
