// runtime::PimLayoutWeightSource (every matrix in the PIM layout, read in place by
// kernels::matmul_blocked) against the PlainWeightSource it wraps, matrix by matrix, for every
// dtype of `duet gen-model`, on a memory organisation with 64-byte DRAM rows so that the float
// matrices have several k-blocks (the summation-order case) and several row blocks.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>

#include "graph/fuse_matmuls.h"
#include "graph/fuse_rope_kv.h"
#include "core/error.h"
#include "runtime/engine.h"
#include "runtime/pim_weight_source.h"
#include "test_models.h"

namespace duet::runtime {
namespace {

void check(const std::string& dtype, bool f32_to_f16, bool int8 = false) {
    const std::string path = test::generated_model("tiny-llama", dtype, 5);
    ASSERT_FALSE(path.empty()) << dtype;
    auto model = Model::load(path);
    EngineOptions eo;
    eo.n_threads = 2;
    eo.n_ctx = 8;
    Engine engine(model, eo);
    layout::PimLayoutParams prm;
    prm.block_size_kb = 1;
    const layout::MemoryOrganisation org{4, 2, 64};
    const PimLayoutWeightSource pim(engine.plain_weights(), engine.graph(), prm, org, f32_to_f16, int8);
    ASSERT_GT(pim.pim_count(), 0);
    if (int8) {
        EXPECT_EQ(pim.int8_count(), pim.pim_count());  // every matrix of a q8_0 file
    }
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> d(-1, 1);
    int64_t multi_k = 0;
    for (const graph::MatrixUse& mu : graph::matrices(engine.graph())) {
        const WeightInfo wi = engine.plain_weights().info(mu.role, mu.layer);
        const layout::PimLayoutPlan& p = pim.plan(mu.role, mu.layer);
        multi_k += p.n_k_blocks > 1;
        EXPECT_EQ(pim.info(mu.role, mu.layer).n, wi.n);
        EXPECT_EQ(pim.info(mu.role, mu.layer).k, wi.k);
        EXPECT_EQ(pim.info(mu.role, mu.layer).dtype, f32_to_f16 && wi.dtype == DType::F32 ? DType::F16 : wi.dtype);
        if (int8) {
            EXPECT_EQ(p.dtype, DType::I8);  // the quants, element by element
            EXPECT_EQ(pim.info(mu.role, mu.layer).bytes, wi.bytes);  // quants + scales = the Q8_0 bytes
        }
        for (int64_t m : {1, 3}) {
            std::vector<float> x(size_t(m * wi.k)), y0(size_t(m * wi.n)), y1(size_t(m * wi.n));
            for (auto& v : x) v = d(rng);
            engine.plain_weights().matmul(mu.role, mu.layer, x.data(), m, wi.k, y0.data(), wi.n, engine.pool());
            pim.matmul(mu.role, mu.layer, x.data(), m, wi.k, y1.data(), wi.n, engine.pool());
            double scale = 0;
            for (float v : y0) scale = std::max(scale, double(std::fabs(v)));
            // same products, another f32 summation order; f16 from f32 rounds each weight by 2^-11
            const double tol = f32_to_f16 ? 2e-3 * (scale + 1) : 1e-5 * (scale + 1);
            for (size_t i = 0; i < y0.size(); ++i) {
                ASSERT_NEAR(y0[i], y1[i], tol) << dtype << " " << graph::weight_role_name(mu.role) << " L" << mu.layer;
                // int8 quants + scales are Q8_0's numbers in Q8_0's order (m <= 4: carried tiles)
                if (int8) {
                    ASSERT_EQ(y0[i], y1[i]) << graph::weight_role_name(mu.role) << " L" << mu.layer << " m=" << m;
                }
            }
        }
    }
    // The tiny model's quantised rows (2-6 blocks) are narrower than one k-block of whole blocks
    // (lcm(16, block bytes) >= 144 B); several k-blocks of quantised types are covered by
    // tests/kernels/matmul_blocked_test.cpp.
    if (int8 || !dtype_is_quantized(*dtype_from_name(dtype))) {
        EXPECT_GT(multi_k, 0) << dtype << ": no matrix had several k-blocks";
    }
}

TEST(PimWeightSource, EveryDtypeMatchesThePlainWeights) {
    for (const char* dt : {"f32", "f16", "bf16", "q8_0", "q4_0", "q5_0", "q4_k", "q6_k"}) check(dt, false);
}

TEST(PimWeightSource, F32HeldAsF16) { check("f32", true); }

// RMSNorm fused into a matmul (--fuse, graph/fuse_rmsnorm_matmul.h) on a weight source without
// the quantised entry: the PIM layout takes f32 rows (WeightSource::act_format), so the fused
// kernel writes the normed rows and the logits equal the graph without that pass bit for bit.
TEST(PimWeightSource, FusedRmsNormHandsTheNormedRowsToTheLayout) {
    const std::string path = test::generated_model("tiny-llama", "q8_0", 5);
    ASSERT_FALSE(path.empty());
    auto model = Model::load(path);
    EngineOptions eo;
    eo.n_threads = 2;
    eo.n_ctx = 16;
    const Engine plain(model, eo);
    Engine without(model, eo, graph::FuseRopeKvWrite().run(graph::FuseSiblingMatmuls().run(plain.graph())));
    EngineOptions fo = eo;
    fo.fuse = true;
    Engine with(model, fo);
    int fused = 0;
    for (const graph::Node& n : with.graph().nodes) fused += n.norm != graph::WeightRole::NONE;
    ASSERT_EQ(fused, 2 * model->hparams().n_layer + 1);
    layout::PimLayoutParams prm;
    prm.block_size_kb = 1;
    const layout::MemoryOrganisation org{4, 2, 64};
    const PimLayoutWeightSource pa(without.plain_weights(), without.graph(), prm, org, false);
    const PimLayoutWeightSource pb(with.plain_weights(), with.graph(), prm, org, false);
    EXPECT_EQ(pb.act_format(graph::WeightRole::ATTN_QKV, 0), kernels::ActFormat::F32);
    without.set_weight_source(&pa);
    with.set_weight_source(&pb);
    std::vector<int32_t> prompt = {1, 5, 9, 13, 17, 21, 2};
    std::vector<float> logits[2];
    Engine* engines[2] = {&without, &with};
    for (int i = 0; i < 2; ++i) {
        SequenceKv s;
        SeqInput in{prompt, &s, true};
        ForwardOutput out;
        ASSERT_EQ(engines[i]->forward({&in, 1}, out), ForwardStatus::OK);
        logits[i] = out.logits;
        // then three more tokens, logits of the last only: the output norm gathers its row
        const std::vector<int32_t> next = {3, 4, 6};
        SeqInput step{next, &s, false};
        ASSERT_EQ(engines[i]->forward({&step, 1}, out), ForwardStatus::OK);
        logits[i].insert(logits[i].end(), out.logits.begin(), out.logits.end());
        s.release(engines[i]->kv_cache());
    }
    ASSERT_EQ(logits[0].size(), logits[1].size());
    EXPECT_EQ(std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * sizeof(float)), 0);
}

// [pim] precision = int8: Q8_0 as int8 quants in the layout with f16 scales beside, read in place.
TEST(PimWeightSource, Q8_0HeldAsInt8WithScales) { check("q8_0", false, true); }

// int8 needs quantised matrices: a float one is refused, naming the key and what is allowed.
TEST(PimWeightSource, Int8RefusesFloatMatrices) {
    const std::string path = test::generated_model("tiny-llama", "f16", 5);
    ASSERT_FALSE(path.empty());
    auto model = Model::load(path);
    EngineOptions eo;
    eo.n_threads = 1;
    eo.n_ctx = 8;
    Engine engine(model, eo);
    try {
        PimLayoutWeightSource pim(engine.plain_weights(), engine.graph(), layout::PimLayoutParams{},
                                  layout::MemoryOrganisation{}, false, true);
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("config.toml [pim] precision = i8 holds Q8_0 matrices as int8 quants "
                                             "with their block scales, but the model's "),
                  std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find(" is f16 (allowed: [pim] precision = f16, bf16 or i8; i8 needs a Q8_0 "
                                             "model file, whose other quantised matrices are widened to int8)"),
                  std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace duet::runtime
