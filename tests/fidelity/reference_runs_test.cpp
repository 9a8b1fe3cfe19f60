// The harness's data files (configs/hw/references/*.toml, written by tools/references/*.sh):
// read back exactly, absent files are "not run", malformed ones are errors naming the file and
// key; and the committed files carry their source.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "hw/calibration/reference_runs.h"

using namespace duet::hw::calibration;
namespace fs = std::filesystem;

namespace {

struct TempConfig {
    fs::path dir;
    TempConfig() {
        dir = fs::temp_directory_path() / fs::path("duet_refruns_" + std::to_string(::getpid()));
        fs::create_directories(dir / "hw" / "references");
    }
    ~TempConfig() { fs::remove_all(dir); }
    void write(const std::string& name, const std::string& text) const {
        std::ofstream(dir / "hw" / "references" / (name + ".toml")) << text;
    }
    std::string path(const std::string& name) const { return (dir / "hw" / "references" / (name + ".toml")).string(); }
};

const char* kSource =
    "[source]\nrepo = \"o/r\"\ncommit = \"0123456789abcdef\"\ncommand = \"tools/references/x.sh <checkout>: run\"\n"
    "machine = \"x86_64\"\ndate = \"2026-01-02\"\n";

std::string error_of(const TempConfig& c, const std::string& name) {
    try {
        load_reference_file(name, c.dir.string());
    } catch (const duet::Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(ReferenceRuns, ReadsSourceAndRunsBack) {
    TempConfig c;
    c.write("x", std::string(kSource) + "\n[b_run]\nm = 512\nshare_pct = 91.25\npattern = \"stream\"\n\n[a_run]\nk = 2\n");
    const auto f = load_reference_file("x", c.dir.string());
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->repo, "o/r");
    EXPECT_EQ(f->commit, "0123456789abcdef");
    EXPECT_EQ(f->date, "2026-01-02");
    EXPECT_EQ(f->cite(), "o/r @0123456 (tools/references/x.sh <checkout>, run 2026-01-02)");
    ASSERT_EQ(f->runs.size(), 2u);
    EXPECT_EQ(f->runs[0].name, "a_run");  // tables come back sorted by name
    const ReferenceRun* b = f->find("b_run");
    ASSERT_NE(b, nullptr);
    EXPECT_DOUBLE_EQ(b->number("m"), 512);
    EXPECT_DOUBLE_EQ(b->number("share_pct"), 91.25);
    EXPECT_EQ(b->strings.at("pattern"), "stream");
    EXPECT_EQ(f->find("c_run"), nullptr);
    try {
        b->number("k");
        FAIL() << "no throw";
    } catch (const duet::Error& e) {
        EXPECT_STREQ(e.what(), "reference run [b_run] has no number 'k'");
    }
}

TEST(ReferenceRuns, AbsentFileIsNotRunAndBadFilesAreErrors) {
    TempConfig c;
    EXPECT_FALSE(load_reference_file("never_run", c.dir.string()).has_value());
    c.write("nosrc", "[a]\nm = 1\n");
    EXPECT_EQ(error_of(c, "nosrc"), c.path("nosrc") + ": missing table [source] (repo, commit, command, machine, date)");
    c.write("nocommit", "[source]\nrepo = \"o/r\"\n");
    EXPECT_EQ(error_of(c, "nocommit"), c.path("nocommit") + ": source.commit is missing or not a non-empty string");
    c.write("badval", std::string(kSource) + "[a]\nm = [1, 2]\n");
    EXPECT_EQ(error_of(c, "badval"), c.path("badval") + ": a.m is neither a number nor a string");
    // a bare key before any table is not a run
    c.write("bare", std::string("y = 1\n") + kSource);
    EXPECT_EQ(error_of(c, "bare"), c.path("bare") + ": 'y' is not a table (every run is a [table] of numbers and strings)");
}

// The committed data files name their source, and every PIMSimulator run has the fields the
// calibration reads.
TEST(ReferenceRuns, CommittedFilesCarryTheirSource) {
    for (const char* name : {"pimsimulator", "ramulator2"}) {
        SCOPED_TRACE(name);
        const auto f = load_reference_file(name);
        if (!f) continue;  // a reference the harness could not run is reported as missing, not here
        EXPECT_EQ(f->commit.size(), 40u);
        EXPECT_FALSE(f->command.empty());
        EXPECT_FALSE(f->runs.empty());
    }
    const auto p = load_reference_file("pimsimulator");
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(p->repo, "SAITPublic/PIMSimulator");
    for (const ReferenceRun& r : p->runs) {
        SCOPED_TRACE(r.name);
        EXPECT_NEAR(r.number("speedup"), r.number("stream_cycles") / r.number("pim_cycles"), 1e-5);
        EXPECT_EQ(r.name, "gemv_" + std::to_string(int(r.number("m"))) + "x" + std::to_string(int(r.number("k"))) +
                              "_b" + std::to_string(int(r.number("batch"))));
    }
}
