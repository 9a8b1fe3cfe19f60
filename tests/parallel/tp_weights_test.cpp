// A rank's weight slices (runtime/tp_weights.h) against the whole matrices: column-parallel
// outputs are the rows of the full product, row-parallel partial sums add up to it, the bytes
// partition the file, and a split that cuts a quantised block is refused with its message.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "../error_message.h"
#include "../runtime/test_models.h"
#include "graph/parallel.h"
#include "kernels/kernels.h"
#include "runtime/model.h"
#include "model/hparams.h"
#include "runtime/tp_weights.h"

using WR = duet::graph::WeightRole;

using namespace duet;
using namespace duet::runtime;

namespace {

graph::TpShard shard(const Model& m, int tp, int rank) {
    return graph::tp_shard(model_shape(m.hparams(), DType::F32, DType::F16, "m"), tp, rank, tp_ff_align(m.weights()));
}

std::vector<float> product(const std::vector<float>& x, int64_t m, int64_t k, int64_t x_stride,
                           const model::TensorRef& w, ThreadPool& pool) {
    EXPECT_EQ(w.cols, k);
    std::vector<float> y(size_t(m * w.rows));
    kernels::matmul(x.data(), m, k, x_stride, w.data, w.dtype, w.row_stride_bytes, w.rows, y.data(), w.rows, pool);
    return y;
}

std::vector<float> random_rows(int64_t m, int64_t k) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> x(size_t(m * k));
    for (float& v : x) v = u(rng);
    return x;
}

// Rank partial sums of a row-parallel matrix (wo, ffn_down) against the full product.
void expect_row_parallel_sums(const Model& m, int tp, bool down) {
    ThreadPool pool(1);
    const model::RoleTensors& full = m.weights().layers[0];
    const model::TensorRef& w = down ? full[WR::FFN_DOWN] : full[WR::ATTN_OUT];
    const int64_t rows = 3, k = w.cols;
    const std::vector<float> x = random_rows(rows, k);
    const std::vector<float> want = product(x, rows, k, k, w, pool);
    std::vector<float> sum(want.size(), 0.0f);
    for (int r = 0; r < tp; ++r) {
        const graph::TpShard sh = shard(m, tp, r);
        const model::Weights part = shard_weights(m.weights(), m.hparams(), sh);
        const model::TensorRef& wp = down ? part.layers[0][WR::FFN_DOWN] : part.layers[0][WR::ATTN_OUT];
        const int64_t c0 = down ? sh.ff.begin : sh.q_heads.begin * m.hparams().head_dim;
        std::vector<float> xr(size_t(rows * wp.cols));
        for (int64_t i = 0; i < rows; ++i)
            std::copy_n(x.begin() + i * k + c0, wp.cols, xr.begin() + i * wp.cols);
        const std::vector<float> y = product(xr, rows, wp.cols, wp.cols, wp, pool);
        for (size_t i = 0; i < sum.size(); ++i) sum[i] += y[i];
    }
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(sum[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << i;
}

TEST(TpWeights, RowParallelPartialSumsAddUpToTheFullProduct) {
    for (const char* dtype : {"f32", "f16", "q8_0"}) {
        const auto m = Model::load(test::generated_model("small-llama", dtype));
        expect_row_parallel_sums(*m, 2, false);
        expect_row_parallel_sums(*m, 2, true);
    }
}

TEST(TpWeights, ColumnParallelOutputsAreRowsOfTheFullProduct) {
    const auto m = Model::load(test::generated_model("small-llama", "q8_0"));
    ThreadPool pool(1);
    const model::TensorRef& w = m->weights().layers[1][WR::FFN_GATE];
    const std::vector<float> x = random_rows(2, w.cols);
    const std::vector<float> want = product(x, 2, w.cols, w.cols, w, pool);
    for (int r = 0; r < 2; ++r) {
        const graph::TpShard sh = shard(*m, 2, r);
        const model::Weights part = shard_weights(m->weights(), m->hparams(), sh);  // wp refers into it
        const model::TensorRef& wp = part.layers[1][WR::FFN_GATE];
        ASSERT_EQ(wp.rows, sh.ff.count);
        const std::vector<float> y = product(x, 2, w.cols, w.cols, wp, pool);
        for (int64_t i = 0; i < 2; ++i)
            for (int64_t j = 0; j < wp.rows; ++j)
                ASSERT_NEAR(y[size_t(i * wp.rows + j)], want[size_t(i * w.rows + sh.ff.begin + j)], 1e-5) << r;
    }
}

TEST(TpWeights, RanksPartitionTheLayersAndShareTheRest) {
    const auto m = Model::load(test::generated_model("small-llama", "f16"));  // GQA 2:1, untied
    const model::Weights& w = m->weights();
    const auto vec_bytes = [](const model::TensorRef& t) { return uint64_t(t.cols) * 4; };  // f32 vectors
    const uint64_t rep = uint64_t(w[WR::TOKEN_EMBD].n_bytes() + w[WR::LM_HEAD].n_bytes()) + vec_bytes(w[WR::OUTPUT_NORM]) +
                         uint64_t(w.layers.size()) * (vec_bytes(w.layers[0][WR::ATTN_NORM]) + vec_bytes(w.layers[0][WR::FFN_NORM]));
    uint64_t sum = 0;
    for (int r = 0; r < 2; ++r) sum += shard_bytes(shard_weights(w, m->hparams(), shard(*m, 2, r)));
    EXPECT_EQ(sum, shard_bytes(w) + rep);  // every layer matrix once, the replicated tensors twice
    EXPECT_LT(shard_bytes(shard_weights(w, m->hparams(), shard(*m, 2, 1))), shard_bytes(w));
}

TEST(TpWeights, MoreRanksThanKvHeadsShareTheirHead) {
    const auto m = Model::load(test::generated_model("tiny-mistral", "f32"));  // 8 heads, 2 KV heads of 16
    const model::TensorRef& wk = m->weights().layers[0][WR::ATTN_K];
    for (int r = 0; r < 4; ++r) {
        const model::TensorRef k = shard_weights(m->weights(), m->hparams(), shard(*m, 4, r)).layers[0][WR::ATTN_K];  // a copy
        EXPECT_EQ(k.rows, 16);
        EXPECT_EQ(k.data, static_cast<const uint8_t*>(wk.data) + (r / 2) * 16 * wk.row_stride_bytes) << r;
    }
}

TEST(TpWeights, ASliceThatCutsAQuantisedBlockIsRefused) {
    const auto m = Model::load(test::generated_model("tiny-qwen2", "q8_0"));  // 3 heads of 16 per rank
    EXPECT_EQ(test::error_of([&] { shard_weights(m->weights(), m->hparams(), shard(*m, 2, 1)); }),
              "--tp = 2: the attention-output columns [48, 96) of blk.0.attn_output.weight cut its 32-element q8_0 "
              "blocks (allowed: a --tp whose slices are whole blocks, or an unquantised file)");
}

}  // namespace
