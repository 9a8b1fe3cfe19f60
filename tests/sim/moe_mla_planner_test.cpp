// Mixture-of-Experts and latent attention, trace-only: the graph the builders make, the records
// the planner lowers from it (bytes and FLOPs against closed forms computed here by hand), the
// latent KV cache and the memory split, and the published figures of the real presets.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "fake_hw.h"
#include "moe_mla_toy.h"
#include "graph/graph.h"
#include "model/arch_presets.h"
#include "model/hparams.h"
#include "sim/op_shape.h"
#include "sim/planner.h"
#include "sim/report.h"

using namespace duet;
using namespace duet::sim;
using duet::test::find;
using duet::test::gqa_moe_shape;
using duet::test::mla_moe_shape;

namespace {

std::map<OpKind, int> kinds_of_layer(const graph::Graph& g, int32_t layer) {
    std::map<OpKind, int> k;
    for (const auto& n : g.nodes)
        if (n.layer == layer) ++k[n.kind];
    return k;
}

}  // namespace

TEST(MoeMlaGraph, DenseFirstLayersThenExperts) {
    const graph::Graph g = graph::build_graph(mla_moe_shape());
    auto l0 = kinds_of_layer(g, 0), l1 = kinds_of_layer(g, 1);
    // layer 0: MLA + the dense FFN
    EXPECT_EQ(l0[OpKind::MOE_MATMUL], 0);
    EXPECT_EQ(l0[OpKind::SWIGLU], 1);
    // layer 1: MLA + router, 3 grouped expert matmuls, the shared expert (3 matmuls), combine
    EXPECT_EQ(l1[OpKind::MOE_ROUTE], 1);
    EXPECT_EQ(l1[OpKind::MOE_MATMUL], 3);
    EXPECT_EQ(l1[OpKind::MOE_COMBINE], 1);
    EXPECT_EQ(l1[OpKind::SWIGLU], 2);  // routed and shared
    // MLA: q_a, q_b, kv_a, attn_out + router + 3 shared = 8 matmuls; 2 per-head matmuls; norms:
    // attn, q_a, kv_a, ffn
    EXPECT_EQ(l1[OpKind::MATMUL], 8);
    EXPECT_EQ(l1[OpKind::HEAD_MATMUL], 2);
    EXPECT_EQ(l1[OpKind::MLA_ATTENTION], 1);
    EXPECT_EQ(l1[OpKind::ATTENTION], 0);
    EXPECT_EQ(l1[OpKind::RMSNORM], 4);
    EXPECT_EQ(l1[OpKind::KV_WRITE], 1);
    // the routed tensors hold k rows of each token side by side
    for (const auto& n : g.nodes) {
        if (n.kind == OpKind::MOE_MATMUL && n.layer == 1) {
            EXPECT_EQ(g.tensors[size_t(n.out[0])].width, 2 * n.n) << graph::weight_role_name(n.role);
        }
    }
    // every expert's matrices are weights of the model: 8 per role
    int64_t experts = 0;
    for (const auto& m : graph::matrices(g))
        if (m.role == WeightRole::FFN_UP_EXPS) experts += m.count;
    EXPECT_EQ(experts, 2 * 8);
}

// --fuse fuses what the passes know and leaves experts and latent attention as they are: the
// expert and attention records are the unfused plan's, the matmuls' FLOPs and weight bytes add up
// to the same per forward; the grouped-query toy's Q, K and V become one matmul, while of the
// latent-attention toy only its dense first layer's gate and up fuse.
TEST(MoeMlaGraph, FusionKeepsExpertsAndLatentAttentionAndTheirCosts) {
    graph::GraphOptions go;
    go.fuse = true;
    for (const ModelShape& s : {mla_moe_shape(), gqa_moe_shape()}) {
        const Plan plain = plan_generation(s, 16, 2, 1), fused = plan_generation(s, 16, 2, 1, go);
        auto sum = [](const Plan& p, Phase ph, bool experts) {
            double flops = 0, bytes = 0;
            int64_t matmuls = 0;
            for (const OpRecord& r : p.ops)
                if (r.phase == ph && (r.kind == OpKind::MOE_MATMUL) == experts && is_matmul_kind(r.kind))
                    flops += r.flops, bytes += double(r.weight_bytes), ++matmuls;
            return std::tuple{flops, bytes, matmuls};
        };
        for (const Phase ph : {Phase::PREFILL, Phase::DECODE}) {
            const auto [ef, eb, en] = sum(fused, ph, true);
            EXPECT_EQ(sum(plain, ph, true), std::tuple(ef, eb, en)) << s.name;  // expert matmuls untouched
            const auto [pf, pb, pn] = sum(plain, ph, false);
            const auto [ff, fb, fn] = sum(fused, ph, false);
            EXPECT_DOUBLE_EQ(ff, pf) << s.name;
            EXPECT_DOUBLE_EQ(fb, pb) << s.name;
            if (s.is_mla()) EXPECT_EQ(fn, pn - 1) << s.name;  // the dense first layer's gate|up only
            else EXPECT_LT(fn, pn) << s.name;                 // Q|K|V fused
        }
        auto attention = [](const Plan& p) {
            std::vector<std::pair<double, uint64_t>> a;
            for (const OpRecord& r : p.ops)
                if (r.kind == OpKind::ATTENTION) a.push_back({r.flops, r.weight_bytes});
            return a;
        };
        EXPECT_EQ(attention(fused), attention(plain)) << s.name;
    }
}

