// core/svg.h: escaping, the elements a chart is made of, and a document that an independent XML
// parser (Python's xml.etree from Debian's python3) reads back with every text intact.
#include "core/svg.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace duet::svg {
namespace {

TEST(Svg, EscapeReplacesEveryMarkupCharacter) {
    EXPECT_EQ(escape(R"(a<b>&"c"'d')"), "a&lt;b&gt;&amp;&quot;c&quot;&apos;d&apos;");
    EXPECT_EQ(escape("plain text 1.5 ms"), "plain text 1.5 ms");
    EXPECT_EQ(escape(""), "");
}

TEST(Svg, ScaleMapsTheDataIntervalOntoThePage) {
    const Scale x{0, 10, 100, 300};
    EXPECT_DOUBLE_EQ(x(0), 100);
    EXPECT_DOUBLE_EQ(x(5), 200);
    EXPECT_DOUBLE_EQ(x(10), 300);
    const Scale y{2, 4, 400, 100};  // upwards
    EXPECT_DOUBLE_EQ(y(2), 400);
    EXPECT_DOUBLE_EQ(y(3), 250);
    EXPECT_DOUBLE_EQ(Scale({5, 5, 7, 9})(123), 7);  // an empty interval: everything at p0
}

TEST(Svg, ElementsCarryTheirAttributes) {
    Document d(200, 100, 12);
    d.circle(1, 2, 3, {.fill = "#d62728", .fill_opacity = 0.4});
    d.line(0, 0, 10, 10, {.stroke = "gray", .dash = "5,4"});
    d.rect(5, 6, 7, 8, {.fill = "blue", .title = "KV <cache>"});
    d.text(50, 60, "tick", {.anchor = "middle", .css_class = "xtick"});
    d.text(12, 80, "up", {.rotate = -90});
    d.polyline({{0, 1}, {2.26, 3}}, {.stroke = "red", .stroke_width = 1.5});
    const std::string s = d.str();
    EXPECT_EQ(s.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"200.0\" height=\"100.0\"", 0), 0u);
    EXPECT_NE(s.find("<circle cx=\"1.0\" cy=\"2.0\" r=\"3.0\" fill=\"#d62728\" fill-opacity=\"0.40\"/>"), std::string::npos);
    EXPECT_NE(s.find("<line x1=\"0.0\" y1=\"0.0\" x2=\"10.0\" y2=\"10.0\" fill=\"none\" stroke=\"gray\" "
                     "stroke-dasharray=\"5,4\"/>"),
              std::string::npos);
    EXPECT_NE(s.find("<rect x=\"5.0\" y=\"6.0\" width=\"7.0\" height=\"8.0\" fill=\"blue\"><title>KV &lt;cache&gt;"
                     "</title></rect>"),
              std::string::npos);
    EXPECT_NE(s.find("<text x=\"50.0\" y=\"60.0\" class=\"xtick\" text-anchor=\"middle\">tick</text>"), std::string::npos);
    EXPECT_NE(s.find("transform=\"rotate(-90.0 12.0 80.0)\""), std::string::npos);
    EXPECT_NE(s.find("<polyline points=\"0.0,1.0 2.3,3.0\" fill=\"none\" stroke=\"red\" stroke-width=\"1.5\"/>"),
              std::string::npos);
    EXPECT_EQ(s.substr(s.size() - 7), "</svg>\n");
}

// Every text and tooltip, hostile characters included, reads back unchanged through a real XML
// parser: a model or preset name with '&' or '<' cannot break the file.
TEST(Svg, AnXmlParserReadsEveryTextBack) {
    if (std::system("/usr/bin/python3 -c 'import xml.etree.ElementTree' 2>/dev/null") != 0)
        GTEST_SKIP() << "/usr/bin/python3 is not installed";
    const std::string hostile = R"(model "a&b" <c> 'd')";
    Document d(300, 200, 11);
    d.text(10, 20, hostile, {.font_size = 14});
    d.circle(5, 5, 2, {.fill = "red", .title = hostile + " tooltip"});
    d.legend_entry(10, 150, "#4e79a7", "KV cache & weights");
    const std::filesystem::path f =
        std::filesystem::temp_directory_path() / ("duet_svg_test_" + std::to_string(getpid()) + ".svg");
    std::ofstream(f) << d.str();
    const std::string cmd =
        "/usr/bin/python3 -c \"import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); "
        "print('|'.join(e.text for e in r.iter() if e.text and e.text.strip()))\" " + f.string();
    FILE* p = ::popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string out;
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    EXPECT_EQ(::pclose(p), 0);
    std::filesystem::remove(f);
    EXPECT_EQ(out, hostile + "|" + hostile + " tooltip|KV cache & weights\n");
}

}  // namespace
}  // namespace duet::svg
