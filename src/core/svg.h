#pragma once
// The one SVG writer of every chart duet draws (bench --svg, tune --pareto-svg, the serving rate
// sweep, the agent ablation): a document of text, lines, polylines, circles and rectangles, each
// text escaped for XML, and a linear scale from data values to page coordinates.
//
// Units: page coordinates are SVG user units (pixels at 100 %), origin top left, y down.
// Thread safety: a Document is a plain value; use one per thread.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace duet::svg {

// `text` with & < > " ' replaced by their XML entities: safe in element text and attributes.
std::string escape(std::string_view text);

// How a shape is painted; empty strings and zero widths leave the attribute out (SVG's default).
struct Paint {
    std::string fill = "none";
    std::string stroke = "";
    double stroke_width = 0;
    double fill_opacity = 1;
    std::string dash = "";   // stroke-dasharray, e.g. "5,4"
    std::string title = "";  // a tooltip (<title>), escaped
};

struct TextStyle {
    std::string anchor = "";  // text-anchor: "", "middle" or "end"
    std::string fill = "";
    double font_size = 0;       // 0: the document's
    double rotate = 0;          // degrees about (x, y)
    std::string css_class = "";  // class attribute (tests find tick labels by it)
};

using Point = std::pair<double, double>;

class Document {
public:
    // A width x height page on a white background in a sans-serif font of font_size.
    Document(double width, double height, double font_size);

    void text(double x, double y, std::string_view s, const TextStyle& style = {});
    void line(double x1, double y1, double x2, double y2, const Paint& paint);
    void polyline(const std::vector<Point>& points, const Paint& paint);
    void circle(double cx, double cy, double r, const Paint& paint);
    void rect(double x, double y, double w, double h, const Paint& paint);
    // A 10 x 10 swatch of `colour` at (x, y) and its label to the right.
    void legend_entry(double x, double y, const std::string& colour, std::string_view label);

    // The finished document (closes <svg>); the Document can still be added to afterwards.
    std::string str() const;

private:
    std::string body_;
};

// A linear map of the data interval [d0, d1] onto the page interval [p0, p1] (p1 < p0 for a y
// axis that grows upwards). An empty data interval maps everything to p0.
struct Scale {
    double d0 = 0, d1 = 1, p0 = 0, p1 = 1;
    double operator()(double v) const;
};

// Black axis lines along the left and bottom of a plot whose scales are x and y.
void axes(Document& doc, const Scale& x, const Scale& y);

}  // namespace duet::svg
