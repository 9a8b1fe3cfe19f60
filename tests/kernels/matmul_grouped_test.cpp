// matmul_grouped (the groups' matmuls as one parallel loop over (group, column block) items, a
// MoE layer's experts) against matmul() of each group with the same kernel table, for the scalar
// reference and every optimised table this CPU runs: odd m (1, 3, 7, 9, the 4-row split's edges
// 5, 16, 17), empty groups, a column block that leaves an odd remainder and the automatic block.
// The activations of a row are quantised alike either way, so the two differ at most by the
// order of the f32 sums (the scalar table: not at all).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.h"

namespace duet::kernels {
namespace {

using test::make_weights;
using test::optimised_tables;
using test::random_vec;

struct GroupCase {
    DType type;
    int64_t k, n, n_block;
};

void check_grouped(const KernelTable& t, const GroupCase& c, ThreadPool& pool) {
    const std::vector<int64_t> ms{1, 3, 0, 7, 9, 5, 16, 17, 4};
    const int64_t G = int64_t(ms.size()), k = c.k, n = c.n;
    const size_t stride = row_bytes(c.type, k) + 8;
    const size_t ng = size_t(G);
    std::vector<std::vector<uint8_t>> w(ng);
    std::vector<std::vector<float>> wf(ng), x(ng), y(ng), want(ng);
    std::vector<MatmulGroup> groups(ng);
    const int64_t xs = k + 3, ys = n + 5;  // strides wider than the rows
    for (int64_t g = 0; g < G; ++g) {
        const size_t gi = size_t(g);
        wf[gi] = random_vec(size_t(n * k), uint32_t(100 + g));
        w[gi] = make_weights(wf[gi], n, k, c.type, stride);
        x[gi] = random_vec(size_t(std::max<int64_t>(1, ms[gi]) * xs), uint32_t(200 + g));
        y[gi].assign(size_t(std::max<int64_t>(1, ms[gi]) * ys), -7.0f);  // the padding must stay
        want[gi] = y[gi];
        groups[gi] = MatmulGroup{x[gi].data(), ms[gi], xs, w[gi].data(), stride, y[gi].data(), ys};
        t.matmul(x[gi].data(), ms[gi], k, xs, w[gi].data(), c.type, stride, n, want[gi].data(), ys, pool);
    }
    matmul_grouped_with(t, groups.data(), G, k, c.type, n, c.n_block, pool);
    std::vector<float> wrow(static_cast<size_t>(k));
    for (int64_t g = 0; g < G; ++g) {
        const size_t gi = size_t(g);
        for (int64_t i = 0; i < std::max<int64_t>(1, ms[gi]); ++i)
            for (int64_t j = 0; j < ys; ++j) {
                const float got = y[gi][size_t(i * ys + j)], exp = want[gi][size_t(i * ys + j)];
                if (i >= ms[gi] || j >= n || std::string(t.name) == "scalar") {
                    ASSERT_EQ(got, exp) << t.name << " group " << g << " m " << ms[gi] << " row " << i << " col " << j;
                    continue;
                }
                quant::dequantize_row(w[gi].data() + size_t(j) * stride, c.type, wrow.data(), k);
                const auto b = test::matmul_error_bounds(&x[gi][size_t(i * xs)], wrow.data(), nullptr, k);
                ASSERT_NEAR(got, exp, 2 * b.fbound) << t.name << " " << dtype_name(c.type) << " group " << g << " m "
                                                    << ms[gi] << " row " << i << " col " << j;
            }
    }
}

TEST(MatmulGrouped, MatchesMatmulOfEachGroupOnEveryTable) {
    const std::vector<GroupCase> cases{
        {DType::Q8_0, 96, 100, 48},  // blocks 48, 48, 4
        {DType::Q8_0, 64, 37, 0},    // the automatic block
        {DType::Q4_0, 64, 53, 16},   // blocks of 16, remainder 5
        {DType::Q5_0, 32, 21, 8},   {DType::Q4_K, 256, 19, 6}, {DType::F16, 40, 33, 10},
    };
    std::vector<const KernelTable*> tables{&ref_table()};
    for (const KernelTable* p : optimised_tables()) tables.push_back(p);
    for (int threads : {1, 2}) {
        ThreadPool pool(threads);
        for (const KernelTable* t : tables)
            for (const GroupCase& c : cases) check_grouped(*t, c, pool);
    }
}

TEST(MatmulGrouped, NoGroupsOrNoRowsIsANoOp) {
    ThreadPool pool(2);
    matmul_grouped(nullptr, 0, 32, DType::Q8_0, 8, 0, pool);
    std::vector<float> y(4, 3.0f);
    const MatmulGroup g{nullptr, 0, 32, nullptr, row_bytes(DType::Q8_0, 32), y.data(), 8};
    matmul_grouped(&g, 1, 32, DType::Q8_0, 8, 0, pool);
    EXPECT_EQ(y, std::vector<float>(4, 3.0f));
}

}  // namespace
}  // namespace duet::kernels
