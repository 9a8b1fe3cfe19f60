// The agent ablation's outputs: the terminal table, the JSON report and the SVG chart.
#include <fmt/format.h>

#include <algorithm>

#include "core/svg.h"
#include "workload/ablation.h"

namespace duet::workload {
namespace {

constexpr double kMiB = 1 << 20;

std::string cell(const AblationSide* s, size_t i) {
    if (!s) return fmt::format("{:>36}", "");
    const AblationRow& r = s->rows[i];
    if (!r.applies) return fmt::format("{:>36}", "n/a");
    return fmt::format("{:>9.1f} {:>5.2f}x {:>11.1f} {:>5.2f}x", r.ttft_mean_ms, r.ttft_ratio,
                       double(r.peak_memory_bytes) / kMiB, r.peak_memory_ratio);
}

std::string verdicts(const char* side_name, const AblationSide& s, const Targets& t) {
    std::string out = fmt::format("{} TTFT all-on/all-off = {:.2f}x (target <= {:.2f}x): {}\n", side_name, s.ttft_ratio,
                                  t.ttft_ratio_max, s.ttft_met ? "MET" : "NOT MET");
    if (!s.ttft_met) out += fmt::format("  binding: {}\n", s.ttft_binding);
    out += fmt::format("{} peak memory all-on/all-off = {:.2f}x (target <= {:.2f}x): {}\n", side_name,
                       s.peak_memory_ratio, t.peak_memory_ratio_max, s.memory_met ? "MET" : "NOT MET");
    if (!s.memory_met) out += fmt::format("  binding: {}\n", s.memory_binding);
    return out;
}

nlohmann::json side_json(const AblationSide& s) {
    nlohmann::json rows = nlohmann::json::array();
    for (const AblationRow& r : s.rows) {
        nlohmann::json j = {{"optimisation", r.name},          {"applies", r.applies},
                            {"ttft_mean_ms", r.ttft_mean_ms},  {"ttft_first_ms", r.ttft_first_ms},
                            {"peak_memory_bytes", r.peak_memory_bytes},
                            {"ttft_ratio", r.ttft_ratio},      {"peak_memory_ratio", r.peak_memory_ratio}};
        if (!r.note.empty()) j["note"] = r.note;
        rows.push_back(j);
    }
    nlohmann::json j = {{"what", s.what},
                        {"ttft_ratio", s.ttft_ratio},
                        {"peak_memory_ratio", s.peak_memory_ratio},
                        {"ttft_met", s.ttft_met},
                        {"peak_memory_met", s.memory_met},
                        {"rows", rows}};
    if (!s.ttft_met) j["ttft_binding"] = s.ttft_binding;
    if (!s.memory_met) j["peak_memory_binding"] = s.memory_binding;
    return j;
}

}  // namespace

std::string format_ablation(const AgentAblation& a) {
    const AblationSide* real = a.real ? &*a.real : nullptr;
    const AblationSide* mod = a.modelled ? &*a.modelled : nullptr;
    std::string out = fmt::format("agent workload: {}, {} model calls, {} tokens in the final history\n", a.workload,
                                  a.n_calls, a.session_tokens);
    if (real) out += fmt::format("real:     {}\n", real->what);
    if (mod) out += fmt::format("modelled: {}\n", mod->what);
    out += fmt::format("{:<14}{:>36}  {:>36}\n", "", "real (mean TTFT, peak RSS)", "modelled (mean TTFT, peak memory)");
    out += fmt::format("{:<14}{:>36}  {:>36}\n", "optimisation", "TTFT ms   x off    peak MiB   x off",
                       "TTFT ms   x off    peak MiB   x off");
    const size_t n = real ? real->rows.size() : mod->rows.size();
    for (size_t i = 0; i < n; ++i) {
        const std::string& name = real ? real->rows[i].name : mod->rows[i].name;
        out += fmt::format("{:<14}{}  {}\n", name, cell(real, i), cell(mod, i));
    }
    for (const AblationSide* s : {real, mod})
        if (s)
            for (const AblationRow& r : s->rows)
                if (!r.applies) out += fmt::format("n/a {} ({}): {}\n", r.name, s == real ? "real" : "modelled", r.note);
    if (real) out += verdicts("real:    ", *real, a.targets);
    if (mod) out += verdicts("modelled:", *mod, a.targets);
    return out;
}

nlohmann::json ablation_json(const AgentAblation& a) {
    nlohmann::json agent = nlohmann::json::object();
    if (a.real) agent["real"] = side_json(*a.real);
    if (a.modelled) agent["modelled"] = side_json(*a.modelled);
    return {{"schema", "duet.agent/1"},
            {"workload", {{"source", a.workload}, {"calls", a.n_calls}, {"session_tokens", a.session_tokens}}},
            {"targets", {{"ttft_ratio_max", a.targets.ttft_ratio_max},
                         {"peak_memory_ratio_max", a.targets.peak_memory_ratio_max}}},
            {"agent", agent}};
}

std::string ablation_svg(const AgentAblation& a) {
    // One group of bars per row: TTFT ratio and memory ratio, real (solid) and modelled (light).
    std::vector<const AblationSide*> sides;
    if (a.real) sides.push_back(&*a.real);
    if (a.modelled) sides.push_back(&*a.modelled);
    const size_t n_rows = sides.empty() ? 0 : sides.front()->rows.size();
    const double W = 760, H = 340, left = 50, top = 40, plot_h = 220, group_w = (W - left - 20) / double(std::max<size_t>(n_rows, 1));
    const double bar_w = group_w / double(2 * sides.size() + 1);
    double y_max = 1.2;
    for (const AblationSide* s : sides)
        for (const AblationRow& r : s->rows) y_max = std::max({y_max, r.ttft_ratio * 1.1, r.peak_memory_ratio * 1.1});
    const svg::Scale y_of{0, y_max, top + plot_h, top};
    svg::Document doc(W, H, 11);
    doc.text(left, 20, "agent workload ablation: ratio to all-off (lower is better)", {.font_size = 14});
    const char* colours[2][2] = {{"#1f77b4", "#aec7e8"}, {"#d62728", "#ff9896"}};  // [ttft|mem][real|modelled]
    for (double target : {a.targets.ttft_ratio_max, a.targets.peak_memory_ratio_max, 1.0}) {
        doc.line(left, y_of(target), W - 20, y_of(target), {.stroke = "#888", .dash = "4 3"});
        doc.text(4, y_of(target) + 4, fmt::format("{:.2f}x", target));
    }
    for (size_t i = 0; i < n_rows; ++i) {
        const double x0 = left + group_w * double(i) + bar_w / 2;
        size_t b = 0;
        for (int metric = 0; metric < 2; ++metric)
            for (size_t s = 0; s < sides.size(); ++s, ++b) {
                const AblationRow& r = sides[s]->rows[i];
                const double v = metric == 0 ? r.ttft_ratio : r.peak_memory_ratio;
                const size_t colour_side = sides[s] == (a.real ? &*a.real : nullptr) ? 0 : 1;
                doc.rect(x0 + bar_w * double(b), y_of(v), bar_w * 0.9, top + plot_h - y_of(v),
                         {.fill = colours[metric][colour_side], .fill_opacity = r.applies ? 1.0 : 0.25});
            }
        doc.text(x0 + group_w / 2 - bar_w / 2, top + plot_h + 16, sides.front()->rows[i].name, {.anchor = "middle"});
    }
    const char* legend[] = {"TTFT real", "TTFT modelled", "memory real", "memory modelled"};
    for (int k = 0; k < 4; ++k) doc.legend_entry(left + 170 * k, H - 30, colours[k / 2][k % 2], legend[k]);
    return doc.str();
}

}  // namespace duet::workload
