// The tensor catalogue (graph/tensor_catalogue.h): one row per tensor, and the numbers its
// readers take from it — names, shapes, parameter counts, fusion parts, tensor-parallel ranges.
#include "graph/tensor_catalogue.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace duet::graph {
namespace {

// Llama-2-7B (its Hugging Face config.json): 32000 tokens, 4096 wide, 32 layers of 32 heads,
// FFN 11008, untied lm-head.
ModelShape llama2_7b() {
    ModelShape s;
    s.name = "llama2-7b";
    s.n_vocab = 32000;
    s.n_embd = 4096;
    s.n_layer = 32;
    s.n_head = s.n_head_kv = 32;
    s.head_dim = 128;
    s.n_ff = 11008;
    s.n_rot = 128;
    return s;
}

TEST(TensorCatalogue, EveryRoleHasOneWeightRowAndUniqueNames) {
    std::set<std::string> names, ggufs;
    for (int r = 1; r < kWeightRoleCount; ++r) {
        const TensorSpec& t = weight_spec(WeightRole(r));
        EXPECT_EQ(t.role, WeightRole(r));
        EXPECT_EQ(t.part, Part::WEIGHT);
        EXPECT_TRUE(names.insert(t.name).second) << t.name;
    }
    for (const TensorSpec& t : tensor_catalogue())
        if (t.gguf) {
            EXPECT_TRUE(ggufs.insert(t.gguf).second) << t.gguf;
        }
}

TEST(TensorCatalogue, RoleNamesAreTheReportTokens) {
    // Reports, traces and CSV files print these; they are part of the output format.
    const std::vector<std::pair<WeightRole, std::string>> want = {
        {WeightRole::NONE, "none"},           {WeightRole::ATTN_Q, "attn_q"},
        {WeightRole::ATTN_K, "attn_k"},       {WeightRole::ATTN_V, "attn_v"},
        {WeightRole::ATTN_OUT, "attn_out"},   {WeightRole::FFN_GATE, "ffn_gate"},
        {WeightRole::FFN_UP, "ffn_up"},       {WeightRole::FFN_DOWN, "ffn_down"},
        {WeightRole::LM_HEAD, "lm_head"},     {WeightRole::ATTN_QKV, "attn_qkv"},
        {WeightRole::FFN_GATE_UP, "ffn_gate_up"}, {WeightRole::TOKEN_EMBD, "token_embd"},
        {WeightRole::ATTN_NORM, "attn_norm"}, {WeightRole::FFN_NORM, "ffn_norm"},
        {WeightRole::OUTPUT_NORM, "output_norm"}, {WeightRole::ROPE_FREQS, "rope_freqs"},
    };
    for (const auto& [role, name] : want) EXPECT_EQ(weight_role_name(role), name);
}

TEST(TensorCatalogue, GgufNamesAndShapes) {
    const ModelShape s = llama2_7b();
    EXPECT_EQ(gguf_name(weight_spec(WeightRole::ATTN_Q), 7), "blk.7.attn_q.weight");
    EXPECT_EQ(gguf_name(*bias_spec(WeightRole::ATTN_K), 0), "blk.0.attn_k.bias");
    EXPECT_EQ(gguf_name(weight_spec(WeightRole::LM_HEAD), 3), "output.weight");  // not per layer
    EXPECT_EQ(bias_spec(WeightRole::FFN_UP), nullptr);
    const TensorSpec& down = weight_spec(WeightRole::FFN_DOWN);
    EXPECT_EQ(spec_rows(down, s), 4096);
    EXPECT_EQ(spec_cols(down, s), 11008);
    // fused roles: their parts' rows stacked
    EXPECT_EQ(spec_rows(weight_spec(WeightRole::ATTN_QKV), s), 3 * 4096);
    EXPECT_EQ(spec_rows(weight_spec(WeightRole::FFN_GATE_UP), s), 2 * 11008);
}

TEST(TensorCatalogue, ParameterCountIsThePublishedOne) {
    ModelShape s = llama2_7b();
    EXPECT_EQ(count_params(s), 6738415616);  // Llama-2-7b-hf, "6.74B"
    // tied: the lm-head reads the table (one vocab x embd less); rope factors: n_rot / 2 more
    s.tied_output = true;
    s.has_rope_freqs = true;
    EXPECT_EQ(count_params(s), 6738415616 - 32000 * 4096 + 64);
    // q/k/v biases: one vector per projection and layer
    s.qkv_bias = true;
    EXPECT_EQ(count_params(s), 6738415616 - 32000 * 4096 + 64 + 32 * 3 * 4096);
}

TEST(TensorCatalogue, FusedPartsInRowOrder) {
    const auto qkv = fused_parts(WeightRole::ATTN_QKV);
    EXPECT_EQ(std::vector<WeightRole>(qkv.begin(), qkv.end()),
              (std::vector<WeightRole>{WeightRole::ATTN_Q, WeightRole::ATTN_K, WeightRole::ATTN_V}));
    const auto gu = fused_parts(WeightRole::FFN_GATE_UP);
    EXPECT_EQ(std::vector<WeightRole>(gu.begin(), gu.end()),
              (std::vector<WeightRole>{WeightRole::FFN_GATE, WeightRole::FFN_UP}));
    EXPECT_TRUE(fused_parts(WeightRole::ATTN_OUT).empty());
    EXPECT_EQ(fused_role_of(WeightRole::ATTN_V), WeightRole::ATTN_QKV);
    EXPECT_EQ(fused_role_of(WeightRole::FFN_DOWN), WeightRole::NONE);
    EXPECT_TRUE(ffn_input_matmul(WeightRole::FFN_UP));
    EXPECT_TRUE(ffn_input_matmul(WeightRole::FFN_GATE_UP));
    EXPECT_FALSE(ffn_input_matmul(WeightRole::FFN_DOWN));
}

TEST(TensorCatalogue, TensorParallelRangesTileEverySplitTensor) {
    // 8 query heads, 2 KV heads, tp 4: KV heads replicated on two ranks each (GQA); everything
    // split by query heads or by the FFN range is tiled exactly once by the ranks.
    ModelShape s = llama2_7b();
    s.n_head = 8;
    s.n_head_kv = 2;
    s.head_dim = 16;
    s.n_ff = 96;
    for (const TensorSpec& t : tensor_catalogue()) {
        if (t.tp == TpSplit::REPLICATED || t.kind == WeightKind::FUSED) continue;
        const Dim d = tp_split_dim(t);
        const int64_t full = dim_value(d, s);
        int64_t next = 0;
        for (int r = 0; r < 4; ++r) {
            const Range got = tp_range(d, tp_shard(s, 4, r), s);
            if (d == Dim::KV_DIM) {
                EXPECT_EQ(got, (Range{(r / 2) * 16, 16})) << t.name << " rank " << r;
                continue;
            }
            EXPECT_EQ(got.begin, next) << t.name << " rank " << r;
            next = got.end();
        }
        if (d != Dim::KV_DIM) {
            EXPECT_EQ(next, full) << t.name;
        }
    }
}

TEST(TensorCatalogue, TensorParallelRangesTileTheExpertAndLatentTensors) {
    // DeepSeek-V3's block at a small size: 8 heads (MLA), experts of 64 features, a shared expert
    // of 96; tp 4 tiles every split Dim exactly once, the router and low-rank projections stay whole.
    ModelShape s = llama2_7b();
    s.n_head = s.n_head_kv = 8;
    s.head_dim = 48;
    s.q_lora_rank = 32;
    s.kv_lora_rank = 64;
    s.qk_rope_head_dim = 16;
    s.qk_nope_head_dim = 32;
    s.v_head_dim = 24;
    s.n_expert = 16;
    s.n_expert_used = 4;
    s.n_ff_exp = 64;
    s.n_ff_shexp = 96;
    int split = 0;
    for (const TensorSpec& t : tensor_catalogue()) {
        if (t.tp == TpSplit::REPLICATED || t.kind == WeightKind::FUSED || !present(t, s, 0)) continue;
        const Dim d = tp_split_dim(t);
        int64_t next = 0;
        for (int r = 0; r < 4; ++r) {
            const Range got = tp_range(d, tp_shard(s, 4, r), s);
            EXPECT_EQ(got.begin, next) << t.name << " rank " << r;
            EXPECT_GT(got.count, 0) << t.name << " rank " << r;
            next = got.end();
        }
        EXPECT_EQ(next, dim_value(d, s)) << t.name;
        ++split;
    }
    EXPECT_EQ(split, 10);  // q_b, k_b, v_b, attn_out, 3 routed and 3 shared expert matrices
    for (WeightRole r : {WeightRole::FFN_GATE_INP, WeightRole::ATTN_Q_A, WeightRole::ATTN_KV_A_MQA,
                         WeightRole::ATTN_KV_A_NORM, WeightRole::FFN_EXP_PROBS_B})
        EXPECT_EQ(weight_spec(r).tp, TpSplit::REPLICATED) << weight_role_name(r);
    EXPECT_EQ(weight_spec(WeightRole::ATTN_K_B).tp, TpSplit::STACK);
}

TEST(TensorCatalogue, PresenceFollowsTheShapeFlags) {
    ModelShape s = llama2_7b();
    EXPECT_FALSE(present(*bias_spec(WeightRole::ATTN_Q), s));
    EXPECT_TRUE(present(weight_spec(WeightRole::LM_HEAD), s));
    EXPECT_FALSE(present(weight_spec(WeightRole::ROPE_FREQS), s));
    EXPECT_FALSE(present(weight_spec(WeightRole::ATTN_QKV), s));  // never in a file
    s.qkv_bias = s.tied_output = s.has_rope_freqs = true;
    EXPECT_TRUE(present(*bias_spec(WeightRole::ATTN_Q), s));
    EXPECT_FALSE(present(weight_spec(WeightRole::LM_HEAD), s));
    EXPECT_EQ(weight_spec(WeightRole::LM_HEAD).falls_back_to, WeightRole::TOKEN_EMBD);
    EXPECT_TRUE(present(weight_spec(WeightRole::ROPE_FREQS), s));
}

TEST(TensorCatalogue, EveryMatmulOfTheGraphHasAMatrixRow) {
    // The builder's matrices are catalogue rows, so binding and the weight sources find them.
    const ModelShape s = llama2_7b();
    for (const MatrixUse& m : matrices(build_graph(s))) {
        const TensorSpec& t = weight_spec(m.role);
        EXPECT_EQ(t.kind, WeightKind::MATRIX) << t.name;
        EXPECT_EQ(spec_rows(t, s), m.n) << t.name;
        EXPECT_EQ(spec_cols(t, s), m.k) << t.name;
    }
}

}  // namespace
}  // namespace duet::graph
