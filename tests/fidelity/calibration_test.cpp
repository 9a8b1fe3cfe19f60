// The calibration table (hw/calibration): every point is sourced, missing references are
// never filled in, errors and statuses follow their definitions, and the points that pass
// today keep passing (a model change that breaks them must update docs/hardware-model.md 6).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "hw/calibration/reference_points.h"

using namespace duet::hw::calibration;

namespace {

const std::vector<Point>& table() {
    static const std::vector<Point> t = run_calibration();
    return t;
}

const Point& find(const std::string& name) {
    for (const Point& p : table())
        if (p.name == name) return p;
    throw std::runtime_error("no calibration point '" + name + "'");
}

}  // namespace

TEST(Calibration, EveryPointNamesItsSourceAndMissingOnesStayEmpty) {
    ASSERT_GE(table().size(), 20u);
    for (const Point& p : table()) {
        SCOPED_TRACE(p.name);
        EXPECT_FALSE(p.source.empty());
        EXPECT_FALSE(p.unit.empty());
        if (p.check == Check::MISSING) {
            EXPECT_TRUE(std::isnan(p.reference));
            EXPECT_STREQ(p.status(), "missing");
            EXPECT_FALSE(p.note.empty());  // says why
        } else {
            EXPECT_FALSE(std::isnan(p.reference));
            EXPECT_FALSE(std::isnan(p.duet));
        }
    }
}

TEST(Calibration, ErrorAndStatusFollowTheirDefinitions) {
    Point p{"x", "s", Check::RELATIVE, 5.0, 4.4, 0.15, "x", "", ""};
    EXPECT_NEAR(p.error(), -0.12, 1e-12);
    EXPECT_STREQ(p.status(), "PASS");
    p.duet = 4.2;  // -16 %
    EXPECT_STREQ(p.status(), "FAIL");
    Point q{"y", "s", Check::POINTS, 90, 84, 5, "%", "", ""};
    EXPECT_DOUBLE_EQ(q.error(), -6);
    EXPECT_STREQ(q.status(), "FAIL");
    Point b{"z", "s", Check::LOWER_BOUND, 2.0, 2.1, 0, "x", "", ""};
    EXPECT_STREQ(b.status(), "PASS");
    b.duet = 1.9;
    EXPECT_STREQ(b.status(), "FAIL");
}

// GeniePIM publishes N = 1 speedups of 5.0-5.2x and N = 2 of about half: the batched model
// re-reads the weights per vector, as GeniePIM's N = 2 time (exactly twice N = 1) does.
TEST(Calibration, GeniePimPointsPass) {
    int n = 0;
    for (const Point& p : table()) {
        if (p.name.rfind("GeniePIM", 0) != 0) continue;
        SCOPED_TRACE(p.name + " duet " + std::to_string(p.duet) + " ref " + std::to_string(p.reference));
        EXPECT_TRUE(p.passed());
        ++n;
    }
    EXPECT_EQ(n, 8);
    const Point& one = find("GeniePIM int8 GEMV 6144x2048 N=1 speedup");
    const Point& two = find("GeniePIM int8 GEMV 6144x2048 N=2 speedup");
    EXPECT_NEAR(two.duet / one.duet, 0.5, 0.03);
}

