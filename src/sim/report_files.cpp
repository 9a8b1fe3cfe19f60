#include "sim/report_files.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "core/error.h"
#include "core/svg.h"

namespace duet::sim {

void write_file_atomic(const std::string& path, const std::string& text) {
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) fail("{}: cannot write file", path);
        out << text;
        out.flush();
        if (!out) {
            std::remove(tmp.c_str());
            fail("{}: write failed", path);
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        fail("{}: cannot rename {} to it", path, tmp);
    }
}

// One Perfetto process (track group) per run and device or link: "target npu_pim_coop: pim1",
// its threads the device's compute queue, conversion stream and host launches.
std::string chrome_trace_json(const BenchReport& r) {
    nlohmann::json events = nlohmann::json::array();
    int run_index = 0;
    for (const RunReport* run : {&r.baseline, &r.target}) {
        const std::string run_name = (run_index == 0 ? "baseline " : "target ") + run->policy;
        const auto& tracks = run->timeline.tracks;
        std::vector<std::string> groups;
        std::vector<int> pid_of(tracks.size()), tid_of(tracks.size());
        for (size_t t = 0; t < tracks.size(); ++t) {
            auto g = std::find(groups.begin(), groups.end(), tracks[t].group);
            if (g == groups.end()) {
                groups.push_back(tracks[t].group);
                g = groups.end() - 1;
                const int pid = 1 + run_index * 1000 + int(g - groups.begin());
                events.push_back({{"ph", "M"}, {"pid", pid}, {"name", "process_name"},
                                  {"args", {{"name", run_name + ": " + tracks[t].group}}}});
                events.push_back({{"ph", "M"}, {"pid", pid}, {"name", "process_sort_index"}, {"args", {{"sort_index", pid}}}});
            }
            pid_of[t] = 1 + run_index * 1000 + int(g - groups.begin());
            tid_of[t] = int(t);
            events.push_back({{"ph", "M"}, {"pid", pid_of[t]}, {"tid", tid_of[t]}, {"name", "thread_name"},
                              {"args", {{"name", tracks[t].name}}}});
        }
        for (const TimelineEvent& e : run->timeline.events)
            events.push_back({{"ph", "X"}, {"pid", pid_of[size_t(e.track)]}, {"tid", tid_of[size_t(e.track)]},
                              {"name", e.name}, {"cat", phase_name(e.phase)}, {"ts", e.start_ns / 1e3},
                              {"dur", e.dur_ns / 1e3}});
        ++run_index;
    }
    return nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ns"}}.dump();
}

std::string svg_chart(const BenchReport& r) {
    const double left = 70, plot_w = 520, top = 40, plot_h = 300;
    svg::Document doc(900, 420, 12);
    doc.text(left, 20, fmt::format("{}: TBT per token (ms), prompt {}", r.model, r.seq_len), {.font_size = 14});
    double max_tbt = 0;
    size_t n = 0;
    for (const RunReport* run : {&r.baseline, &r.target}) {
        for (double v : run->timeline.tbt_ns) max_tbt = std::max(max_tbt, v);
        n = std::max(n, run->timeline.tbt_ns.size());
    }
    if (max_tbt <= 0) max_tbt = 1;
    const svg::Scale xs{0, double(n > 1 ? n - 1 : 1), left, left + plot_w};
    const svg::Scale ys{0, max_tbt, top + plot_h, top};
    svg::axes(doc, xs, ys);
    for (int i = 0; i <= 4; ++i) {
        const double v = max_tbt * i / 4;
        doc.text(left - 4, ys(v) + 4, fmt::format("{:.3f}", v / 1e6), {.anchor = "end"});
    }
    // x ticks: decode token numbers (1-based) at 0, 1/4, ..., 1 of the axis
    for (int i = 0; i <= 4; ++i) {
        const double x = left + plot_w * i / 4;
        const size_t token = 1 + (n > 1 ? size_t(std::llround(double(n - 1) * i / 4)) : 0);
        doc.line(x, top + plot_h, x, top + plot_h + 4, {.stroke = "black"});
        doc.text(x, top + plot_h + 16, std::to_string(token), {.anchor = "middle", .css_class = "xtick"});
    }
    doc.text(left + plot_w / 2 - 30, top + plot_h + 32, "decode token");
    const char* colors[2] = {"#1f77b4", "#d62728"};
    int ci = 0;
    for (const RunReport* run : {&r.baseline, &r.target}) {
        std::vector<svg::Point> pts;
        const auto& v = run->timeline.tbt_ns;
        for (size_t i = 0; i < v.size(); ++i) pts.emplace_back(xs(double(i)), ys(v[i]));
        doc.polyline(pts, {.stroke = colors[ci], .stroke_width = 1.5});
        doc.text(left + 10, top + 15 + 15 * ci, run->policy, {.fill = colors[ci]});
        ++ci;
    }
    // memory breakdown: one stacked bar per run
    const double bx = 660, bw = 70, max_mem = double(std::max(r.baseline.memory.total_bytes(), r.target.memory.total_bytes()));
    doc.text(bx, 20, "Peak memory (MiB)", {.font_size = 14});
    const char* part_colors[6] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948"};
    const char* part_names[6] = {"weights", "block index", "KV cache", "activations", "conversion", "workspace"};
    int bi = 0;
    for (const RunReport* run : {&r.baseline, &r.target}) {
        const MemoryBreakdown& m = run->memory;
        const uint64_t parts[6] = {m.weights_bytes, m.block_index_bytes, m.kv_cache_bytes, m.activations_bytes,
                                   m.conversion_bytes, m.workspace_bytes};
        double y = top + plot_h;
        const double x = bx + bi * (bw + 30);
        for (int p = 0; p < 6; ++p) {
            const double h = max_mem > 0 ? plot_h * double(parts[p]) / max_mem : 0;
            y -= h;
            doc.rect(x, y, bw, h,
                     {.fill = part_colors[p],
                      .title = fmt::format("{} {:.1f} MiB", part_names[p], double(parts[p]) / (1 << 20))});
        }
        doc.text(x, top + plot_h + 15, run->policy);
        doc.text(x, y - 4, fmt::format("{:.0f}", double(m.total_bytes()) / (1 << 20)));
        ++bi;
    }
    for (int p = 0; p < 6; ++p)
        doc.legend_entry(bx + (p % 3) * 80, top + plot_h + 35 + (p / 3) * 15, part_colors[p], part_names[p]);
    return doc.str();
}

}  // namespace duet::sim
