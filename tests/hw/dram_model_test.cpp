// DRAM presets and the two fidelities of the memory model: byte conservation, agreement of
// the analytical model with the command-level one, and errors that name what is wrong.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "hw/dram/mem_workload.h"
#include "hw/memory_presets.h"

using namespace duet;
using namespace duet::hw;
using namespace duet::hw::dram;

namespace {

// One burst per request unless a test says otherwise (the 64 B default has its own tests).
MemWorkload wl(Pattern p, uint64_t bytes, uint64_t stride = 0, uint64_t request_bytes = 32) {
    MemWorkload w;
    w.pattern = p;
    w.bytes = bytes;
    w.stride_bytes = stride;
    w.request_bytes = request_bytes;
    return w;
}

double rel(double a, double b) { return std::fabs(a - b) / b; }

}  // namespace

TEST(DramPresets, EveryPresetLoadsWithConsistentNumbers) {
    for (const auto& name : memory_preset_names()) {
        SCOPED_TRACE(name);
        const DramSpec s = load_memory_preset(name);
        EXPECT_EQ(s.name, name);
        EXPECT_GT(s.channel_peak_gbps(), 1.0);
        EXPECT_EQ(s.org.page_bytes % s.org.burst_bytes(), 0);
        EXPECT_GE(s.timing.nRC, s.timing.nRAS + s.timing.nRP - 2);
        EXPECT_LT(s.timing.nRFC, s.timing.nREFI);
    }
    // Spot values against their cited sources.
    const DramSpec l5 = load_memory_preset("lpddr5");
    EXPECT_EQ(l5.timing.nRCD, 15);
    EXPECT_EQ(l5.timing.nFAW, 16);
    EXPECT_DOUBLE_EQ(l5.channel_peak_gbps() * l5.org.modelled_channels(), 51.2);
    const DramSpec h3 = load_memory_preset("hbm3");
    EXPECT_EQ(h3.org.modelled_channels(), 32);
    EXPECT_DOUBLE_EQ(h3.channel_peak_gbps() * 32, 819.2);
}

TEST(DramPresets, UnknownPresetListsKnownOnes) {
    try {
        load_memory_preset("ddr9");
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "unknown memory preset 'ddr9' (known: lpddr4x, lpddr5, lpddr5x, hbm2, hbm2e, hbm3, gddr6)");
    }
}

TEST(DramPresets, UnknownKeyAndInconsistentBurstAreErrors) {
    const auto dir = std::filesystem::temp_directory_path() / "duet_dram_preset_test";
    std::filesystem::create_directories(dir);
    std::ifstream in(std::string(DUET_SOURCE_DIR) + "/configs/hw/lpddr5.toml");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto write = [&](const std::string& body) {
        const auto p = (dir / "x.toml").string();
        std::ofstream(p) << body;
        return p;
    };
    auto bad = text;
    bad.replace(bad.find("nRTP = 4"), 8, "nRTP = 4\ntRTPX = 3");
    try {
        load_dram_spec_file(write(bad), "x");
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("timing.tRTPX"), std::string::npos) << e.what();
    }
    bad = text;
    bad.replace(bad.find("nBL = 2"), 7, "nBL = 4");
    try {
        load_dram_spec_file(write(bad), "x");
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("timing.nBL = 4 does not match"), std::string::npos) << e.what();
    }
    bad = text;  // a two-part activation needs its ACT-1 to ACT-2 limit
    bad.replace(bad.find("nAAD = 8"), 8, "nAAD = 0");
    try {
        load_dram_spec_file(write(bad), "x");
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("timing.act_commands = 2 (two-part activation) needs timing.nAAD >= 1"),
                  std::string::npos)
            << e.what();
    }
    std::filesystem::remove_all(dir);
}

TEST(DramModel, BytesRequestedAreBytesServed) {
    const DramSpec s = load_memory_preset("lpddr5");
    for (Pattern p : {Pattern::STREAM, Pattern::RANDOM, Pattern::STRIDED}) {
        MemWorkload w = wl(p, 300000 + 7, 4096);
        w.write_fraction = 0.3;
        const MemResult r = simulate_memory(s, w);
        EXPECT_EQ(r.requests, (w.bytes + 31) / 32);
        EXPECT_EQ(r.bytes_requested, r.requests * 32);
        EXPECT_EQ(r.bytes_served, r.bytes_requested);
        EXPECT_EQ(r.n_rd + r.n_wr, r.requests);
        EXPECT_GT(r.n_wr, r.requests / 5);
        EXPECT_LT(r.n_wr, r.requests * 2 / 5);
    }
}

