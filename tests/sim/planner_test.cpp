#include "sim/planner.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "fake_hw.h"

using namespace duet;
using namespace duet::sim;

TEST(Planner, RecordCountsAndOrder) {
    ModelShape s = fake::small_shape();
    Plan p = plan_generation(s, 10, 3, 1);
    ASSERT_EQ(p.forwards.size(), 3u);
    const size_t per = 4 + 15 * size_t(s.n_layer);
    EXPECT_EQ(p.ops.size(), 3 * per);
    EXPECT_EQ(p.ops[0].kind, OpKind::EMBED);
    EXPECT_EQ(p.ops[2].role, WeightRole::ATTN_Q);
    EXPECT_EQ(p.ops[per - 1].kind, OpKind::OUTPUT);
    EXPECT_EQ(p.ops[per - 2].role, WeightRole::LM_HEAD);
    EXPECT_EQ(p.ops[5].kind, OpKind::ROPE);
    EXPECT_EQ(p.ops[5].n, (s.n_head + s.n_head_kv) * s.head_dim);
    EXPECT_EQ(p.forwards[1].n_past, 10);
    EXPECT_EQ(p.forwards[2].n_past, 11);
    EXPECT_EQ(p.ops[per].phase, Phase::DECODE);
}

TEST(Planner, MatmulFlopsAndBytesClosedForm) {
    ModelShape s = fake::small_shape();
    const int64_t T = 7, B = 2;
    Plan p = plan_generation(s, T, 1, int32_t(B));
    double flops = 0;
    uint64_t wbytes = 0;
    for (const auto& r : p.ops)
        if (r.kind == OpKind::MATMUL && r.layer >= 0) flops += r.flops, wbytes += r.weight_bytes;
    const int64_t q = s.n_head * s.head_dim, kv = s.n_head_kv * s.head_dim;
    const int64_t per_layer_params = 2 * q * s.n_embd + 2 * kv * s.n_embd + 3 * s.n_ff * s.n_embd;
    EXPECT_DOUBLE_EQ(flops, 2.0 * double(B * T) * double(per_layer_params * s.n_layer));
    EXPECT_EQ(wbytes, uint64_t(per_layer_params * s.n_layer) * 2);
    const OpRecord& lm = p.ops[p.ops.size() - 2];
    EXPECT_EQ(lm.role, WeightRole::LM_HEAD);
    EXPECT_EQ(lm.m, B);  // logits of the last token per sequence only
    size_t attention = 0;
    for (const auto& r : p.ops) attention += r.kind == OpKind::ATTENTION;
    EXPECT_EQ(attention, size_t(s.n_layer));  // one per layer for the whole batch
}

TEST(Planner, AttentionCausalFlopsAndKvBytes) {
    ModelShape s = fake::small_shape();
    Plan p = plan_generation(s, 5, 2, 1);
    const OpRecord* pre = nullptr;
    const OpRecord* dec = nullptr;
    for (const auto& r : p.ops)
        if (r.kind == OpKind::ATTENTION && r.layer == 0) (r.phase == Phase::PREFILL ? pre : dec) = &r;
    ASSERT_TRUE(pre && dec);
    EXPECT_DOUBLE_EQ(pre->flops, 4.0 * 16 * 64 * (1 + 2 + 3 + 4 + 5));
    EXPECT_EQ(dec->n, 6);
    EXPECT_DOUBLE_EQ(dec->flops, 4.0 * 16 * 64 * 6);
    EXPECT_EQ(dec->weight_bytes, uint64_t(6 * 2 * 4 * 64 * 2));
}

TEST(Planner, SplitForwardsRecoversSpans) {
    Plan p = plan_generation(fake::small_shape(), 9, 4, 3);
    auto spans = split_forwards(p.ops);
    ASSERT_EQ(spans.size(), p.forwards.size());
    for (size_t i = 0; i < spans.size(); ++i) {
        EXPECT_EQ(spans[i].begin, p.forwards[i].begin);
        EXPECT_EQ(spans[i].end, p.forwards[i].end);
        EXPECT_EQ(spans[i].n_past, p.forwards[i].n_past);
        EXPECT_EQ(spans[i].n_new, p.forwards[i].n_new);
        EXPECT_EQ(spans[i].phase, p.forwards[i].phase);
    }
}

TEST(Planner, BadArguments) {
    try {
        plan_generation(fake::small_shape(), 0, 1, 1);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "--seq-len = 0 is not allowed (allowed: 1 or more)");
    }
    EXPECT_THROW(plan_generation(fake::small_shape(), 1, 0, 1), Error);
}
