// Devices and links: row-split matmuls across PIM devices, transfers charged on the links,
// per-device stats and the link presets' numbers; closed forms on the fake devices.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "core/error.h"
#include "fake_hw.h"
#include "sim/op_shape.h"
#include "sim/report.h"
#include "sim/topology.h"
#include "../error_message.h"

using namespace duet;
using namespace duet::sim;

namespace {

RunOptions coop() {
    RunOptions o;
    o.placement.policy = Policy::NPU_PIM_COOP;
    return o;
}

struct Machine {
    fake::Npu npu;
    fake::Pim pim0, pim1;
    fake::Layout layout;
    SimHardware hw;
    explicit Machine(int pims, const SimLink& link = shared_memory_link()) {
        hw = npu_pim_hardware(&npu, nullptr, &layout);
        hw.mem_bw_gbps = npu.bytes_per_ns;
        hw.pim_internal_bw_gbps = pim0.internal_bytes_per_ns * pims;
        if (pims >= 1) hw.add_device(DeviceKind::PIM, &pim0, link);
        if (pims >= 2) hw.add_device(DeviceKind::PIM, &pim1, link);
    }
};

RunReport run(const Machine& m, const RunOptions& o, int64_t gen = 6) {
    const ModelShape s = fake::small_shape();
    const Plan p = plan_generation(s, 32, gen, 1);
    return simulate_run(s, p, 32 + gen, 1, o, m.hw);
}

}  // namespace

TEST(Topology, DevicesAreNamedByKindAndOrdinal) {
    Machine m(2);
    ASSERT_EQ(m.hw.devices.size(), 3u);
    EXPECT_EQ(m.hw.devices[0].name, "npu0");
    EXPECT_EQ(m.hw.devices[1].name, "pim0");
    EXPECT_EQ(m.hw.devices[2].name, "pim1");
    EXPECT_EQ(m.hw.links[1].name, "pim1-npu0");
    EXPECT_EQ(m.hw.devices[2].link, 1);
    const RunReport r = run(m, coop());
    ASSERT_EQ(r.timeline.decode.device.size(), 3u);
    EXPECT_EQ(r.timeline.decode.device[2].name, "pim1");
}

TEST(Topology, SplitRowsPartsAddUpToTheWhole) {
    hw::OpShape s;
    s.cls = hw::OpClass::GEMV;
    s.m = 1, s.n = 11, s.k = 8;
    s.weight_bytes = 11 * 16, s.out_bytes = 11 * 2, s.in_bytes = 16, s.flops = 2 * 11 * 8;
    uint64_t w = 0, o = 0;
    int64_t n = 0;
    for (int p = 0; p < 3; ++p) {
        const hw::OpShape part = split_rows(s, p, 3);
        n += part.n;
        w += part.weight_bytes;
        o += part.out_bytes;
        EXPECT_EQ(part.in_bytes, s.in_bytes);  // every part reads the whole input
    }
    EXPECT_EQ(split_rows(s, 0, 3).n, 4);
    EXPECT_EQ(split_rows(s, 2, 3).n, 3);
    EXPECT_EQ(n, s.n);
    EXPECT_EQ(w, s.weight_bytes);
    EXPECT_EQ(o, s.out_bytes);
}

// Two PIM devices in shared memory: every decode GEMV runs as two halves in parallel, so each
// PIM device does exactly the work of its half (the fake PIM's closed form), and both do it.
TEST(Topology, DecodeGemvsSplitAcrossPims) {
    Machine one(1), two(2);
    const RunReport a = run(one, coop()), b = run(two, coop());
    const PhaseStats &da = a.timeline.decode, &db = b.timeline.decode;
    EXPECT_EQ(db.device[1].ops, da.device[1].ops);
    EXPECT_EQ(db.device[2].ops, da.device[1].ops);
    EXPECT_DOUBLE_EQ(db.device[1].weight_bytes + db.device[2].weight_bytes, da.device[1].weight_bytes);
    // fake PIM: t = weight / internal + (in + out) / ext + fixed; halves share in and fixed
    const ModelShape s = fake::small_shape();
    const Plan p = plan_generation(s, 32, 6, 1);
    double want0 = 0;
    for (size_t i = p.forwards[1].begin; i < p.forwards[1].end; ++i) {
        const OpRecord& r = p.ops[i];
        if (r.kind != OpKind::MATMUL) continue;
        want0 += one.pim0.estimate(split_rows(to_op_shape(r), 0, 2)).t_ns;
    }
    EXPECT_NEAR(db.device[1].busy_ns, want0 * double(a.timeline.tbt_ns.size()), 1e-6 * want0);
    // the PIM part of TBT: TBT minus the NPU's work per step (decode is one chain)
    const double steps = double(a.timeline.tbt_ns.size());
    const double pim_a = a.tbt_mean_ns - da.npu().busy_ns / steps, pim_b = b.tbt_mean_ns - db.npu().busy_ns / steps;
    EXPECT_NEAR(pim_b, want0, 1e-6 * want0);
    EXPECT_LT(pim_b, 0.75 * pim_a);
    EXPECT_DOUBLE_EQ(db.npu().busy_ns, da.npu().busy_ns);
    EXPECT_EQ(b.timeline.links[0].transfers + b.timeline.links[1].transfers, 0);  // shared memory: no copies
}