TEST(MoePlanner, DecodeReadsOnlyTheChosenExperts) {
    const ModelShape s = mla_moe_shape();
    const Plan p = plan_generation(s, 16, 2, 1);
    const OpRecord& up = find(p, Phase::DECODE, 1, OpKind::MOE_MATMUL, WeightRole::FFN_UP_EXPS);
    EXPECT_EQ(up.m, 2);  // one token, routed to 2 experts
    EXPECT_EQ(up.n_expert_active, 2);
    EXPECT_EQ(up.weight_bytes, uint64_t(2 * 24 * 64 * 2));  // 2 experts of [24][64] f16
    EXPECT_DOUBLE_EQ(up.flops, 2.0 * 2 * 24 * 64);
    EXPECT_EQ(up.in_bytes, uint64_t(4 * 2 * 64));
    const OpRecord& down = find(p, Phase::DECODE, 1, OpKind::MOE_MATMUL, WeightRole::FFN_DOWN_EXPS);
    EXPECT_EQ(down.n, 64);
    EXPECT_EQ(down.k, 24);
    EXPECT_EQ(down.weight_bytes, uint64_t(2 * 64 * 24 * 2));
    // the router reads its whole [8][64] matrix; the shared expert is a dense FFN of 24
    EXPECT_EQ(find(p, Phase::DECODE, 1, OpKind::MATMUL, WeightRole::FFN_GATE_INP).weight_bytes, uint64_t(8 * 64 * 2));
    EXPECT_EQ(find(p, Phase::DECODE, 1, OpKind::MATMUL, WeightRole::FFN_UP_SHEXP).weight_bytes, uint64_t(24 * 64 * 2));
    const OpRecord& comb = find(p, Phase::DECODE, 1, OpKind::MOE_COMBINE);
    EXPECT_EQ(comb.in_bytes, uint64_t(4 * (2 * 64 + 2 + 64)));  // expert rows, weights, shared output
    EXPECT_DOUBLE_EQ(comb.flops, 2.0 * 64 * 2 + 2.0 * 64);
}

TEST(MoePlanner, BatchesTouchTheExpectedNumberOfExperts) {
    // 4 tokens, each choosing 2 of 8: expected distinct experts 8 * (1 - (6/8)^4) = 5.47 -> 6 read.
    const ModelShape s = mla_moe_shape();
    const Plan p = plan_generation(s, 16, 2, 4);
    const OpRecord& gate = find(p, Phase::DECODE, 2, OpKind::MOE_MATMUL, WeightRole::FFN_GATE_EXPS);
    EXPECT_EQ(gate.m, 8);
    EXPECT_EQ(gate.n_expert_active, 6);
    EXPECT_EQ(gate.weight_bytes, uint64_t(6 * 24 * 64 * 2));
    EXPECT_DOUBLE_EQ(gate.flops, 2.0 * 8 * 24 * 64);
    // a 16-token prefill of 4 sequences touches all 8: 8 * (1 - 0.75^64) rounds up to 8
    const OpRecord& pre = find(p, Phase::PREFILL, 2, OpKind::MOE_MATMUL, WeightRole::FFN_GATE_EXPS);
    EXPECT_EQ(pre.m, 64 * 2);
    EXPECT_EQ(pre.n_expert_active, 8);
    // The device sees one matmul of every active expert's rows with the rows per expert as m.
    const hw::OpShape sh = to_op_shape(gate);
    EXPECT_EQ(sh.cls, hw::OpClass::GEMM);
    EXPECT_EQ(sh.m, 2);  // ceil(8 routed rows / 6 experts)
    EXPECT_EQ(sh.n, 6 * 24);
    EXPECT_EQ(sh.k, 64);
    EXPECT_EQ(to_op_shape(find(p, Phase::DECODE, 2, OpKind::MOE_MATMUL, WeightRole::FFN_GATE_EXPS)).weight_bytes,
              gate.weight_bytes);
}