TEST(DramModel, StreamHitsRowsRandomMissesThem) {
    const DramSpec s = load_memory_preset("hbm3");
    const MemResult st = simulate_memory(s, wl(Pattern::STREAM, 1 << 20));
    const MemResult rn = simulate_memory(s, wl(Pattern::RANDOM, 1 << 20));
    EXPECT_GT(st.row_hit_rate, 0.95);
    EXPECT_LT(rn.row_hit_rate, 0.02);
    EXPECT_GT(st.bw_gbps, 0.85 * st.peak_gbps);
    EXPECT_LT(rn.bw_gbps, 0.5 * st.bw_gbps);
    EXPECT_LE(st.bw_gbps, st.peak_gbps);
}

// The analytical model within 5 % of the command-level one, reads and read/write mixes (write
// drain turnarounds). Sizes are many tREFI long so both
// see the same refresh share; random traffic is activation-rate bound (tFAW / tRRD) on these
// presets, which is what the closed form states. On lpddr5 the command bus ties with the
// activation rate for one-burst random requests (RD + ACT-1 + ACT-2 + PRE = 4 slots per
// max(nRRD_S, nFAW/4) = 4 tCK), and the command-level run loses about 6 % to collisions of the
// two that the closed form leaves out: that case is held to 7 %.
TEST(DramModel, AnalyticalAgreesWithCommandLevel) {
    struct Case {
        const char* mem;
        Pattern p;
        uint64_t bytes, stride;
        double writes = 0;
        double tolerance = 0.05;
    };
    const Case cases[] = {
        {"lpddr5", Pattern::STREAM, 4 << 20, 0},  {"hbm3", Pattern::STREAM, 8 << 20, 0},
        {"gddr6", Pattern::STREAM, 4 << 20, 0},   {"lpddr5", Pattern::RANDOM, 2 << 20, 0, 0, 0.07},
        {"hbm3", Pattern::RANDOM, 2 << 20, 0},    {"hbm2", Pattern::RANDOM, 2 << 20, 0},
        {"lpddr5", Pattern::STRIDED, 1 << 20, 4096}, {"hbm3", Pattern::STRIDED, 1 << 20, 8192},
        {"lpddr4x", Pattern::STRIDED, 1 << 20, 2048},
        {"lpddr5", Pattern::STREAM, 2 << 20, 0, 0.3},  {"hbm3", Pattern::RANDOM, 1 << 20, 0, 0.5},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(std::string(c.mem) + " " + pattern_name(c.p));
        const DramSpec s = load_memory_preset(c.mem);
        MemWorkload w = wl(c.p, c.bytes, c.stride);
        w.write_fraction = c.writes;
        const MemResult cmd = simulate_memory(s, w);
        const MemResult ana = estimate_memory(s, w);
        EXPECT_LT(rel(ana.bw_gbps, cmd.bw_gbps), c.tolerance) << ana.bw_gbps << " vs " << cmd.bw_gbps;
        EXPECT_NEAR(ana.row_hit_rate, cmd.row_hit_rate, 0.02);
    }
}

