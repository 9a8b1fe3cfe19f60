#include "tune/outputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "config/coop_config.h"
#include "core/svg.h"

namespace duet::tune {
namespace {

double mib(double bytes) { return bytes / double(1 << 20); }

std::string verdict_summary(const PointResult& p) {
    std::string s;
    for (const auto& v : p.verdicts) {
        const bool pct = v.name != "ttft_increase_ms";
        s += fmt::format("  {:<18} {:>9} (limit {}) {}\n", v.name,
                         pct ? fmt::format("{:.1f}%", 100 * v.value) : fmt::format("{:.2f} ms", v.value),
                         pct ? fmt::format("{:.0f}%", 100 * v.threshold) : fmt::format("{:.0f} ms", v.threshold),
                         v.met ? "MET" : "NOT MET: " + v.binding_limit);
    }
    return s;
}

}  // namespace

std::string format_best(const TuneResult& r, Objective o) {
    std::string s;
    if (r.best < 0) return "no point could be evaluated (every configuration was refused)\n";
    const PointResult& b = r.points[size_t(r.best)];
    s += b.feasible ? fmt::format("best ({} under all three targets):\n", objective_name(o))
                    : "no evaluated point meets all three targets; closest (smallest miss):\n";
    for (const auto& [k, v] : b.values.items()) s += fmt::format("  {:<36} {}\n", k, v.dump());
    s += fmt::format("  -> TBT {:.3f} ms (baseline {:.3f}), TTFT {:.2f} ms (baseline {:.2f}), memory {:.1f} MiB, "
                     "{:.1f} tokens/s, {:.3g} pJ/token\n",
                     b.tbt_ms, b.baseline_tbt_ms, b.ttft_ms, b.baseline_ttft_ms, mib(b.memory_bytes), b.tokens_per_s,
                     b.decode_energy_per_token_pj);
    s += verdict_summary(b);
    return s;
}

std::string format_pareto(const TuneResult& r, size_t max_rows) {
    std::string s = fmt::format("Pareto front (TBT vs memory vs TTFT): {} point(s){}\n", r.pareto.size(),
                                r.pareto.size() > max_rows ? fmt::format(", first {} by TBT", max_rows) : "");
    s += fmt::format("  {:>9} {:>11} {:>9} {:>4}  {}\n", "TBT ms", "memory MiB", "TTFT ms", "all", "point (differences from best)");
    const nlohmann::json best = r.best >= 0 ? r.points[size_t(r.best)].values : nlohmann::json::object();
    for (size_t i = 0; i < r.pareto.size() && i < max_rows; ++i) {
        const PointResult& p = r.points[size_t(r.pareto[i])];
        std::string diff;
        for (const auto& [k, v] : p.values.items())
            if (!best.contains(k) || best[k] != v) diff += (diff.empty() ? "" : " ") + k + "=" + v.dump();
        s += fmt::format("  {:>9.3f} {:>11.1f} {:>9.2f} {:>4}  {}\n", p.tbt_ms, mib(p.memory_bytes), p.ttft_ms,
                         p.feasible ? "MET" : "no", diff.empty() ? "(the best point)" : diff);
    }
    return s;
}

std::string format_sensitivity(const TuneResult& r) {
    if (r.sensitivity.empty() || r.best < 0) return "";
    const PointResult& b = r.points[size_t(r.best)];
    std::string s = "sensitivity around the best point (one knob at a time):\n";
    s += fmt::format("  {:<36} {:<18} {:>9} {:>9} {:>9} {:>8}  {}\n", "knob", "value", "TBT ms", "TTFT +ms", "mem +%",
                     "dTBT %", "verdicts");
    for (const auto& row : r.sensitivity) {
        const PointResult& p = row.result;
        const bool at_best = b.values.contains(row.dim) && b.values[row.dim].dump() == nlohmann::json::parse(row.value).dump();
        if (!p.ok) {
            s += fmt::format("  {:<36} {:<18} refused: {}\n", row.dim, row.value, p.error.substr(0, 80));
            continue;
        }
        double ttft_inc = 0, mem_inc = 0;
        for (const auto& v : p.verdicts) {
            if (v.name == "ttft_increase_ms") ttft_inc = v.value;
            if (v.name == "memory_increase") mem_inc = v.value;
        }
        std::string ver;
        for (const auto& v : p.verdicts)
            if (!v.met) ver += (ver.empty() ? "NOT MET: " : ", ") + v.name;
        s += fmt::format("  {:<36} {:<18} {:>9.3f} {:>9.2f} {:>9.2f} {:>+8.1f}  {}{}\n", row.dim, row.value, p.tbt_ms,
                         ttft_inc, 100 * mem_inc, 100 * (p.tbt_ms / b.tbt_ms - 1), ver.empty() ? "all MET" : ver,
                         at_best ? "  <- best" : "");
    }
    return s;
}

std::string format_pairs(const TuneResult& r) {
    bool has = false;
    for (const auto& d : r.dims) has = has || d.name == "hw.pair";
    if (!has) return "";
    std::map<std::string, int> best;  // pair -> best point index
    for (size_t i = 0; i < r.points.size(); ++i) {
        const auto& p = r.points[i];
        if (!p.ok) continue;
        const std::string pair = p.values["hw.pair"].get<std::string>();
        auto it = best.find(pair);
        if (it == best.end() || better(p, r.points[size_t(it->second)])) best[pair] = int(i);
    }
    std::string s = "hardware pairs (NPU soc + PIM preset): best point found on each\n";
    for (const auto& [pair, i] : best) {
        const PointResult& p = r.points[size_t(i)];
        if (p.feasible) {
            s += fmt::format("  {:<40} all targets MET: TBT {:.3f} ms\n", pair, p.tbt_ms);
            continue;
        }
        std::string lim;
        for (const auto& v : p.verdicts)
            if (!v.met) lim += (lim.empty() ? "" : "; ") + v.name + ": " + v.binding_limit;
        s += fmt::format("  {:<40} NOT MET (closest point): {}\n", pair, lim);
    }
    return s;
}

nlohmann::json pareto_json(const TuneResult& r) {
    nlohmann::json a = nlohmann::json::array();
    for (int i : r.pareto) a.push_back(point_to_json(r.points[size_t(i)]));
    return {{"schema", "duet.tune.pareto/1"}, {"axes", {"tbt_ms", "memory_bytes", "ttft_ms"}}, {"points", a}};
}

std::string pareto_svg(const TuneResult& r) {
    const double W = 640, H = 420, L = 70, B = 50, T = 30, R = 20;
    double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
    for (const auto& p : r.points)
        if (p.ok) x0 = std::min(x0, p.tbt_ms), x1 = std::max(x1, p.tbt_ms), y0 = std::min(y0, mib(p.memory_bytes)),
                  y1 = std::max(y1, mib(p.memory_bytes));
    if (x0 > x1) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
    if (x1 - x0 < 1e-12) x1 = x0 + 1;
    if (y1 - y0 < 1e-12) y1 = y0 + 1;
    const svg::Scale X{x0, x1, L, W - R}, Y{y0, y1, H - B, T};
    svg::Document doc(W, H, 11);
    doc.text(L, 18,
             fmt::format("duet tune: TBT vs peak memory ({} points, {} on the Pareto front; red: all targets met)",
                         r.points.size(), r.pareto.size()),
             {.font_size = 13});
    svg::axes(doc, X, Y);
    doc.text(L, H - 15, fmt::format("decode TBT (ms): {:.3f} .. {:.3f}", x0, x1));
    doc.text(12, H / 2 + 60, fmt::format("peak memory (MiB): {:.0f} .. {:.0f}", y0, y1), {.rotate = -90});
    size_t drawn = 0;
    for (const auto& p : r.points) {
        if (!p.ok || drawn++ > 20000) continue;
        doc.circle(X(p.tbt_ms), Y(mib(p.memory_bytes)), 1.5,
                   {.fill = p.feasible ? "#d62728" : "#999999", .fill_opacity = 0.4});
    }
    for (int i : r.pareto) {
        const auto& p = r.points[size_t(i)];
        doc.circle(X(p.tbt_ms), Y(mib(p.memory_bytes)), 4,
                   {.stroke = "#1f77b4",
                    .stroke_width = 1.5,
                    .title = fmt::format("TBT {:.3f} ms, memory {:.1f} MiB, TTFT {:.2f} ms", p.tbt_ms,
                                         mib(p.memory_bytes), p.ttft_ms)});
    }
    return doc.str();
}

std::string best_toml(const Candidate& c, const std::string& reproduce_cmd) {
    std::string s = "# duet tune: best configuration found.\n# Reproduce: " + reproduce_cmd + "\n";
    std::string section;
    for (const auto& f : config::coop_config_fields()) {
        if (f.section != section) s += (section.empty() ? "\n[" : "\n[") + f.section + "]\n", section = f.section;
        s += f.key + " = " + f.show(c.cfg) + "\n";
    }
    return s;
}

std::string reproduce_command(const Candidate& c, const std::string& toml_path, const config::Settings& file_settings,
                              const std::string& settings_path) {
    std::string cmd;
    for (const auto& f : config::settings_fields()) {  // settings the search changed: their DUET_* variables
        if (f.dotted() == "runtime.seq_len" || f.dotted() == "runtime.batch_size") continue;  // flags below
        const std::string v = f.show(c.st);
        if (v != f.show(file_settings))
            cmd += f.env + "=" + (v.size() >= 2 && v.front() == '"' ? v.substr(1, v.size() - 2) : v) + " ";
    }
    cmd += fmt::format("duet bench --settings {} --config {} --model {} --seq-len {} --gen-len {} --batch {}",
                       settings_path, toml_path, c.in.model, c.in.seq_len, c.in.gen_len, c.in.batch);
    if (!c.in.dispatch.empty()) cmd += " --npu-dispatch " + c.in.dispatch;
    if (!c.in.pim.empty()) cmd += " --pim " + c.in.pim;
    cmd += fmt::format(" --tbt-reduction-min {} --ttft-increase-max-ms {} --memory-increase-max {}",
                       c.in.thresholds.tbt_reduction_min, c.in.thresholds.ttft_increase_max_ms,
                       c.in.thresholds.memory_increase_max);
    return cmd;
}

}  // namespace duet::tune