TEST(Calibration, PimSimulatorBoundAndSmallGemvCrossover) {
    const Point& p4k = find("HBM2-PIM fp16 GEMV 4096x4096 speedup over streaming");
    EXPECT_EQ(p4k.check, Check::LOWER_BOUND);
    EXPECT_TRUE(p4k.passed()) << p4k.duet;
    // Fixed per-kernel costs (park reads, mode switches per tile, CRF program, GRF fills to a
    // reserved row, whole tiles) make small GEMVs lose to streaming, as PIMSimulator runs them.
    const double s512 = find("HBM2-PIM fp16 GEMV 512x512 B=1 speedup over streaming (PIMSimulator run)").duet;
    const double s1 = find("HBM2-PIM fp16 GEMV 1024x1024 B=1 speedup over streaming (PIMSimulator run)").duet;
    const double s2 = find("HBM2-PIM fp16 GEMV 2048x2048 B=1 speedup over streaming (PIMSimulator run)").duet;
    const double s8 = find("HBM2-PIM fp16 GEMV 8192x8192 B=1 speedup over streaming (PIMSimulator run)").duet;
    EXPECT_LT(s512, 1.0);
    EXPECT_LT(s1, 1.0);
    EXPECT_GT(s2, 1.0);
    EXPECT_LT(s512, s1);
    EXPECT_LT(s1, s2);
    EXPECT_LT(s2, p4k.duet);
    EXPECT_LE(p4k.duet, s8 * 1.02);
}

// The PIM time of every size PIMSimulator ran, 512^2 to 8192^2 and batch 2-4, is within its
// tolerance (512^2 at its edge: docs/hardware-model.md section 6 says why).
TEST(Calibration, PimSimulatorRunTimesPass) {
    int n = 0;
    for (const Point& p : table()) {
        if (p.name.find("PIM time (PIMSimulator run)") == std::string::npos) continue;
        SCOPED_TRACE(p.name + " duet " + std::to_string(p.duet) + " ref " + std::to_string(p.reference));
        EXPECT_EQ(p.check, Check::RELATIVE);
        EXPECT_DOUBLE_EQ(p.tolerance, 0.15);
        EXPECT_NE(p.source.find("SAITPublic/PIMSimulator @b464dde"), std::string::npos);
        EXPECT_TRUE(p.passed());
        ++n;
    }
    EXPECT_EQ(n, 8);
}

// AttAcc's published Ramulator-AttAcc cycles (ramulator.out) against duet's decode-attention
// estimate on the device AttAcc simulated (HBM3 8Gb 2R at 5.2 Gb/s, nCCDAB 6 or 4).
TEST(Calibration, AttAccAttentionPointsPassAndScaleLikeTheReference) {
    int n = 0;
    for (const Point& p : table()) {
        if (p.name.rfind("AttAcc", 0) != 0) continue;
        SCOPED_TRACE(p.name + " duet " + std::to_string(p.duet) + " ref " + std::to_string(p.reference));
        EXPECT_EQ(p.check, Check::RELATIVE);
        EXPECT_NE(p.source.find("ramulator.out"), std::string::npos);
        EXPECT_TRUE(p.passed());
        ++n;
    }
    EXPECT_EQ(n, 4);
    const Point& big = find("AttAcc HBM3 bank PIM attention L=256 heads=2050 d=128 (power limit)");
    const Point& small = find("AttAcc HBM3 bank PIM attention L=256 heads=461 d=128 (power limit)");
    const Point& short_ctx = find("AttAcc HBM3 bank PIM attention L=128 heads=2050 d=128 (power limit)");
    // both grow with the heads by about the same factor, and with the context length
    EXPECT_NEAR((big.duet / small.duet) / (big.reference / small.reference), 1.0, 0.10);
    EXPECT_GT(big.duet, short_ctx.duet);
    EXPECT_GT(big.reference, short_ctx.reference);
}

TEST(Calibration, CentDecoderBlockPointPasses) {
    const Point& p = find("CENT GDDR6-AiM Llama2-7B decoder block, 8 channels, seq len 1 (PIM time)");
    EXPECT_DOUBLE_EQ(p.reference, 209.876);
    EXPECT_TRUE(p.passed()) << p.duet;
}

