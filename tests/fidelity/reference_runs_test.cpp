// The harness's data files (configs/hw/references/*.toml, written by tools/references/*.sh):
// read back exactly, absent files are "not run", malformed ones are errors naming the file and
// key; and the committed files carry their source.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

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
    for (const char* name : {"pimsimulator", "ramulator2", "attacc", "cent"}) {
        SCOPED_TRACE(name);
        const auto f = load_reference_file(name);
        if (!f) continue;  // a reference the harness could not run is reported as missing, not here
        EXPECT_EQ(f->commit.size(), 40u);
        EXPECT_FALSE(f->command.empty());
        EXPECT_FALSE(f->runs.empty());
    }
    // The AttAcc re-run covers exactly the four ramulator.out rows the calibration compares.
    const auto a = load_reference_file("attacc");
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ(a->repo, "scale-snu/attacc_simulator");
    for (const char* run : {"attn_L128_H2050_pl", "attn_L256_H2050_pl", "attn_L256_H461_pl", "attn_L2144_H188_npl"}) {
        ASSERT_NE(a->find(run), nullptr) << run;
        EXPECT_GT(a->find(run)->number("cycles"), 0) << run;
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

// The CENT re-run (tools/references/cent.sh) reproduces CENT's published simulation_results.csv rows
// (Morteza1814/CENT cent_simulation/simulation_results.csv, Llama2-7B,8,1,8,32,32,L,...): PIM
// latency and token latency at L = 128 and 4096, and its rows satisfy CENT's own token formula.
TEST(ReferenceRuns, CentRerunReproducesThePublishedRows) {
    const auto c = load_reference_file("cent");
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(c->repo, "Morteza1814/CENT");
    struct Row {
        const char* run;
        double pim_ms, token_ms;  // published
    };
    for (const Row& r : {Row{"llama2_7b_tp8_L128", 0.0189785, 0.9806011593424478},
                         Row{"llama2_7b_tp8_L4096", 0.047729, 2.337097159342448}}) {
        SCOPED_TRACE(r.run);
        const ReferenceRun* run = c->find(r.run);
        ASSERT_NE(run, nullptr);
        EXPECT_NEAR(run->number("pim_ms"), r.pim_ms, 1e-9);
        EXPECT_NEAR(run->number("token_ms"), r.token_ms, 1e-6);
    }
    const std::map<std::string, double> blocks = {{"Llama2-7B", 32}, {"Llama2-13B", 40}, {"Llama2-70B", 80}};
    int rows = 0;
    for (const ReferenceRun& r : c->runs) {
        if (!r.numbers.count("token_ms")) continue;  // the _fc tables: GEMVs alone
        SCOPED_TRACE(r.name);
        ++rows;
        EXPECT_NEAR(r.number("pim_ms"), r.number("pim_cycles") / 2e6, 1e-9);  // 2 GHz
        const double block = r.number("pim_ms") + r.number("cxl_ms") + r.number("acc_ms");
        EXPECT_NEAR(r.number("token_ms"),
                    block * blocks.at(r.strings.at("model")) + r.number("embedding_ms") + r.number("inout_ms"), 1e-6);
    }
    EXPECT_EQ(rows, 3 * 29);  // three models x (128 and 640..4096 step 128)
}
