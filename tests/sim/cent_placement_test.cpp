// Placement pim_only with CENT's mapping (hw/pim/pim_cent_mapping.h): a decode RMSNorm and
// rotary go to the PIM device, priced by the mapping's commands (the formula below is written
// out from the command list, not taken from the code); with a preset without the mapping they
// stay on the host CPU.
#include <gtest/gtest.h>

#include <algorithm>

#include "fake_hw.h"
#include "hw/memory_presets.h"
#include "hw/pim/pim_device.h"
#include "sim/op_shape.h"
#include "sim/placement.h"

using namespace duet;
using namespace duet::sim;

namespace {

struct Machine {
    fake::Npu npu, cpu;
    fake::Layout layout;
    hw::pim::PimDevice pim;
    SimHardware hw;
    int pim0 = -1, cpu0 = -1;
    explicit Machine(const char* preset) : pim(hw::load_pim_preset(preset)) {
        hw = npu_pim_hardware(&npu, nullptr, &layout);
        pim0 = hw.add_device(DeviceKind::PIM, &pim);
        cpu0 = hw.add_device(DeviceKind::CPU, &cpu);
    }
    OpPlacement place(const OpRecord& r) const {
        PlacementOptions o;
        o.policy = Policy::PIM_ONLY;
        return Placer(o, hw).place(r, to_op_shape(r, DType::BF16));
    }
};

OpRecord decode(OpKind kind, int64_t n) {
    OpRecord r;
    r.kind = kind;
    r.phase = Phase::DECODE;
    r.layer = 0;
    r.m = 1;
    r.n = n;
    r.in_bytes = r.out_bytes = uint64_t(4 * n);
    return r;
}

// The preset's cycle terms the mapping's commands use.
struct Terms {
    double tck, rp, rcd, rcdwr, sp, host1, mac_open, ab, rd_out, ewmul_open;
    int C, rd_mac_bursts;
    explicit Terms(const hw::pim::PimSpec& s) {
        const auto& t = s.mem.timing;
        tck = t.tCK_ns, rp = t.nRP, rcd = t.nRCD, rcdwr = t.nRCDWR, sp = std::max(t.nBL, t.nCCD_S);
        C = s.mem.org.modelled_channels();
        host1 = std::max<double>(s.host_request_cycles, sp / C);  // one request spread over every channel
        mac_open = rp + s.timing.nRCD_MAC;
        ab = s.timing.nCCD_AB, rd_out = s.timing.nMAC_RD_OUT;
        ewmul_open = rp + s.timing.nRCD_EWMUL;
        rd_mac_bursts = (s.units_per_channel() * 4 + s.mem.org.burst_bytes() - 1) / s.mem.org.burst_bytes();  // fp32
    }
};

}  // namespace

TEST(CentPlacement, PimOnlyRunsRmsNormAndRotaryOnTheCentPimDevice) {
    const Machine m("pim_cxl_aim");
    const auto& s = m.pim.spec();
    ASSERT_EQ(s.attention_mapping, hw::pim::AttentionMapping::CENT_HEAD_PER_BANK);
    ASSERT_EQ(s.mem.org.banks(), 16);
    ASSERT_EQ(s.mem.org.burst_bytes(), 32);  // 16 bf16 per burst
    ASSERT_TRUE(s.timing.mode_switch_per_tile);
    const Terms t(s);
    ASSERT_EQ(t.C, 32);  // 512 banks: a 64-element vector is one element per bank

    // RMSNorm of 64: x to 64 neighbour banks twice (128 writes), x.x as one MAC group of one
    // column, 1/rms and x to 64 EWMUL banks (128 writes), EWMUL of one column, four copies out and
    // in of one column, EWMUL, the result read from 64 banks.
    const OpRecord norm = decode(OpKind::RMSNORM, 64);
    const OpPlacement pn = m.place(norm);
    EXPECT_EQ(pn.kind, DeviceKind::PIM);
    EXPECT_EQ(pn.devices, std::vector<int>{m.pim0});
    const double mode = s.timing.mode_switch_cycles;
    const double norm_cycles = 2 * (t.rp + t.rcdwr + 128 * t.host1) +                                         // writes
                               (2 * mode + t.sp + t.mac_open + t.ab + t.rd_out + t.rd_mac_bursts * t.sp) +    // MAC
                               2 * (t.ewmul_open + t.ab) + 4 * (t.rp + t.rcd + t.sp + t.rp + t.rcdwr + t.sp) +  // EWMUL, copies
                               (t.rp + t.rcd + 64 * t.host1);                                                 // read
    // plus the CXL controller ([controller], CENT's calculate_acc_latency at 2 GHz): 64 / 16 / 16 / 32
    // vector ops of 32 x 2 + 1 + 1 cycles, one reduction (1 + 1 + 1), the RISC-V root (26)
    const double norm_controller_ns = (64.0 / 256 / 32 * 66 + 3 + 26) / 2;
    EXPECT_NEAR(m.pim.estimate(to_op_shape(norm, DType::BF16)).t_ns, norm_cycles * t.tck + norm_controller_ns, 1e-6);

    // Rotary of 4 heads of 64 over 2 KV heads (q 256, k 128): per EWMUL bank 2 q and 1 k
    // elements; q and k written twice (4 x 128 single-burst writes), EWMUL of 16 and 8 columns.
    OpRecord rope = decode(OpKind::ROPE, (4 + 2) * 64);
    rope.k = 64, rope.n_head = 4, rope.n_head_kv = 2;
    const OpPlacement pr = m.place(rope);
    EXPECT_EQ(pr.kind, DeviceKind::PIM);
    const double rope_cycles = 4 * (t.rp + t.rcdwr + 128 * t.host1) + (t.ewmul_open + 16 * t.ab) + (t.ewmul_open + 8 * t.ab);
    // plus the controller's rotary products: (256 + 128) elements x 3 cycles over 8 RISC-V cores
    EXPECT_NEAR(m.pim.estimate(to_op_shape(rope, DType::BF16)).t_ns, rope_cycles * t.tck + 384 * 3.0 / 8 / 2, 1e-6);

    // What CENT leaves on the host stays there: the embedding lookup and sampling.
    EXPECT_EQ(m.place(decode(OpKind::EMBED, 64)).kind, DeviceKind::CPU);
    EXPECT_EQ(m.place(decode(OpKind::OUTPUT, 64)).kind, DeviceKind::CPU);
    // A prefill norm (m > 1) is not in CENT's decode mapping.
    OpRecord prefill = norm;
    prefill.m = 8, prefill.phase = Phase::PREFILL;
    EXPECT_EQ(m.place(prefill).kind, DeviceKind::CPU);
}

TEST(CentPlacement, OtherPimPresetsLeaveElementwiseOnTheHostCpu) {
    const Machine m("pim_hbm2_fimdram");
    ASSERT_NE(m.pim.spec().attention_mapping, hw::pim::AttentionMapping::CENT_HEAD_PER_BANK);
    for (const OpKind k : {OpKind::RMSNORM, OpKind::ROPE, OpKind::SWIGLU, OpKind::ADD, OpKind::KV_WRITE}) {
        OpRecord r = decode(k, 256);
        r.k = 64, r.n_head = 2, r.n_head_kv = 2;
        const OpPlacement p = m.place(r);
        EXPECT_EQ(p.kind, DeviceKind::CPU) << int(k);
        EXPECT_EQ(p.devices, std::vector<int>{m.cpu0});
    }
}