// PIM devices behind a copying link: each part's input is sent and its output gathered; the
// link stats add up to exactly those transfers, and the step gets slower.
TEST(Topology, CopyingLinksChargeInputAndGatherTransfers) {
    SimLink cxl;
    cxl.preset = "test";
    cxl.bandwidth_gbps = 50;
    cxl.latency_ns = 300;
    cxl.per_transfer_ns = 100;
    Machine shared(2), linked(2, cxl);
    const RunReport a = run(shared, coop()), b = run(linked, coop());
    const ModelShape s = fake::small_shape();
    const Plan p = plan_generation(s, 32, 6, 1);
    int64_t transfers = 0;
    double bytes = 0, busy = 0;
    for (size_t f = 1; f < p.forwards.size(); ++f)
        for (size_t i = p.forwards[f].begin; i < p.forwards[f].end; ++i) {
            const OpRecord& r = p.ops[i];
            if (r.kind != OpKind::MATMUL) continue;
            const hw::OpShape part = split_rows(to_op_shape(r), 0, 2);
            transfers += 2;
            bytes += double(part.in_bytes + part.out_bytes);
            busy += cxl.transfer_ns(part.in_bytes) + cxl.transfer_ns(part.out_bytes);
        }
    const LinkStats& l0 = b.timeline.links[0];
    EXPECT_EQ(l0.name, "pim0-npu0");
    EXPECT_EQ(l0.transfers, transfers);
    EXPECT_DOUBLE_EQ(l0.bytes, bytes);
    EXPECT_NEAR(l0.busy_ns, busy, 1e-9 * busy);
    EXPECT_GT(b.tbt_mean_ns, a.tbt_mean_ns + 2 * (cxl.per_transfer_ns + cxl.latency_ns));
    EXPECT_EQ(b.timeline.decode.npu().busy_ns, a.timeline.decode.npu().busy_ns);
}

TEST(Topology, TransferTimeIsOverheadPlusLatencyPlusBytesOverBandwidth) {
    SimLink l;
    l.bandwidth_gbps = 64;
    l.latency_ns = 250;
    l.per_transfer_ns = 100;
    EXPECT_DOUBLE_EQ(l.transfer_ns(6400), 100 + 250 + 100);
    EXPECT_EQ(l.transfer_ns(0), 0);
    l.shared_memory = true;
    EXPECT_EQ(l.transfer_ns(6400), 0);
}