// CENT's Llama2-7B at tensor parallelism 8 on 8 CXL devices of 32 AiM channels (pim_cxl_aim):
// four contexts from its published results, with the harness's re-run of CENT's simulator
// (configs/hw/references/cent.toml) cited beside them. With the presets' [mapping] attention =
// "cent_head_per_bank" duet's block holds CENT's attention mapping and element-wise work
// (hw/pim/pim_cent_mapping.h), so it passes and grows with the context about as CENT's does
// (29 us from 128 to 4096); with the two-GEMV attention it grew by under 3 us.
TEST(Calibration, CentTensorParallelBlocksFollowCentsMapping) {
    std::vector<const Point*> pts;
    for (const Point& p : table())
        if (p.name.rfind("CENT Llama2-7B TP8 on 8 CXL AiM devices, decoder block PIM time", 0) == 0) pts.push_back(&p);
    ASSERT_EQ(pts.size(), 4u);
    for (const Point* p : pts) {
        SCOPED_TRACE(p->name);
        EXPECT_EQ(p->check, Check::RELATIVE);
        EXPECT_DOUBLE_EQ(p->tolerance, 0.30);
        EXPECT_NE(p->source.find("simulation_results.csv (row Llama2-7B,8,1,8,32,32,"), std::string::npos);
        EXPECT_NE(p->source.find("; re-run Morteza1814/CENT @a5d6e53"), std::string::npos);
        EXPECT_TRUE(p->passed()) << p->duet;
    }
    EXPECT_DOUBLE_EQ(pts[0]->reference, 18.9785);
    EXPECT_DOUBLE_EQ(pts[3]->reference, 47.729);
    const double growth = pts[3]->duet - pts[0]->duet, ref_growth = pts[3]->reference - pts[0]->reference;
    EXPECT_GT(growth, 0.5 * ref_growth);
    EXPECT_LT(growth, 1.5 * ref_growth);
}

// The blocks' weight GEMVs alone, as CENT's simulator runs them (function_sim.py --only-FC on
// aim_simulator, re-run by tools/references/cent.sh): the like-for-like check of duet's AiM GEMV
// model (ACT16 -> MAC16 nRCDRDMAC, TMOD around every tile, WR_GB and RD_MAC on the channel bus).
TEST(Calibration, CentWeightGemvsAloneFollowTheAimSimulator) {
    std::vector<const Point*> pts;
    for (const Point& p : table())
        if (p.name.find("block weight GEMVs alone (CENT simulator run)") != std::string::npos) pts.push_back(&p);
    ASSERT_EQ(pts.size(), 3u);  // Llama2-7B TP8, 13B TP20, 70B TP32
    for (const Point* p : pts) {
        SCOPED_TRACE(p->name + " duet " + std::to_string(p->duet) + " us, reference " + std::to_string(p->reference));
        EXPECT_EQ(p->check, Check::RELATIVE);
        EXPECT_NE(p->source.find("Morteza1814/CENT @a5d6e53 (tools/references/cent.sh"), std::string::npos);
        EXPECT_TRUE(p->passed());
    }
}

// DRAM (issue 9 item 1): the unloaded read latency is derived from Ramulator 2.1's timing presets
// by its read-latency rule (ACT, RD nRCD later, data nCL + nBL after the RD); the reference must
// be exactly that closed form, and duet's own closed form must stay within 30 % of it.
TEST(Calibration, DramLatencyPointsAreDerivedFromRamulatorPresetsAndPass) {
    struct Derived {
        const char* name;
        double ref_ns;  // (nRCD + nCL + nBL) x tCK of the cited preset
    };
    for (const Derived& d : {Derived{"hbm2 unloaded read latency", (14 + 14 + 2) * 1.0},
                             Derived{"hbm3 unloaded read latency", (31 + 20 + 2) * 0.625},
                             Derived{"lpddr5 unloaded read latency", (15 + 17 + 2) * 1.25}}) {
        const Point& p = find(d.name);
        SCOPED_TRACE(p.name + " duet " + std::to_string(p.duet));
        EXPECT_EQ(p.check, Check::RELATIVE);
        EXPECT_EQ(p.source.rfind("derived from CMU-SAFARI/ramulator2 python/ramulator/dram/", 0), 0u) << p.source;
        EXPECT_DOUBLE_EQ(p.reference, d.ref_ns);
        EXPECT_TRUE(p.passed());
    }
    // duet's closed form is nRCD + nCL + nBL of its own presets (hbm2 30, hbm3 30, lpddr5 46.25 ns)
    EXPECT_NEAR(find("hbm2 unloaded read latency").duet, 30.0, 1e-9);
    EXPECT_NEAR(find("hbm3 unloaded read latency").duet, 48 * 0.625, 1e-9);
    EXPECT_NEAR(find("lpddr5 unloaded read latency").duet, 37 * 1.25, 1e-9);
}

