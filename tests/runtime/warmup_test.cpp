// Warm-up at load (runtime/warmup.h): after load + warm_up the model file's pages are resident
// (mincore) and reading them faults no page in; with --no-warmup the first read pays the faults;
// --warmup N runs 2N dummy forwards and leaves the KV pool as it found it.
#include <fcntl.h>
#include <sys/resource.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "format/mapped_file.h"
#include "../page_faults.h"
#include "runtime/engine.h"
#include "runtime/warmup.h"
#include "test_models.h"

using namespace duet;
using namespace duet::runtime;

namespace {

using test::faults_reading;

TEST(Warmup, PrefaultMakesTheWholeFileResidentAndTheFirstReadFaultFree) {
    const std::string path = test::generated_model("tiny-llama");
    ASSERT_FALSE(path.empty());
    auto model = Model::load(path);
    const format::MappedFile& map = model->file().mapping();
    const WarmupStats st = warm_up(*model, nullptr, WarmupOptions{});
    EXPECT_EQ(st.prefault_bytes, map.size_bytes());
    EXPECT_TRUE(st.method == "madvise populate" || st.method == "touch pass") << st.method;
    EXPECT_EQ(map.resident_bytes(), map.size_bytes());
    EXPECT_EQ(faults_reading(map), 0);
}

// Without warm-up the weights' pages are mapped on first touch: reading them faults (the kernel
// maps at most a fault-around window, 16 pages by default, per fault).
TEST(Warmup, NoWarmupLeavesTheFaultsToTheFirstRead) {
    const std::string path = test::generated_model("tiny-llama");
    ASSERT_FALSE(path.empty());
    auto model = Model::load(path);
    WarmupOptions off;
    off.prefault = false;
    const WarmupStats st = warm_up(*model, nullptr, off);
    EXPECT_EQ(st.method, "skipped");
    EXPECT_EQ(st.prefault_bytes, 0u);
    const format::MappedFile& map = model->file().mapping();
    const int64_t n_pages = int64_t(map.size_bytes() / size_t(::sysconf(_SC_PAGESIZE)));
    EXPECT_GE(faults_reading(map), n_pages / 32);
    EXPECT_EQ(st.format(), "warm-up: weights not pre-faulted (--no-warmup)");
}

// load_model reads the file into memory unless opts.mmap or a sliced (TP/PP) rank: the same
// bytes either way, nothing to pre-fault when read.
TEST(Warmup, LoadModelReadsTheFileUnlessMmapOrSliced) {
    const std::string path = test::generated_model("tiny-llama");
    ASSERT_FALSE(path.empty());
    WarmupOptions opts;
    auto read = load_model(path, opts);
    EXPECT_FALSE(read->file().mapping().is_mapped());
    opts.mmap = true;
    auto mapped = load_model(path, opts);
    EXPECT_TRUE(mapped->file().mapping().is_mapped());
    opts.mmap = false;
    EXPECT_TRUE(load_model(path, opts, /*sliced=*/true)->file().mapping().is_mapped());
    const format::MappedFile& r = read->file().mapping();
    const format::MappedFile& m = mapped->file().mapping();
    ASSERT_EQ(r.size_bytes(), m.size_bytes());
    EXPECT_EQ(std::memcmp(r.data(), m.data(), r.size_bytes()), 0);
    WarmupOptions off;
    off.prefault = false;
    const WarmupStats st = warm_up(*read, nullptr, off);
    EXPECT_EQ(st.method, "read into memory at load");
    EXPECT_EQ(st.prefault_bytes, r.size_bytes());
    EXPECT_EQ(faults_reading(r), 0);
}

// The copy must leave a quarter of the available memory; else (and for --mmap, TP/PP ranks) map.
TEST(Warmup, LoadModeReadsOnlyWhatFitsWithAQuarterToSpare) {
    using format::LoadMode;
    EXPECT_EQ(load_mode_for(750, 1000, false, false), LoadMode::READ);
    EXPECT_EQ(load_mode_for(751, 1000, false, false), LoadMode::MMAP);
    EXPECT_EQ(load_mode_for(uint64_t(14) << 30, uint64_t(24) << 30, false, false), LoadMode::READ);
    EXPECT_EQ(load_mode_for(uint64_t(20) << 30, uint64_t(24) << 30, false, false), LoadMode::MMAP);
    EXPECT_EQ(load_mode_for(750, 0, false, false), LoadMode::READ);  // MemAvailable unknown
    EXPECT_EQ(load_mode_for(10, 1000, true, false), LoadMode::MMAP);
    EXPECT_EQ(load_mode_for(10, 1000, false, true), LoadMode::MMAP);
}

TEST(Warmup, DummyForwardsRunAndReturnTheirKvBlocks) {
    const std::string path = test::generated_model("tiny-llama");
    ASSERT_FALSE(path.empty());
    auto model = Model::load(path);
    EngineOptions eo;
    eo.n_threads = 1;
    eo.n_ctx = 64;
    Engine engine(model, eo);
    const int64_t free0 = engine.kv_cache().n_free();
    WarmupOptions w;
    w.n_rounds = 3;
    const WarmupStats st = warm_up(*model, &engine, w);
    EXPECT_EQ(st.n_forwards, 6);  // a prefill and a decode per round
    EXPECT_EQ(engine.kv_cache().n_free(), free0);
    EXPECT_NE(st.format().find(", 6 dummy forwards in "), std::string::npos) << st.format();
}

std::string run_stderr(const std::string& args) {
    const std::string err = std::string(DUET_BINARY_DIR) + "/test-models/warmup_test." + std::to_string(::getpid());
    const int status = std::system(fmt::format("'{}' {} > /dev/null 2> '{}'", test::duet_binary(), args, err).c_str());
    std::ifstream f(err);
    std::string text((std::istreambuf_iterator<char>(f)), {});
    std::remove(err.c_str());
    return WEXITSTATUS(status) == 0 ? text : "exit " + std::to_string(WEXITSTATUS(status)) + ": " + text;
}

TEST(Warmup, RunReportsWhatTheWarmupDid) {
    const std::string path = test::generated_model("tiny-llama");
    ASSERT_FALSE(path.empty());
    const std::string base = fmt::format("run -m '{}' -p hi -n 2 --temp 0 --threads 1", path);
    // the default reads the file into memory: nothing left to pre-fault, with or without --no-warmup
    const std::string on = run_stderr(base + " --warmup 2");
    EXPECT_NE(on.find("MiB read into memory at load, 4 dummy forwards in "), std::string::npos) << on;
    EXPECT_NE(run_stderr(base + " --no-warmup").find("MiB read into memory at load\n"), std::string::npos);
    // --mmap maps it: pre-faulted at load unless --no-warmup
    const std::string mapped = run_stderr(base + " --mmap --warmup 2");
    EXPECT_NE(mapped.find("MiB pre-faulted ("), std::string::npos) << mapped;
    EXPECT_NE(mapped.find(", 4 dummy forwards in "), std::string::npos) << mapped;
    const std::string off = run_stderr(base + " --mmap --no-warmup");
    EXPECT_NE(off.find("warm-up: weights not pre-faulted (--no-warmup)"), std::string::npos) << off;
    const std::string bad = run_stderr(base + " --warmup 1e9");
    EXPECT_NE(bad.find("exit 2: duet: error: --warmup"), std::string::npos) << bad;
}

// `duet serve` runs kServeWarmRounds dummy rounds unless --no-warmup (pre-faulting alone left
// the first request's TTFT several times a warm one's; docs/performance.md "Server latency").
TEST(Warmup, ServeRunsDummyRoundsUnlessWarmupIsOff) {
    WarmupOptions w;
    EXPECT_EQ(serve_warm_rounds(w), kServeWarmRounds);
    w.n_rounds = 5;
    EXPECT_EQ(serve_warm_rounds(w), 5);
    w.n_rounds = 3;
    w.prefault = false;  // --no-warmup: only what --warmup N asks for
    EXPECT_EQ(serve_warm_rounds(w), 3);
    w.n_rounds = 0;
    EXPECT_EQ(serve_warm_rounds(w), 0);
}

}  // namespace
