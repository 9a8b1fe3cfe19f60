// The [pim]/[reorder]/[memory] layout knobs reach the report through the real layout model.
#include "sim/layout_binding.h"

#include <gtest/gtest.h>

#include "fake_hw.h"
#include "sim/report.h"

using namespace duet;
using namespace duet::sim;

namespace {

layout::PimLayoutParams params(int align_bits, int block_kb, int granularity) {
    layout::PimLayoutParams p;
    p.alignment_bits = align_bits;
    p.block_size_kb = block_kb;
    p.index_granularity = granularity;
    return p;
}

RunReport run_with(const LayoutBinding& lay, ModelShape s, RunOptions o = {}) {
    fake::Rig rig;
    SimHardware hw = rig.hw();
    hw.layout = &lay;
    Plan p = plan_generation(s, 32, 4, 1);
    return simulate_run(s, p, 36, 1, o, hw);
}

}  // namespace

TEST(LayoutBinding, IndexClosedFormForA4096Square) {
    // 16 KiB blocks of a 4096-wide f16 row: 2 rows per block, 2048 blocks; each block holds
    // 2 * 512 granules -> 16 anchors at granularity 64: 24 + 16 * 4 = 88 bytes per block.
    LayoutBinding lay(params(128, 16, 64), {}, {});
    PimMatrixInfo m = lay.pim(4096, 4096, DType::F16);
    EXPECT_EQ(m.base_bytes, uint64_t(4096) * 4096 * 2);
    EXPECT_EQ(m.n_blocks, 2048);
    EXPECT_EQ(m.index_bytes, uint64_t(2048) * 88);
    EXPECT_EQ(lay.nz_bytes(4096, 4096, DType::F16), uint64_t(4096) * 4096 * 2);
    EXPECT_GT(m.to_nz_ns, 0);
}

TEST(LayoutBinding, KnobsMoveMemoryAndTime) {
    ModelShape s = fake::small_shape();
    s.n_embd = 1000;  // rows of 1000 elements: 256-bit granules (16 elements) pad them
    s.n_head = 10;
    s.head_dim = 100;
    s.n_head_kv = 2;
    RunReport base = run_with(LayoutBinding(params(128, 16, 64), {}, {}), s);
    RunReport wide = run_with(LayoutBinding(params(256, 16, 64), {}, {}), s);
    EXPECT_GT(wide.memory.weights_bytes, base.memory.weights_bytes);  // alignment: padding
    RunReport big_blocks = run_with(LayoutBinding(params(128, 64, 64), {}, {}), s);
    EXPECT_LT(big_blocks.memory.block_index_bytes, base.memory.block_index_bytes);  // fewer descriptors
    RunReport coarse = run_with(LayoutBinding(params(128, 16, 512), {}, {}), s);
    EXPECT_LT(coarse.memory.block_index_bytes, base.memory.block_index_bytes);  // fewer anchors
    RunOptions o;
    o.preconvert_first_token = false;
    RunReport nz = run_with(LayoutBinding(params(128, 16, 64), {}, {}), s, o);
    RunReport nd = run_with(LayoutBinding(params(128, 16, 64), {}, {}, true), s, o);
    EXPECT_GT(nd.timeline.conversion_ns, nz.timeline.conversion_ns);  // target_format ND: a vector pass
    EXPECT_GE(nd.timeline.ttft_ns, nz.timeline.ttft_ns);
}
