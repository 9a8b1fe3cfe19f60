// CENT's head-per-bank attention and AiM element-wise mapping (hw/pim/pim_cent_mapping.h): one
// small attention counted and timed by hand from the pim_gddr6_aim preset, the command counts of
// a Llama2-7B block against CENT's own trace, and the preset switch.
#include <gtest/gtest.h>

#include "core/error.h"
#include "hw/memory_presets.h"
#include "hw/pim/pim_cent_mapping.h"
#include "hw/pim/pim_device.h"

using namespace duet;
using namespace duet::hw;
using namespace duet::hw::pim;

namespace {

OpShape attention_op(int64_t heads, int64_t context) {
    OpShape op;
    op.cls = OpClass::ATTENTION;
    op.m = 1, op.n = context, op.k = 128;
    op.n_head = op.n_head_kv = heads;
    op.weight_dtype = op.act_dtype = DType::BF16;
    return op;
}

}  // namespace

// 1 head of 128, context 32, on one GDDR6-AiM chip (2 channels x 16 banks). In tCK (0.5 ns), with
// the preset's sp = max(nBL 2, nCCD_S 2) = 2, nCCD_L 4, nRP 30, nRCD 30, nRCDWR 19, nCCD_AB 2,
// nRCD_MAC 56, nRCD_EWMUL 25, nMAC_RD_OUT 2, TMOD 32 per MAC group, RD_MAC 16 x 4 B = 2 bursts:
//   K row write: 64 bursts into one bank      30 + 19 + 64 x 4                          =  305
//   V writes: 8 WR_ABK                        8 x 2                                      =   16
//   q.K^T: q broadcast 64 bursts, then 8 heads of the K row, 8 columns each (one row open)
//          128 + (64 + 2 + 86 + 16 + 2 + 4) + 7 x (64 + 2 + 16 + 2 + 4)                 =  918
//   softmax x 2: 4 score writes (2 ch-bursts x 2, one channel: 2 apart), EWMUL of 2 columns,
//          2 reads: 2 x ((30 + 19 + 4 x 2) + (30 + 25 + 2 x 2) + (30 + 30 + 2 x 2))       =  360
//   p.V: scores broadcast 2 bursts, 8 passes of 16 dimensions, 2 columns, a new row each
//          4 + 8 x (64 + 2 + 86 + 4 + 2 + 4)                                            = 1300
//   total 2899 tCK = 1449.5 ns.
TEST(PimCentMapping, OneHeadContext32MatchesHandCount) {
    const PimSpec s = load_pim_preset("pim_gddr6_aim");
    ASSERT_EQ(s.attention_mapping, AttentionMapping::CENT_HEAD_PER_BANK);
    CentBlockShape b;
    b.heads = b.kv_heads = 1;
    b.head_dim = 128;
    b.context = 32;
    const CentCost c = cent_attention(s, b);
    EXPECT_DOUBLE_EQ(c.t_ns, 2899 * 0.5);
    EXPECT_EQ(c.host_wr, 64u + 8u);
    EXPECT_EQ(c.host_rd, 4u);
    EXPECT_EQ(c.mac, 8u * 8 * 2 + 8u * 2 * 2);  // per channel: q.K^T 8 heads x 8, p.V 8 passes x 2
    EXPECT_EQ(c.rd_mac, 16u * 2);
    EXPECT_EQ(c.wr_gb, 64u * 2 + 2u * 2);
    // The device path answers the same op with the same mapping.
    const PimDevice dev(s);
    EXPECT_DOUBLE_EQ(dev.estimate(attention_op(1, 32)).t_ns, c.t_ns);
    // Without the preset's mapping the op is the two-GEMV estimate, a different cost.
    PimSpec g = s;
    g.attention_mapping = AttentionMapping::GEMV;
    EXPECT_NE(PimDevice(g).estimate(attention_op(1, 32)).t_ns, c.t_ns);
}

// The single-bank requests and EWMUL columns of one device's Llama2-7B block (TP 8, context 128)
// equal those of CENT's own trace on aim_simulator (configs/hw/references/cent.toml
// [llama2_7b_tp8_L128]: n_WR 7680, n_RD 1792, n_EWMUL16 17536), counted from CENT's mapping
// rather than taken from its output.
TEST(PimCentMapping, Llama2BlockCountsMatchCentTrace) {
    const PimSpec s = load_pim_preset("pim_cxl_aim");
    CentBlockShape b;
    b.dim = 4096, b.ffn_dim = 11008, b.heads = b.kv_heads = 32, b.head_dim = 128, b.context = 128;
    b.devices = 8;
    CentCost c = cent_attention(s, b);
    c += cent_vector_ops(s, b);
    EXPECT_EQ(c.host_wr, 7680u);
    EXPECT_EQ(c.host_rd, 1792u);
    EXPECT_EQ(c.ewmul, 17536u);
}

TEST(PimCentMapping, BadShapeNamesThePreset) {
    const PimSpec s = load_pim_preset("pim_gddr6_aim");
    CentBlockShape b;
    b.heads = 3, b.kv_heads = 2;
    try {
        cent_attention(s, b);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(),
                     "CENT mapping on 'pim_gddr6_aim': heads 3 / kv heads 2 / head_dim 128 / context 1 / devices 1 "
                     "are not a valid shape");
    }
}
