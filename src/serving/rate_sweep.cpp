#include "serving/rate_sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/svg.h"

namespace duet::serving {

bool meets_slo(const ServingSummary& s, double attainment) {
    return s.requests > 0 && double(s.good) >= attainment * double(s.requests);
}

SweepResult rate_sweep(const std::function<ServingSummary(double)>& run, double start_rps, double attainment,
                       int refine) {
    return rate_sweep_batched(
        [&](const std::vector<double>& rates) {
            std::vector<ServingSummary> out;
            for (double r : rates) out.push_back(run(r));
            return out;
        },
        1, start_rps, attainment, refine);
}

SweepResult rate_sweep_batched(const BatchRun& run_batch, int width, double start_rps, double attainment,
                               int refine) {
    DUET_CHECK(start_rps > 0 && attainment > 0 && attainment <= 1 && width >= 1);
    SweepResult out;
    // Tries `rates` together; returns whether each met the SLOs.
    auto probe = [&](const std::vector<double>& rates) {
        const std::vector<ServingSummary> got = run_batch(rates);
        DUET_CHECK(got.size() == rates.size(), "{} summaries for {} rates", got.size(), rates.size());
        std::vector<bool> meets;
        for (size_t i = 0; i < rates.size(); ++i) {
            out.points.push_back({rates[i], got[i], meets_slo(got[i], attainment)});
            meets.push_back(out.points.back().meets);
        }
        return meets;
    };
    double lo = 0, hi = 0;  // last rate that met the SLOs, first that did not
    const bool start_meets = probe({start_rps})[0];
    const double factor = start_meets ? 2.0 : 0.5;
    double r = start_rps;
    (start_meets ? lo : hi) = r;
    for (int tried = 0; tried < 20 && (start_meets ? hi == 0 : lo == 0);) {
        std::vector<double> rates;
        for (int i = 0; i < width && tried < 20; ++i, ++tried) rates.push_back(r *= factor);
        const std::vector<bool> meets = probe(rates);
        for (size_t i = 0; i < rates.size(); ++i) {  // the first change of verdict along the walk
            if (start_meets && !meets[i]) {
                hi = rates[i];
                break;
            }
            if (!start_meets && meets[i]) {
                lo = rates[i];
                break;
            }
            (start_meets ? lo : hi) = rates[i];
        }
    }
    if (start_meets && hi == 0) hi = lo * 2;
    const int rounds = width == 1 ? refine : int(std::ceil(double(refine) / std::log2(double(width) + 1)));
    for (int i = 0; i < rounds && lo > 0; ++i) {
        std::vector<double> rates;
        if (width == 1) rates.push_back(std::sqrt(lo * hi));
        else
            for (int k = 1; k <= width; ++k) rates.push_back(lo * std::pow(hi / lo, double(k) / double(width + 1)));
        const std::vector<bool> meets = probe(rates);
        for (size_t k = 0; k < rates.size(); ++k) {
            if (!meets[k]) {
                hi = rates[k];
                break;
            }
            lo = rates[k];
        }
    }
    out.max_rate_rps = lo;
    std::sort(out.points.begin(), out.points.end(),
              [](const SweepPoint& a, const SweepPoint& b) { return a.rate_rps < b.rate_rps; });
    return out;
}

std::string sweep_svg(const std::string& title, const std::vector<std::string>& names,
                      const std::vector<SweepResult>& sweeps, const Slo& slo) {
    const double top = 50, plot_w = 360, plot_h = 280;
    const double lefts[2] = {70, 560};
    svg::Document doc(960, 420, 12);
    doc.text(lefts[0], 20, title, {.font_size = 14});
    const char* colors[2] = {"#1f77b4", "#d62728"};
    double max_x = 0;
    for (const SweepResult& sw : sweeps)
        for (const SweepPoint& p : sw.points) max_x = std::max(max_x, p.summary.requests_per_s);
    if (max_x <= 0) max_x = 1;
    for (int panel = 0; panel < 2; ++panel) {
        const double left = lefts[panel];
        const char* label = panel == 0 ? "p99 TTFT (ms)" : "p99 TPOT (ms)";
        const double slo_ms = panel == 0 ? slo.ttft_ms : slo.tpot_ms;
        auto y_of = [&](const SweepPoint& p) { return panel == 0 ? p.summary.ttft_ms.p99 : p.summary.tpot_ms.p99; };
        double max_y = slo_ms > 0 ? slo_ms * 2 : 0;
        for (const SweepResult& sw : sweeps)
            for (const SweepPoint& p : sw.points) max_y = std::max(max_y, y_of(p));
        if (slo_ms > 0) max_y = std::min(max_y, slo_ms * 4);  // past 4x the SLO the curve leaves the plot
        if (max_y <= 0) max_y = 1;
        const svg::Scale xs{0, max_x, left, left + plot_w}, ys{0, max_y, top + plot_h, top};
        doc.text(left, top - 8, label);
        svg::axes(doc, xs, ys);
        for (int i = 0; i <= 4; ++i) {
            doc.text(left - 4, ys(max_y * i / 4) + 4, fmt::format("{:.1f}", max_y * i / 4), {.anchor = "end"});
            doc.text(xs(max_x * i / 4), top + plot_h + 16, fmt::format("{:.2f}", max_x * i / 4), {.anchor = "middle"});
        }
        doc.text(left + plot_w / 2 - 50, top + plot_h + 34, "achieved requests/s");
        if (slo_ms > 0) {
            doc.line(left, ys(slo_ms), left + plot_w, ys(slo_ms), {.stroke = "gray", .dash = "5,4"});
            doc.text(left + plot_w - 80, ys(slo_ms) - 4, fmt::format("SLO {:g} ms", slo_ms), {.fill = "gray"});
        }
        for (size_t k = 0; k < sweeps.size(); ++k) {
            std::vector<svg::Point> pts;
            for (const SweepPoint& p : sweeps[k].points) {
                const double x = xs(p.summary.requests_per_s), y = ys(std::min(y_of(p), max_y));
                pts.emplace_back(x, y);
                doc.circle(x, y, 3,
                           {.fill = colors[k % 2],
                            .title = fmt::format("{}: {:g} req/s offered, {:.3f} achieved, {} {:.2f} ms", names[k],
                                                 p.rate_rps, p.summary.requests_per_s, label, y_of(p))});
            }
            doc.polyline(pts, {.stroke = colors[k % 2], .stroke_width = 1.5});
            if (panel == 0)
                doc.text(left + 10, top + 15 + 15 * double(k),
                         fmt::format("{} (max {:.3g} req/s within the SLOs)", names[k], sweeps[k].max_rate_rps),
                         {.fill = colors[k % 2]});
        }
    }
    return doc.str();
}

nlohmann::json sweep_to_json(const SweepResult& r) {
    nlohmann::json pts = nlohmann::json::array();
    for (const SweepPoint& p : r.points)
        pts.push_back({{"rate_rps", p.rate_rps},
                       {"meets", p.meets},
                       {"requests_per_s", p.summary.requests_per_s},
                       {"output_tokens_per_s", p.summary.output_tokens_per_s},
                       {"goodput_rps", p.summary.goodput_rps},
                       {"ttft_ms_p99", p.summary.ttft_ms.p99},
                       {"tpot_ms_p99", p.summary.tpot_ms.p99}});
    return {{"max_rate_rps", r.max_rate_rps}, {"points", pts}};
}

}  // namespace duet::serving