// 64 B requests (the default, a cache line): both 32 B bursts of a random request share one
// activation, so HBM3's activation-bound random bandwidth roughly doubles and half the bursts hit.
TEST(DramModel, CacheLineRequestsShareTheirActivation) {
    const DramSpec s = load_memory_preset("hbm3");
    const MemResult one = simulate_memory(s, wl(Pattern::RANDOM, 1 << 20, 0, 32));
    const MemResult line = simulate_memory(s, wl(Pattern::RANDOM, 1 << 20, 0, 64));
    EXPECT_GE(line.n_act * 2, line.n_rd + line.n_wr);          // at most one hit per request
    EXPECT_LT(double(line.n_act), 0.52 * double(line.n_rd + line.n_wr));  // refresh re-opens a few
    EXPECT_GT(line.row_hit_rate, 0.4);
    EXPECT_GT(line.bw_gbps, 1.6 * one.bw_gbps);
    // The closed form takes the largest of its bounds. With 64 B requests on LPDDR5 the command
    // bus binds (RD, RD, ACT-1, ACT-2, PRE: 5 tCK per line) with the data bus, the column pace
    // and tFAW just below it (4 tCK per line), and the command-level run loses more to their
    // interplay than the largest bound says (docs: known limits).
    for (const char* mem : {"hbm3", "lpddr5", "hbm2"}) {
        SCOPED_TRACE(mem);
        const DramSpec m = load_memory_preset(mem);
        const MemResult cmd = simulate_memory(m, wl(Pattern::RANDOM, 1 << 20, 0, 64));
        const MemResult ana = estimate_memory(m, wl(Pattern::RANDOM, 1 << 20, 0, 64));
        EXPECT_LT(rel(ana.bw_gbps, cmd.bw_gbps), 0.35) << ana.bw_gbps << " vs " << cmd.bw_gbps;  // lpddr5: +10 %
        EXPECT_GE(ana.bw_gbps, cmd.bw_gbps * 0.99);  // optimistic, never pessimistic
    }
}

TEST(DramModel, RequestBytesAreValidated) {
    const DramSpec s = load_memory_preset("hbm3");
    try {
        estimate_memory(s, wl(Pattern::RANDOM, 1 << 20, 0, 48));
        FAIL() << "no error";
    } catch (const duet::Error& e) {
        EXPECT_STREQ(e.what(), "--request-bytes 48 is not allowed for hbm3 (allowed: up to one 32 B burst, or whole "
                               "bursts up to the 1024 B row)");
    }
}

TEST(DramModel, RefreshCostsBandwidth) {
    DramSpec s = load_memory_preset("lpddr5");
    const MemResult with = simulate_memory(s, wl(Pattern::STREAM, 4 << 20));
    s.timing.nREFI = 0;  // no refresh
    const MemResult without = simulate_memory(s, wl(Pattern::STREAM, 4 << 20));
    EXPECT_EQ(without.n_ref, 0u);
    EXPECT_GT(with.n_ref, 0u);
    // Each refresh loses at least nRFC of data-bus time.
    EXPECT_GE(with.t_ns - without.t_ns, double(with.n_ref) / 4 * s.timing.nRFC * s.timing.tCK_ns * 0.9);
}

TEST(DramModel, BadWorkloadsNameTheParameter) {
    const DramSpec s = load_memory_preset("lpddr5");
    try {
        simulate_memory(s, wl(Pattern::STRIDED, 4096, 16));
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "--stride 16 is below one burst of lpddr5 (32 bytes); use stream for contiguous data");
    }
    try {
        pattern_from_name("zigzag");
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "--pattern 'zigzag' is not known (allowed: stream, random, strided)");
    }
    MemWorkload w = wl(Pattern::STREAM, 4096);
    w.mapping = "RoRaBaCoBgBg";
    EXPECT_THROW(simulate_memory(s, w), Error);
}

TEST(DramModel, AddressMappingIsMixedRadixFromTheLsb) {
    const DramSpec s = load_memory_preset("lpddr5");
    AddressMapping m(s.org, 4, "RoRaBaCoBgCh");
    const auto d0 = m.decode(0), d1 = m.decode(32), d4 = m.decode(4 * 32), d16 = m.decode(16 * 32);
    EXPECT_EQ(d1.channel, 1);
    EXPECT_EQ(d4.channel, 0);
    EXPECT_EQ(d4.bank.bank_group, 1);
    EXPECT_EQ(d16.column, 1);
    EXPECT_EQ(d0.bank.row, 0);
    EXPECT_EQ(m.capacity_bytes(), uint64_t(4) * 16 * 65536 * 2048);
}