TEST(MlaPlanner, LatentCacheAndAbsorbedAttention) {
    const ModelShape s = mla_moe_shape();
    const int64_t H = 4, C = 32, R = 8, N = 16, V = 16;
    const Plan p = plan_generation(s, 10, 3, 1);
    // the cache row is the latent: C + R values in f16
    EXPECT_EQ(find(p, Phase::PREFILL, 0, OpKind::KV_WRITE).out_bytes, uint64_t(10 * (C + R) * 2));
    EXPECT_EQ(find(p, Phase::DECODE, 0, OpKind::KV_WRITE).out_bytes, uint64_t((C + R) * 2));
    const OpRecord& dec = find(p, Phase::DECODE, 0, OpKind::MLA_ATTENTION);
    EXPECT_EQ(dec.n, 11);  // context after the first decode token
    EXPECT_EQ(dec.k, C + R);
    EXPECT_EQ(dec.n_head, H);
    EXPECT_EQ(dec.n_head_kv, 1);
    EXPECT_EQ(dec.weight_bytes, uint64_t(11 * (C + R) * 2));  // every head reads the same rows, once
    EXPECT_DOUBLE_EQ(dec.flops, 2.0 * H * (2 * C + R) * 11);
    const OpRecord& pre = find(p, Phase::PREFILL, 0, OpKind::MLA_ATTENTION);
    EXPECT_DOUBLE_EQ(pre.flops, 2.0 * H * (2 * C + R) * (10 * 11 / 2));  // causal pairs
    // absorption: W_UK [H][C][N] and W_UV [H][V][C] are per-head matmuls
    const OpRecord& kb = find(p, Phase::DECODE, 0, OpKind::HEAD_MATMUL, WeightRole::ATTN_K_B);
    EXPECT_EQ(kb.weight_bytes, uint64_t(H * C * N * 2));
    EXPECT_DOUBLE_EQ(kb.flops, 2.0 * H * C * N);
    EXPECT_EQ(kb.out_bytes, uint64_t(4 * H * C));
    const OpRecord& vb = find(p, Phase::DECODE, 0, OpKind::HEAD_MATMUL, WeightRole::ATTN_V_B);
    EXPECT_EQ(vb.weight_bytes, uint64_t(H * V * C * 2));
    EXPECT_EQ(find(p, Phase::DECODE, 0, OpKind::MATMUL, WeightRole::ATTN_OUT).k, H * V);
    EXPECT_EQ(find(p, Phase::DECODE, 0, OpKind::MATMUL, WeightRole::ATTN_Q_B).n, H * (N + R));
    EXPECT_EQ(find(p, Phase::DECODE, 0, OpKind::MATMUL, WeightRole::ATTN_KV_A_MQA).n, C + R);
    EXPECT_EQ(to_op_shape(kb).n, H * C);
    EXPECT_EQ(to_op_shape(dec).cls, hw::OpClass::ATTENTION);
}

TEST(MoeMlaMemory, ExpertsSharedAndLatentKv) {
    fake::Rig rig;
    const ModelShape s = mla_moe_shape();
    const Plan p = plan_generation(s, 60, 4, 2);
    RunOptions o;
    o.placement.policy = Policy::NPU_ONLY;
    const RunReport r = simulate_run(s, p, 64, 2, o, rig.hw());
    // 2 sequences of 64 tokens: one 128-token block each (fake rig), 3 layers, 40 latent values, f16
    EXPECT_EQ(r.memory.kv_cache_bytes, uint64_t(2 * 128 * 3 * (32 + 8) * 2));
    EXPECT_TRUE(r.memory.kv_cache_latent);
    // routed experts: 2 MoE layers x 8 experts x 3 matrices, each in the fake NZ layout (16-padded, f16)
    auto nz = [](int64_t n, int64_t k) { return uint64_t((n + 15) / 16 * 16) * uint64_t((k + 15) / 16 * 16) * 2; };
    EXPECT_EQ(r.memory.weights_experts_bytes, uint64_t(2 * 8) * (2 * nz(24, 64) + nz(64, 24)));
    EXPECT_GT(r.memory.weights_bytes, r.memory.weights_experts_bytes);
}