// HBM2 stream share against Shuhai's measured 425 of 460 GB/s (Alveo U280): passes within 5 points.
TEST(Calibration, Hbm2StreamSharePassesAgainstShuhai) {
    const Point& p = find("hbm2 stream share of peak");
    EXPECT_EQ(p.check, Check::POINTS);
    EXPECT_NEAR(p.reference, 100.0 * 425 / 460, 1e-9);
    EXPECT_TRUE(p.passed()) << p.duet;
}

// LPDDR5 random 64 B reads: AMD's Versal controller reaches "close to 80%". duet's analytical model
// is bound by its command bus: RD, RD, ACT-1, ACT-2, PRE = 5 slots per 4 tCK of data, 80 % of peak
// before refresh. By hand, per channel of the 4 MiB run: n = 32768 bursts, a = 16384 activations,
// T_busy = n + 3a = 81920 tCK; each all-bank refresh loses nRFC 224 + nRP 15 + h (nRTP 4 + nRCD 15)
// + (1 - h) nRAS 34 = 265.5 tCK at row-hit share h = 1/2, and k = floor((81920 + 265.5 k) / 3125)
// = 28 refreshes fall due; with the 37-tCK fill the share is 65536 / (81920 + 28 x 265.5 + 37) =
// 73.3 %: a documented FAIL (docs/hardware-model.md section 6). A model change that moves duet's
// value must update that explanation.
TEST(Calibration, Lpddr5RandomShareFailsAsDocumented) {
    const Point& p = find("lpddr5 random share of peak (64 B requests)");
    EXPECT_EQ(p.check, Check::POINTS);
    EXPECT_DOUBLE_EQ(p.reference, 80.0);
    EXPECT_STREQ(p.status(), "FAIL");
    EXPECT_NEAR(p.duet, 100.0 * 65536 / (81920 + 28 * 265.5 + 37), 0.01);
}

// The shares nobody publishes stay missing, with what was searched in the note.
// The stream and random shares Ramulator 2.1 gives (duet's harness run) replace the rows that
// were missing. Ramulator's MOP4CLXOR mapper sends the two 32 B halves of a 64 B read to two
// banks, so duet's random value is its run with one activation per 32 B burst (the one-activation
// 64 B value is in the note); hbm2 and hbm3 random reads are findings (docs/hardware-model.md
// section 6: HBM's shared two-cycle-ACT row bus, and the presets' tFAW).
TEST(Calibration, RamulatorSharesAreCheckedPoints) {
    for (const char* preset : {"hbm2", "hbm3", "lpddr5"})
        for (const char* pattern : {"stream", "random"}) {
            const Point& p = find(std::string(preset) + " " + pattern +
                                  " share of peak (64 B requests, Ramulator 2.1 run)");
            SCOPED_TRACE(p.name);
            EXPECT_EQ(p.check, Check::POINTS);
            EXPECT_DOUBLE_EQ(p.tolerance, 5);
            EXPECT_NE(p.source.find("CMU-SAFARI/ramulator2 @c5b1c3a"), std::string::npos);
            const bool finding = std::string(pattern) == "random" && std::string(preset) != "lpddr5";
            EXPECT_EQ(p.passed(), !finding) << p.duet << " vs " << p.reference;
            if (std::string(pattern) == "random")
                EXPECT_NE(p.note.find("two activations per 64 B"), std::string::npos) << p.note;
        }
}