TEST(DramModel, StreamBandwidthHelperIsTheLongStreamEstimate) {
    const DramSpec s = load_memory_preset("hbm2e");
    const double bw = stream_bandwidth_gbps(s);
    EXPECT_LT(bw, s.channel_peak_gbps() * s.org.modelled_channels());
    EXPECT_GT(bw, 0.85 * s.channel_peak_gbps() * s.org.modelled_channels());
    EXPECT_NEAR(stream_bandwidth_gbps(s, 8) * s.org.modelled_channels() / 8, bw, 0.01 * bw);  // same per-channel rate; refresh phase differs slightly
}

TEST(DramModel, EnergyFollowsCommandCountsWherePublished) {
    const DramSpec s = load_memory_preset("hbm2");
    ASSERT_TRUE(s.energy.published);
    const MemResult r = simulate_memory(s, wl(Pattern::STREAM, 1 << 20));
    const double expect = double(r.n_act) * 414 + double(r.n_rd) * 256 * 1.57 + double(r.n_ref) * 30420 +
                          33.0 * r.t_ns * r.channels;
    EXPECT_NEAR(r.energy_pj, expect, 1e-9 * expect);
    EXPECT_EQ(simulate_memory(load_memory_preset("lpddr5"), wl(Pattern::STREAM, 4096)).energy_pj, 0.0);
}

// LPDDR5's two-part activation (JESD209-5; Ramulator 2.1 @c5b1c3a lpddr5.py ACT1/ACT2): the
// command-level controller issues ACT-2 after every ACT-1 (the channel refuses a column command
// to a bank between the two), and the extra command-bus slot costs bandwidth on random lines.
TEST(DramModel, Lpddr5ControllerIssuesAct2AfterEveryAct) {
    DramSpec s = load_memory_preset("lpddr5");
    const MemResult two = simulate_memory(s, wl(Pattern::RANDOM, 1 << 20, 0, 64));
    EXPECT_GT(two.n_act, 0u);
    EXPECT_EQ(two.n_act2, two.n_act);
    EXPECT_EQ(estimate_memory(s, wl(Pattern::RANDOM, 1 << 20, 0, 64)).n_act2,
              estimate_memory(s, wl(Pattern::RANDOM, 1 << 20, 0, 64)).n_act);
    s.timing.act_commands = 1;  // the same device with a one-command ACTIVATE
    const MemResult one = simulate_memory(s, wl(Pattern::RANDOM, 1 << 20, 0, 64));
    EXPECT_EQ(one.n_act2, 0u);
    EXPECT_LT(two.bw_gbps, 0.95 * one.bw_gbps) << two.bw_gbps << " vs " << one.bw_gbps;
    EXPECT_EQ(simulate_memory(load_memory_preset("hbm2"), wl(Pattern::RANDOM, 1 << 20, 0, 64)).n_act2, 0u);
}

// The closed form's command-bus bound with two-part activation, by hand from the lpddr5 preset
// (Ramulator 2.1's LPDDR5_6400 values): one channel, refresh off, 1 MiB of uniform 64 B reads =
// n = 32768 bursts of 32 B and a = 16384 activations. Bounds: data n*nBL = 65536, column pace
// n*nCCD_S = 65536, activation a*max(nRRD_S 4, nFAW 16/4) = 65536, bank cycle a*nRC/16 = 50176,
// command bus n + 3a = 81920 (RD, RD, ACT-1, ACT-2, PRE per line). T = 81920 + nRCD 15 + nCL 20
// + nBL 2 = 81957 tCK x 1.25 ns: 5 command slots per 4 tCK of data, 80 % of peak before refresh.
TEST(DramModel, TwoPartActivationBoundsRandomLinesAtFourFifths) {
    DramSpec s = load_memory_preset("lpddr5");
    s.timing.nREFI = 0;
    MemWorkload w = wl(Pattern::RANDOM, 1 << 20, 0, 64);
    w.channels = 1;
    const MemResult r = estimate_memory(s, w);
    EXPECT_DOUBLE_EQ(r.t_ns, (32768 + 3 * 16384 + 15 + 20 + 2) * 1.25);
    EXPECT_NEAR(r.bw_gbps / r.peak_gbps, 4.0 / 5.0, 0.001);
    s.timing.act_commands = 1;  // one ACT command: the four bounds tie at 65536
    EXPECT_DOUBLE_EQ(estimate_memory(s, w).t_ns, (65536 + 15 + 20 + 2) * 1.25);
}
