#include "serving/rate_sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace duet::serving {

bool meets_slo(const ServingSummary& s, double attainment) {
    return s.requests > 0 && double(s.good) >= attainment * double(s.requests);
}

SweepResult rate_sweep(const std::function<ServingSummary(double)>& run, double start_rps, double attainment,
                       int refine) {
    DUET_CHECK(start_rps > 0 && attainment > 0 && attainment <= 1);
    SweepResult out;
    auto probe = [&](double r) {
        SweepPoint p{r, run(r), false};
        p.meets = meets_slo(p.summary, attainment);
        out.points.push_back(p);
        return p.meets;
    };
    double lo = 0, hi = 0;  // last rate that met the SLOs, first that did not
    double r = start_rps;
    if (probe(r)) {
        lo = r;
        for (int i = 0; i < 20 && probe(r * 2); ++i) r *= 2, lo = r;
        hi = lo * 2;
    } else {
        hi = r;
        for (int i = 0; i < 20; ++i) {
            r /= 2;
            if (probe(r)) {
                lo = r;
                break;
            }
            hi = r;
        }
    }
    for (int i = 0; i < refine && lo > 0; ++i) {
        const double mid = std::sqrt(lo * hi);
        (probe(mid) ? lo : hi) = mid;
    }
    out.max_rate_rps = lo;
    std::sort(out.points.begin(), out.points.end(),
              [](const SweepPoint& a, const SweepPoint& b) { return a.rate_rps < b.rate_rps; });
    return out;
}

std::string sweep_svg(const std::string& title, const std::vector<std::string>& names,
                      const std::vector<SweepResult>& sweeps, const Slo& slo) {
    const double W = 960, H = 420, top = 50, plot_w = 360, plot_h = 280;
    const double lefts[2] = {70, 560};
    std::string s = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
        "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        "<text x=\"{}\" y=\"20\" font-size=\"14\">{}</text>\n",
        W, H, lefts[0], title);
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
        s += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", left, top - 8, label);
        s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>\n", left, top,
                         top + plot_h);
        s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"black\"/>\n", left, top + plot_h,
                         left + plot_w);
        for (int i = 0; i <= 4; ++i) {
            const double y = top + plot_h - plot_h * i / 4, x = left + plot_w * i / 4;
            s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:.1f}</text>\n", left - 4, y + 4,
                             max_y * i / 4);
            s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{:.2f}</text>\n", x, top + plot_h + 16,
                             max_x * i / 4);
        }
        s += fmt::format("<text x=\"{}\" y=\"{}\">achieved requests/s</text>\n", left + plot_w / 2 - 50,
                         top + plot_h + 34);
        if (slo_ms > 0) {
            const double y = top + plot_h - plot_h * slo_ms / max_y;
            s += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"gray\" "
                             "stroke-dasharray=\"5,4\"/><text x=\"{}\" y=\"{:.1f}\" fill=\"gray\">SLO {:g} ms</text>\n",
                             left, y, left + plot_w, y, left + plot_w - 80, y - 4, slo_ms);
        }
        for (size_t k = 0; k < sweeps.size(); ++k) {
            std::string pts;
            for (const SweepPoint& p : sweeps[k].points) {
                const double x = left + plot_w * p.summary.requests_per_s / max_x;
                const double y = top + plot_h - plot_h * std::min(y_of(p), max_y) / max_y;
                pts += fmt::format("{:.1f},{:.1f} ", x, y);
                s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>{}: {:g} req/s offered, "
                                 "{:.3f} achieved, {} {:.2f} ms</title></circle>\n",
                                 x, y, colors[k % 2], names[k], p.rate_rps, p.summary.requests_per_s, label, y_of(p));
            }
            s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n",
                             colors[k % 2], pts);
            if (panel == 0)
                s += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"{}\">{} (max {:.3g} req/s within the SLOs)</text>\n",
                                 left + 10, top + 15 + 15 * double(k), colors[k % 2], names[k], sweeps[k].max_rate_rps);
        }
    }
    s += "</svg>\n";
    return s;
}

}  // namespace duet::serving
