// The collective model (sim/collective.h) against the closed forms of Thakur, Rabenseifner &
// Gropp 2005, written out here independently: T = steps * (alpha + bytes / beta) + launch.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/collective.h"
#include "sim/topology.h"
#include "../error_message.h"

namespace duet::sim {
namespace {

SimLink link(double bw_gbps = 50, double lat_ns = 1000, double per_ns = 500) {
    SimLink l;
    l.bandwidth_gbps = bw_gbps;
    l.latency_ns = lat_ns;
    l.per_transfer_ns = per_ns;
    return l;
}

ExpansionCost launch(double fixed = 7000, double per_step = 200) { return {ExpansionMode::HOST, fixed, per_step}; }

TEST(Collective, RingAllReduceIsTwoPMinusOneStepsOfASharePerRank) {
    const double n = 8.0 * 1024 * 1024;
    for (int p : {2, 4, 8}) {
        const CollectiveTime t = collective_time(CollectiveKind::ALL_REDUCE, CollectiveAlgo::RING, p, n, link(), launch());
        const double alpha = 1500, share = n / p;
        EXPECT_EQ(t.steps, 2 * (p - 1));
        EXPECT_DOUBLE_EQ(t.step_bytes, share);
        EXPECT_DOUBLE_EQ(t.link_ns, 2 * (p - 1) * (alpha + share / 50));
        EXPECT_DOUBLE_EQ(t.launch_ns, 7000 + 2 * (p - 1) * 200);
        EXPECT_DOUBLE_EQ(t.total_ns(), t.link_ns + t.launch_ns);
    }
}

TEST(Collective, RingReduceScatterAllGatherAndAllToAllArePMinusOneSteps) {
    const double n = 1 << 20;
    for (CollectiveKind k : {CollectiveKind::REDUCE_SCATTER, CollectiveKind::ALL_GATHER, CollectiveKind::ALL_TO_ALL}) {
        const CollectiveTime t = collective_time(k, CollectiveAlgo::RING, 8, n, link(), launch(0, 0));
        EXPECT_EQ(t.steps, 7) << collective_kind_name(k);
        EXPECT_DOUBLE_EQ(t.link_ns, 7 * (1500 + n / 8 / 50)) << collective_kind_name(k);
    }
    // reduce-scatter followed by all-gather moves exactly what a ring all-reduce moves
    const CollectiveTime rs = collective_time(CollectiveKind::REDUCE_SCATTER, CollectiveAlgo::RING, 8, n, link(), launch());
    const CollectiveTime ag = collective_time(CollectiveKind::ALL_GATHER, CollectiveAlgo::RING, 8, n, link(), launch());
    const CollectiveTime ar = collective_time(CollectiveKind::ALL_REDUCE, CollectiveAlgo::RING, 8, n, link(), launch());
    EXPECT_DOUBLE_EQ(rs.link_ns + ag.link_ns, ar.link_ns);
    EXPECT_DOUBLE_EQ(rs.launch_ns + ag.launch_ns, ar.launch_ns + 7000);  // one launch more
}

TEST(Collective, PairwiseAllToAllIsPMinusOneStepsOfTheLargestPeerMessage) {
    // n = p x the largest message one rank sends one peer (docs/scale-out.md, "Expert parallelism")
    const double peer = 3 * 7168 * 2;  // 3 routed rows of DeepSeek-V3's 7168 features, f16
    for (int p : {2, 4, 8}) {
        const CollectiveTime t = collective_time(CollectiveKind::ALL_TO_ALL, CollectiveAlgo::PAIRWISE, p, p * peer,
                                                 link(), launch());
        EXPECT_EQ(t.steps, p - 1);
        EXPECT_DOUBLE_EQ(t.step_bytes, peer);
        EXPECT_DOUBLE_EQ(t.link_ns, (p - 1) * (1500 + peer / 50));
        EXPECT_DOUBLE_EQ(t.launch_ns, 7000 + (p - 1) * 200);
        const CollectiveTime mesh = collective_time(CollectiveKind::ALL_TO_ALL, CollectiveAlgo::MESH, p, p * peer,
                                                    link(), launch());
        EXPECT_DOUBLE_EQ(mesh.total_ns(), 1500 + peer / 50 + 7000 + 200);
    }
    EXPECT_STREQ(collective_algo_name(CollectiveAlgo::PAIRWISE), "pairwise");
    // without a full mesh an all-to-all takes the pairwise exchange, never the ring
    EXPECT_EQ(best_collective(CollectiveKind::ALL_TO_ALL, 4, 4 * peer, link(), false, launch()).algo,
              CollectiveAlgo::PAIRWISE);
    EXPECT_EQ(best_collective(CollectiveKind::ALL_TO_ALL, 4, 4 * peer, link(), true, launch()).algo,
              CollectiveAlgo::MESH);
}

TEST(Collective, MeshIsOneShot) {
    const double n = 64 * 1024;
    const CollectiveTime ar = collective_time(CollectiveKind::ALL_REDUCE, CollectiveAlgo::MESH, 8, n, link(), launch());
    EXPECT_EQ(ar.steps, 1);
    EXPECT_DOUBLE_EQ(ar.link_ns, 1500 + n / 50);  // the whole vector to every peer at once
    const CollectiveTime rs = collective_time(CollectiveKind::REDUCE_SCATTER, CollectiveAlgo::MESH, 8, n, link(), launch());
    EXPECT_DOUBLE_EQ(rs.link_ns, 1500 + n / 8 / 50);
    const CollectiveTime p2p = collective_time(CollectiveKind::POINT_TO_POINT, CollectiveAlgo::RING, 2, n, link(), launch());
    EXPECT_EQ(p2p.steps, 1);
    EXPECT_DOUBLE_EQ(p2p.total_ns(), 1500 + n / 50 + 7000 + 200);
}

TEST(Collective, OneRankCostsNothingAndSharedMemoryOnlyTheLaunch) {
    EXPECT_DOUBLE_EQ(collective_time(CollectiveKind::ALL_REDUCE, CollectiveAlgo::RING, 1, 1e6, link(), launch()).total_ns(), 0);
    const CollectiveTime t =
        collective_time(CollectiveKind::ALL_REDUCE, CollectiveAlgo::RING, 4, 1e6, shared_memory_link(), launch());
    EXPECT_DOUBLE_EQ(t.link_ns, 0);
    EXPECT_DOUBLE_EQ(t.launch_ns, 7000 + 6 * 200);
}

TEST(Collective, AFullMeshTakesTheOneShotMeshOtherwiseTheRing) {
    // One-shot mesh: alpha + n/beta; ring: 2(p-1)(alpha + n/(p beta)) = 14 alpha + 1.75 n/beta
    // for p = 8: with one link per pair the mesh is never slower, at any size.
    for (double n : {32.0 * 1024, 256.0 * 1024 * 1024}) {
        const CollectiveTime m = best_collective(CollectiveKind::ALL_REDUCE, 8, n, link(), true, launch());
        EXPECT_EQ(m.algo, CollectiveAlgo::MESH) << n;
        EXPECT_DOUBLE_EQ(m.total_ns(), 1500 + n / 50 + 7000 + 200);
        const CollectiveTime r = best_collective(CollectiveKind::ALL_REDUCE, 8, n, link(), false, launch());
        EXPECT_EQ(r.algo, CollectiveAlgo::RING) << n;
        EXPECT_DOUBLE_EQ(r.total_ns(), 14 * (1500 + n / 400) + 7000 + 14 * 200);
    }
}

TEST(Collective, ExpansionModesComeFromThePresetFileAndBadNamesAreRefused) {
    for (ExpansionMode m : {ExpansionMode::AI_CPU, ExpansionMode::AIV, ExpansionMode::HOST, ExpansionMode::HOST_TS}) {
        const ExpansionCost c = load_expansion_cost(m);
        EXPECT_EQ(c.mode, m);
        EXPECT_GT(c.launch_ns, 0) << expansion_mode_name(m);
        EXPECT_EQ(expansion_mode_from_name(expansion_mode_name(m), "--hccl-expansion"), m);
    }
    // the published ordering for small collectives: AIV's fixed cost below AI_CPU's (configs/hw/collectives.toml)
    EXPECT_LT(load_expansion_cost(ExpansionMode::AIV).launch_ns, load_expansion_cost(ExpansionMode::AI_CPU).launch_ns);
    EXPECT_EQ(test::error_of([] { expansion_mode_from_name("aiv", "--hccl-expansion"); }),
              "--hccl-expansion = \"aiv\" is not an HCCL expansion mode (allowed: AI_CPU, AIV, HOST, HOST_TS)");
}

// CENT's CXL fabric (configs/hw/links.toml cxl_cent_*): an all-reduce is CENT's "embedding
// gather" plus "embedding broadcast" (Morteza1814/CENT @a5d6e53 cent_simulation/cxl_latency.py
// llama_latency). The reference figures are that code's own, run with python3 for bf16 vectors of
// the model width: gather = 180 + ceil(2 d / p / 192) (p - 1) 256 B / (lanes 4 GiB/s), broadcast =
// 180 + ceil(2 d / 192) 256 B / (lanes 4 GiB/s), in ns.
TEST(Collective, CentFabricAllReduceIsCentsGatherPlusBroadcast) {
    const ExpansionCost none{ExpansionMode::HOST, 0, 0};
    struct Case { const char* link; int p; double width, gather_ns, broadcast_ns; };
    for (const Case c : {Case{"cxl_cent_x18", 8, 4096, 319.0775044759115, 322.38887363009985},
                         Case{"cxl_cent_x7", 20, 5120, 665.3521074567523, 639.8072596958705},
                         Case{"cxl_cent_x4", 32, 8192, 1565.807991027832, 1461.4998626708984}}) {
        const SimLink l = load_link_preset(c.link);
        const CollectiveTime t =
            collective_time(CollectiveKind::ALL_REDUCE, CollectiveAlgo::MULTICAST, c.p, 2 * c.width, l, none);
        EXPECT_EQ(t.steps, 2) << c.link;
        EXPECT_NEAR(t.link_ns, c.gather_ns + c.broadcast_ns, 0.01) << c.link;
        // the fabric's own choice: a one-shot mesh would bring p - 1 vectors through each port
        const CollectiveTime best = best_collective(CollectiveKind::ALL_REDUCE, c.p, 2 * c.width, l, true, none);
        EXPECT_EQ(best.algo, CollectiveAlgo::MULTICAST) << c.link;
        const CollectiveTime mesh =
            collective_time(CollectiveKind::ALL_REDUCE, CollectiveAlgo::MESH, c.p, 2 * c.width, l, none);
        EXPECT_NEAR(mesh.link_ns, 180 + (c.p - 1) * std::ceil(2 * c.width / 192) * 256 / l.bandwidth_gbps, 1e-6);
    }
}

// Without a multicasting switch the algorithm does not apply, and a direct link's mesh carries one
// message per step.
TEST(Collective, MulticastNeedsAMulticastFabric) {
    const SimLink direct = link();
    EXPECT_FALSE(collective_algo_applies(CollectiveKind::ALL_REDUCE, CollectiveAlgo::MULTICAST, direct));
    SimLink sw = direct;
    sw.switched = sw.multicast = true;
    EXPECT_TRUE(collective_algo_applies(CollectiveKind::ALL_GATHER, CollectiveAlgo::MULTICAST, sw));
    EXPECT_FALSE(collective_algo_applies(CollectiveKind::ALL_TO_ALL, CollectiveAlgo::MULTICAST, sw));
    EXPECT_NE(best_collective(CollectiveKind::ALL_REDUCE, 8, 8192, direct, true, launch()).algo, CollectiveAlgo::MULTICAST);
    const double n = 8192;
    EXPECT_DOUBLE_EQ(collective_time(CollectiveKind::ALL_REDUCE, CollectiveAlgo::MESH, 8, n, sw, launch()).link_ns,
                     1500 + 7 * n / 50);
}

TEST(Collective, RoceLinkPresetsCarryTheirLineRate) {
    EXPECT_DOUBLE_EQ(load_link_preset("roce_200g").bandwidth_gbps, 25);
    EXPECT_DOUBLE_EQ(load_link_preset("roce_400g").bandwidth_gbps, 50);
}

}  // namespace
}  // namespace duet::sim
