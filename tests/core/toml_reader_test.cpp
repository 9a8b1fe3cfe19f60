#include "core/toml_reader.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "../error_message.h"

namespace duet {
namespace {

using test::error_of;

TEST(TomlReader, ReadsAndValidates) {
    auto doc = TomlDoc::parse_string("[timing]\ntCK_ns = 1.25\nCL = 17\nname = \"lpddr5\"\nok = true\n", "mem.toml");
    auto t = doc.section("timing");
    EXPECT_DOUBLE_EQ(t.get_double("tCK_ns", 0.1, 10), 1.25);
    EXPECT_EQ(t.get_int("CL", 1, 100), 17);
    EXPECT_DOUBLE_EQ(t.get_double("CL", 1, 100), 17.0);  // integers are numbers too
    EXPECT_EQ(t.get_enum("name", {"lpddr5", "hbm3"}), "lpddr5");
    EXPECT_TRUE(t.get_bool("ok"));
    EXPECT_EQ(t.get_int_or("absent", 7, 0, 10), 7);
    t.finish();
    doc.finish();
}

TEST(TomlReader, ErrorsNameFileKeyValueAndAllowed) {
    auto doc = TomlDoc::parse_string("[t]\nx = 12\ns = \"ddr9\"\nf = \"fast\"\n", "c.toml");
    auto t = doc.section("t");
    EXPECT_EQ(error_of([&] { t.get_int("x", 0, 10); }), "c.toml: key 't.x' = 12 is out of range (allowed: 0 to 10)");
    EXPECT_EQ(error_of([&] { t.get_enum("s", {"lpddr5", "hbm3"}); }),
              "c.toml: key 't.s' = \"ddr9\" is not allowed (allowed: lpddr5, hbm3)");
    EXPECT_EQ(error_of([&] { t.get_double("f", 0, 1); }), "c.toml: key 't.f' has type string, expected number");
    EXPECT_EQ(error_of([&] { t.get_bool("missing"); }), "c.toml: missing key 't.missing' (true or false)");
    EXPECT_EQ(error_of([&] { doc.section("nope"); }), "c.toml: missing section [nope]");
}

TEST(TomlReader, UnknownKeyIsAnError) {
    auto doc = TomlDoc::parse_string("[t]\nalignment = 128\nalignmnet = 64\n", "c.toml");
    auto t = doc.section("t");
    t.get_int("alignment", 1, 4096);
    EXPECT_EQ(error_of([&] { t.finish(); }), "c.toml: unknown key 't.alignmnet' (allowed here: alignment)");
}

TEST(TomlReader, ParseErrorNamesLine) {
    EXPECT_EQ(error_of([] { TomlDoc::parse_string("a = 1\nb = = 2\n", "bad.toml"); }).rfind("bad.toml: TOML parse error at line 2", 0),
              0u);
}

}  // namespace
// A dotted key of 200 000 parts overflowed the stack (one nested table per part, built and
// destroyed recursively). Now more than 64 parts, or 64 levels of inline tables/arrays, are
// refused before toml++ sees the text; dots in strings, comments and values do not count.
TEST(TomlReader, DottedKeysAndNestingHaveABudget) {
    std::string key = "a";
    for (int i = 0; i < 200000; ++i) key += ".a";
    EXPECT_EQ(error_of([&] { TomlDoc::parse_string("x = 1\n" + key + " = 1\n", "c.toml"); }),
              "c.toml: line 2: a key has more than 64 dotted parts (allowed: at most 64)");
    EXPECT_EQ(error_of([&] { TomlDoc::parse_string("[" + key + "]\n", "c.toml"); }),
              "c.toml: line 1: a key has more than 64 dotted parts (allowed: at most 64)");
    EXPECT_EQ(error_of([&] { TomlDoc::parse_string("x = {" + key + " = 1}\n", "c.toml"); }),
              "c.toml: line 1: a key has more than 64 dotted parts (allowed: at most 64)");
    EXPECT_EQ(error_of([&] { TomlDoc::parse_string("x = " + std::string(100, '[') + std::string(100, ']') + "\n", "c.toml"); }),
              "c.toml: line 1: inline tables and arrays are nested deeper than 64 levels (allowed: at most 64)");
    // Not keys: dots in values, strings and comments.
    std::string floats = "v = [";
    for (int i = 0; i < 500; ++i) floats += "1.5, ";
    floats += "2.5]\n";
    const std::string ok = "# a.b.c.d " + std::string(200, '.') + "\n[t]\ns = \"" + std::string(200, '.') + "\"\n" +
                           floats + "\"q.u.o.t.e.d\" = 1\n[a.b.c]\nx = 1.25\n";
    EXPECT_EQ(error_of([&] { TomlDoc::parse_string(ok, "c.toml"); }), "(no error)");
}

}  // namespace duet
