#include "core/svg.h"

#include <fmt/format.h>

namespace duet::svg {

std::string escape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&apos;"; break;
            default: out += c;
        }
    }
    return out;
}

namespace {

// ` name="value"`, the value escaped. Page coordinates go through num(): a tenth of a unit is
// finer than any screen shows.
std::string attr(const char* name, std::string_view value) { return fmt::format(" {}=\"{}\"", name, escape(value)); }
std::string num(double v) { return fmt::format("{:.1f}", v); }

std::string paint_attrs(const Paint& p) {
    std::string s = attr("fill", p.fill);
    if (!p.stroke.empty()) s += attr("stroke", p.stroke);
    if (p.stroke_width > 0) s += attr("stroke-width", num(p.stroke_width));
    if (p.fill_opacity < 1) s += attr("fill-opacity", fmt::format("{:.2f}", p.fill_opacity));
    if (!p.dash.empty()) s += attr("stroke-dasharray", p.dash);
    return s;
}

// "/>" or, with a tooltip, "><title>...</title></tag>".
std::string close(const Paint& p, const char* tag) {
    if (p.title.empty()) return "/>\n";
    return fmt::format("><title>{}</title></{}>\n", escape(p.title), tag);
}

}  // namespace

Document::Document(double width, double height, double font_size) {
    body_ = fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\"{}{} font-family=\"sans-serif\"{}>\n"
                        "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
                        attr("width", num(width)), attr("height", num(height)), attr("font-size", num(font_size)));
}

void Document::text(double x, double y, std::string_view s, const TextStyle& st) {
    body_ += fmt::format("<text{}{}", attr("x", num(x)), attr("y", num(y)));
    if (!st.css_class.empty()) body_ += attr("class", st.css_class);
    if (!st.anchor.empty()) body_ += attr("text-anchor", st.anchor);
    if (!st.fill.empty()) body_ += attr("fill", st.fill);
    if (st.font_size > 0) body_ += attr("font-size", num(st.font_size));
    if (st.rotate != 0) body_ += attr("transform", fmt::format("rotate({} {} {})", num(st.rotate), num(x), num(y)));
    body_ += fmt::format(">{}</text>\n", escape(s));
}

void Document::line(double x1, double y1, double x2, double y2, const Paint& p) {
    body_ += fmt::format("<line{}{}{}{}{}{}", attr("x1", num(x1)), attr("y1", num(y1)), attr("x2", num(x2)),
                         attr("y2", num(y2)), paint_attrs(p), close(p, "line"));
}

void Document::polyline(const std::vector<Point>& points, const Paint& p) {
    std::string pts;
    for (const auto& [x, y] : points) {
        if (!pts.empty()) pts += ' ';
        pts += fmt::format("{:.1f},{:.1f}", x, y);
    }
    body_ += fmt::format("<polyline{}{}{}", attr("points", pts), paint_attrs(p), close(p, "polyline"));
}

void Document::circle(double cx, double cy, double r, const Paint& p) {
    body_ += fmt::format("<circle{}{}{}{}{}", attr("cx", num(cx)), attr("cy", num(cy)), attr("r", num(r)),
                         paint_attrs(p), close(p, "circle"));
}

void Document::rect(double x, double y, double w, double h, const Paint& p) {
    body_ += fmt::format("<rect{}{}{}{}{}{}", attr("x", num(x)), attr("y", num(y)), attr("width", num(w)),
                         attr("height", num(h)), paint_attrs(p), close(p, "rect"));
}

void Document::legend_entry(double x, double y, const std::string& colour, std::string_view label) {
    rect(x, y, 10, 10, {.fill = colour});
    text(x + 14, y + 9, label);
}

std::string Document::str() const { return body_ + "</svg>\n"; }

double Scale::operator()(double v) const {
    if (d1 == d0) return p0;
    return p0 + (v - d0) / (d1 - d0) * (p1 - p0);
}

void axes(Document& doc, const Scale& x, const Scale& y) {
    const Paint black{.stroke = "black"};
    doc.line(x.p0, y.p1, x.p0, y.p0, black);  // y axis, at the left
    doc.line(x.p0, y.p0, x.p1, y.p0, black);  // x axis, at the bottom
}

}  // namespace duet::svg