// The real presets against figures their authors published.
TEST(MoeMlaPresets, DeepSeekV3LatentKvIs70KBPerToken) {
    // DeepSeek-V3 caches 70.272 KB per token in BF16 (Zhao et al., "Insights into DeepSeek-V3",
    // ISCA 2025, table 1): 61 layers x (512 + 64) values x 2 bytes.
    const ModelShape s = model::model_shape(*model::find_arch_preset("deepseek-v3"), DType::BF16, DType::BF16);
    EXPECT_EQ(s.n_layer * int64_t(row_bytes(s.kv_dtype, s.kv_values_per_token_layer())), 70272);
    // the same model with a K/V cache per head (128 heads of 192 K + 128 V values) would hold 71x it
    EXPECT_EQ(s.n_layer * 128 * (192 + 128) * 2 / 70272, 71);
}

TEST(MoeMlaPresets, DeepSeekV3DecodeReadsItsActivatedParameters) {
    // 36.6B activated parameters per token including the 0.9B output head (DeepSeek-V3 README_WEIGHTS.md,
    // deepseek-ai/DeepSeek-V3); the embedding lookup reads one row. Batch 1 decode in bf16: every matrix
    // record's weight bytes / 2.
    const ModelShape s = model::model_shape(*model::find_arch_preset("deepseek-v3"), DType::BF16, DType::BF16);
    const Plan p = plan_generation(s, 8, 2, 1);
    double bytes = 0;
    for (const auto& r : p.ops)
        if (r.phase == Phase::DECODE && graph::is_matmul_kind(r.kind)) bytes += double(r.weight_bytes);
    EXPECT_NEAR(bytes / 2 / 1e9, 36.62, 0.01);
}

TEST(MoeMlaPresets, Qwen3ActivatedParameters) {
    // Qwen3-30B-A3B activates 3.3B parameters per token, Qwen3-235B-A22B 22B (Qwen3 technical
    // report, arXiv 2505.09388, table 2), embedding included; here the matrices read at decode
    // plus the one embedding row.
    for (auto [name, want] : {std::pair<const char*, double>{"qwen3-30b-a3b", 3.3}, {"qwen3-235b-a22b", 22.0}}) {
        const model::Hparams& hp = *model::find_arch_preset(name);
        const ModelShape s = model::model_shape(hp, DType::BF16, DType::BF16);
        const Plan p = plan_generation(s, 8, 2, 1);
        double bytes = 0;
        for (const auto& r : p.ops)
            if (r.phase == Phase::DECODE && graph::is_matmul_kind(r.kind)) bytes += double(r.weight_bytes);
        const double active = bytes / 2 + double(hp.n_vocab * hp.n_embd);  // + the embedding table
        EXPECT_NEAR(active / 1e9, want, 0.05 * want) << name;
    }
}

TEST(MoeMlaPresets, Qwen3NormsQueriesAndKeysPerHead) {
    const ModelShape s = model::model_shape(*model::find_arch_preset("qwen3-30b-a3b"), DType::BF16, DType::BF16);
    const Plan p = plan_generation(s, 8, 2, 1);
    const OpRecord& qn = find(p, Phase::DECODE, 5, OpKind::RMSNORM, WeightRole::NONE);  // the layer's first: attn_norm
    EXPECT_EQ(qn.n, 2048);
    int norms = 0;
    for (const auto& r : p.ops) {
        if (r.phase != Phase::DECODE || r.layer != 5 || r.kind != OpKind::RMSNORM) continue;
        ++norms;
        if (r.n == 32 * 128) {  // the query heads' norm: one [128] weight for all 32 heads
            EXPECT_EQ(r.weight_bytes, uint64_t(4 * 128));
            EXPECT_DOUBLE_EQ(r.flops, 4.0 * 32 * 128);
        }
    }
    EXPECT_EQ(norms, 4);  // attn_norm, q_norm, k_norm, ffn_norm
}
