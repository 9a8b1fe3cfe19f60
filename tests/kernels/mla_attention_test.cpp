// kernels::mla_attention against the naive form of multi-head latent attention, computed here in
// double: keys and values up-projected per head from the cached latent (k = [W_UK c | k_pe],
// v = W_UV c), ordinary causal attention, then the value heads compared after the same W_UV is
// applied to the kernel's latent output. Odd sizes, a prefill and decode steps after a context.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/kernels.h"

using namespace duet;

namespace {

struct Case {
    int64_t H, C, R, N, V, n_q, pos0;
};

void check(const Case& cs, ThreadPool& pool) {
    const int64_t H = cs.H, C = cs.C, R = cs.R, N = cs.N, V = cs.V, n_ctx = cs.pos0 + cs.n_q;
    std::mt19937 rng(unsigned(H * 131 + C * 7 + cs.n_q));
    std::normal_distribution<float> g(0.0f, 1.0f);
    const auto fill = [&](std::vector<float>& v) {
        for (float& x : v) x = g(rng);
    };
    std::vector<float> kv(size_t(n_ctx * (C + R))), q_nope(size_t(cs.n_q * H * N)), q_pe(size_t(cs.n_q * H * R));
    std::vector<float> w_uk(size_t(H * N * C)), w_uv(size_t(H * V * C));  // per head [N][C], [V][C]
    fill(kv), fill(q_nope), fill(q_pe), fill(w_uk), fill(w_uv);
    for (float& x : w_uk) x /= std::sqrt(float(C));
    // the absorbed query: q_lat[i][h][c] = sum_n q_nope[i][h][n] * W_UK[h][n][c]
    std::vector<float> q_lat(size_t(cs.n_q * H * C), 0.0f);
    for (int64_t i = 0; i < cs.n_q; ++i)
        for (int64_t h = 0; h < H; ++h)
            for (int64_t n = 0; n < N; ++n)
                for (int64_t c = 0; c < C; ++c)
                    q_lat[size_t((i * H + h) * C + c)] +=
                        q_nope[size_t((i * H + h) * N + n)] * w_uk[size_t((h * N + n) * C + c)];
    const float scale = 1.0f / std::sqrt(float(N + R));
    std::vector<float> o_lat(size_t(cs.n_q * H * C));
    const kernels::MlaQuery q{q_lat.data(), H * C, q_pe.data(), H * R, R, H, C, R};
    kernels::mla_attention(q, cs.n_q, cs.pos0, kv.data(), scale, o_lat.data(), H * C, pool);

    double worst = 0.0;
    for (int64_t i = 0; i < cs.n_q; ++i) {
        for (int64_t h = 0; h < H; ++h) {
            const int64_t n_see = cs.pos0 + i + 1;
            std::vector<double> s(static_cast<size_t>(n_see));
            double mx = -1e300;
            for (int64_t u = 0; u < n_see; ++u) {  // q . [W_UK c_u | k_pe_u]
                double d = 0.0;
                for (int64_t n = 0; n < N; ++n) {
                    double k = 0.0;
                    for (int64_t c = 0; c < C; ++c)
                        k += double(w_uk[size_t((h * N + n) * C + c)]) * kv[size_t(u * (C + R) + c)];
                    d += double(q_nope[size_t((i * H + h) * N + n)]) * k;
                }
                for (int64_t r = 0; r < R; ++r)
                    d += double(q_pe[size_t((i * H + h) * R + r)]) * kv[size_t(u * (C + R) + C + r)];
                s[size_t(u)] = d * scale;
                mx = std::max(mx, s[size_t(u)]);
            }
            double sum = 0.0;
            for (double& x : s) sum += x = std::exp(x - mx);
            for (int64_t v = 0; v < V; ++v) {
                double want = 0.0, got = 0.0;
                for (int64_t u = 0; u < n_see; ++u) {
                    double vu = 0.0;  // W_UV c_u
                    for (int64_t c = 0; c < C; ++c)
                        vu += double(w_uv[size_t((h * V + v) * C + c)]) * kv[size_t(u * (C + R) + c)];
                    want += s[size_t(u)] / sum * vu;
                }
                for (int64_t c = 0; c < C; ++c)
                    got += double(w_uv[size_t((h * V + v) * C + c)]) * o_lat[size_t((i * H + h) * C + c)];
                worst = std::max(worst, std::fabs(got - want));
            }
        }
    }
    EXPECT_LT(worst, 2e-4) << "H " << H << " C " << C << " R " << R << " n_q " << cs.n_q << " pos0 " << cs.pos0;
}

}  // namespace

TEST(MlaAttention, EqualsTheNaiveFormOnOddShapes) {
    ThreadPool pool(3);
    for (const Case& c : {Case{1, 8, 2, 4, 3, 1, 0}, Case{4, 24, 6, 10, 5, 7, 0}, Case{3, 17, 4, 9, 7, 1, 12},
                          Case{5, 32, 16, 16, 8, 3, 21}, Case{2, 40, 16, 8, 8, 4, 5},  // C 40: 16-wide runs + a tail
                          // several blocks of query tokens (256 (token, head) rows a block): 4 tokens
                          // a block, the last one short; one token a block when the heads alone pass 256
                          Case{64, 16, 4, 8, 4, 9, 3}, Case{300, 8, 2, 4, 3, 3, 2}})
        check(c, pool);
}

TEST(MlaAttention, BadShapesAreErrors) {
    ThreadPool pool(1);
    std::vector<float> x(64);
    const kernels::MlaQuery q{x.data(), 8, x.data(), 2, 2, 1, 8, 2};
    EXPECT_THROW(kernels::mla_attention(q, 0, 0, x.data(), 1.0f, x.data(), 8, pool), Error);
    EXPECT_THROW(kernels::mla_attention(q, 1, 0, x.data(), 1.0f, x.data(), 4, pool), Error);
}