TEST(Topology, LinkPresetsReadTheirCitedNumbers) {
    const SimLink pcie4 = load_link_preset("pcie4_x16");
    EXPECT_DOUBLE_EQ(pcie4.bandwidth_gbps, 31.5);  // 16 GT/s x 16 x 128/130 / 8
    EXPECT_FALSE(pcie4.shared_memory);
    EXPECT_TRUE(load_link_preset("shared_hbm").shared_memory);
    EXPECT_DOUBLE_EQ(load_link_preset("cxl2_x16").latency_ns, 250);
    EXPECT_DOUBLE_EQ(load_link_preset("hccs_910b").bandwidth_gbps, 56);
    // CENT's fabric (cxl_latency.py): 144 // devices lanes x 4 GiB/s (multicast) of 256 B flits
    // carrying 192 B; round trip 4 x 25 + 2 x (5 + 20 + 5) + 20 ns (the module evaluates it before
    // doubling the PCIe term for multicast)
    const double lane_gbps = 4.0 * 1024 * 1024 * 1024 / 1e9;
    for (auto [name, devices] : {std::pair{"cxl_cent_x18", 8}, {"cxl_cent_x7", 20}, {"cxl_cent_x4", 32}}) {
        const SimLink l = load_link_preset(name);
        EXPECT_NEAR(l.bandwidth_gbps, (144 / devices) * lane_gbps, 0.001) << name;
        EXPECT_DOUBLE_EQ(l.latency_ns, 4 * 25 + 2 * (5 + 20 + 5) + 20) << name;
        EXPECT_TRUE(l.switched && l.multicast) << name;
        EXPECT_DOUBLE_EQ(l.flit_bytes, 256);
        EXPECT_DOUBLE_EQ(l.flit_payload_bytes, 192);
        EXPECT_DOUBLE_EQ(l.wire_bytes(193), 512);  // two flits
    }
    EXPECT_FALSE(load_link_preset("cxl2_x16").switched);
    EXPECT_DOUBLE_EQ(load_link_preset("cxl2_x16").wire_bytes(193), 193);
    try {
        load_link_preset("nvlink");
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "unknown link preset 'nvlink' (known: shared_hbm, hccs_910b, pcie4_x16, pcie5_x16, cxl2_x16, roce_200g, roce_400g, cxl_cent_x18, cxl_cent_x7, cxl_cent_x4)");
    }
}

// A link preset's fabric and flit keys are checked like every other key.
TEST(Topology, BadFabricAndFlitKeysNameFileKeyAndAllowed) {
    const std::string dir = std::string(DUET_BINARY_DIR) + "/links_cfg";
    std::system(("mkdir -p " + dir + "/hw").c_str());
    const std::string path = dir + "/hw/links.toml";
    const auto write = [&](const std::string& extra) {
        std::ofstream(path) << "[cxl_cent_x18]\nkind = \"link\"\nbandwidth_gbps = 10\nlatency_ns = 180\n"
                               "per_transfer_ns = 0\n"
                            << extra;
    };
    write("fabric = \"crossbar\"\n");
    EXPECT_EQ(test::error_of([&] { load_link_preset("cxl_cent_x18", dir); }),
              path + ": key 'cxl_cent_x18.fabric' = \"crossbar\" is not allowed (allowed: direct, switch, switch_multicast)");
    write("flit_bytes = 256\n");
    EXPECT_EQ(test::error_of([&] { load_link_preset("cxl_cent_x18", dir); }),
              path + ": keys 'cxl_cent_x18.flit_bytes' = 256 and 'cxl_cent_x18.flit_payload_bytes' = 0 are not allowed "
                     "(allowed: both 0, or 0 < flit_payload_bytes <= flit_bytes)");
    write("flit_bytes = 64\nflit_payload_bytes = 192\n");
    EXPECT_NE(test::error_of([&] { load_link_preset("cxl_cent_x18", dir); }).find("are not allowed"), std::string::npos);
    write("fabric = \"switch\"\n");
    const SimLink l = load_link_preset("cxl_cent_x18", dir);
    EXPECT_TRUE(l.switched);
    EXPECT_FALSE(l.multicast);
}

TEST(Topology, NpuOnlyLayersMatmulsSplitAcrossNpus) {
    fake::Npu npu0, npu1;
    fake::Layout layout;
    SimHardware hw = npu_pim_hardware(&npu0, nullptr, &layout);
    hw.add_device(DeviceKind::NPU, &npu1);  // shared memory link: no copies
    RunOptions o;
    o.placement.policy = Policy::NPU_ONLY;
    const ModelShape s = fake::small_shape();
    const Plan p = plan_generation(s, 32, 4, 1);
    const RunReport r = simulate_run(s, p, 36, 1, o, hw);
    const PhaseStats& d = r.timeline.decode;
    ASSERT_EQ(d.device.size(), 2u);
    EXPECT_EQ(d.device[1].name, "npu1");
    EXPECT_EQ(d.device[1].ops, 3 * (7 * s.n_layer + 1));  // every matmul of 3 decode steps, LM head included
    EXPECT_GT(d.device[0].ops, d.device[1].ops);            // npu0 also runs norms, RoPE, attention, ...
}
