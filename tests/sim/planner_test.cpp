#include "sim/planner.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "fake_hw.h"
#include "sim/report.h"

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

// Prefix reuse: with n_cached of T prompt tokens cached, the prefill computes only the T - c
// uncached tokens (matmuls, KV writes), attention reads all T positions, decode is unchanged.
TEST(Planner, PrefixReuseChargesOnlyTheUncachedTokens) {
    ModelShape s = fake::small_shape();
    const int64_t T = 20, c = 12, G = 3;
    const Plan full = plan_generation(s, T, G, 1);
    const Plan reuse = plan_generation(s, T, G, 1, {}, c);
    ASSERT_EQ(reuse.forwards.size(), size_t(G));
    EXPECT_EQ(reuse.forwards[0].n_past, c);
    EXPECT_EQ(reuse.forwards[0].n_new, T - c);
    double flops = 0;
    for (size_t i = reuse.forwards[0].begin; i < reuse.forwards[0].end; ++i) {
        const OpRecord& r = reuse.ops[i];
        if (r.kind == OpKind::MATMUL && r.layer >= 0) flops += r.flops;
        if (r.kind == OpKind::KV_WRITE) {
            EXPECT_EQ(r.m, T - c);
        }
        if (r.kind == OpKind::ATTENTION) {
            EXPECT_EQ(r.n, T);  // the whole context is read
            EXPECT_EQ(r.weight_bytes, uint64_t(T * 2 * 4 * 64 * 2));
            // causal pairs of the new rows: sum_{i=c+1..T} i
            EXPECT_DOUBLE_EQ(r.flops, 4.0 * 16 * 64 * double(T * (T + 1) - c * (c + 1)) / 2);
        }
    }
    const int64_t q = s.n_head * s.head_dim, kv = s.n_head_kv * s.head_dim;
    const int64_t per_layer_params = 2 * q * s.n_embd + 2 * kv * s.n_embd + 3 * s.n_ff * s.n_embd;
    EXPECT_DOUBLE_EQ(flops, 2.0 * double(T - c) * double(per_layer_params * s.n_layer));
    // decode forwards are the same records as without reuse
    ASSERT_EQ(full.ops.size(), reuse.ops.size());
    for (size_t i = full.forwards[1].begin; i < full.ops.size(); ++i) {
        EXPECT_EQ(full.ops[i].flops, reuse.ops[i].flops);
        EXPECT_EQ(full.ops[i].weight_bytes, reuse.ops[i].weight_bytes);
    }
}

TEST(Planner, PrefixReuseZeroIsThePlainPlanAndTheWholePromptIsAnError) {
    ModelShape s = fake::small_shape();
    const Plan a = plan_generation(s, 9, 2, 2), b = plan_generation(s, 9, 2, 2, {}, 0);
    ASSERT_EQ(a.ops.size(), b.ops.size());
    for (size_t i = 0; i < a.ops.size(); ++i) EXPECT_EQ(a.ops[i].flops, b.ops[i].flops);
    try {
        plan_generation(s, 9, 2, 1, {}, 9);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "cached prefix = 9 tokens is not allowed for a 9-token prompt (allowed: 0 to 8: at least "
                               "one token is computed)");
    }
    EXPECT_THROW(plan_generation(s, 9, 2, 1, {}, -1), Error);
}

// The modelled TTFT falls with the cached prefix (the NPU's prefill work shrinks) and the
// decode steps are unchanged.
TEST(Planner, PrefixReuseLowersTheModelledTtftOnly) {
    fake::Rig rig;
    ModelShape s = fake::small_shape();
    RunOptions o;
    o.placement.policy = Policy::NPU_ONLY;
    const int64_t T = 512, G = 4;
    const RunReport cold = simulate_run(s, plan_generation(s, T, G, 1), T + G, 1, o, rig.hw());
    const RunReport warm = simulate_run(s, plan_generation(s, T, G, 1, {}, 448), T + G, 1, o, rig.hw());
    EXPECT_LT(warm.timeline.ttft_ns, cold.timeline.ttft_ns);
    EXPECT_NEAR(warm.tbt_mean_ns, cold.tbt_mean_ns, 1e-9 * cold.tbt_mean_ns);  // same steps, summed in another order
    EXPECT_EQ(warm.memory.kv_cache_bytes, cold.memory.kv_cache_bytes);  // the KV still holds the whole context
}
