// Absorbed multi-head latent attention (kernels.h mla_attention) as two matrix products per block
// of query tokens. Every head of every token reads the same cached rows, so the (token, head)
// pairs of a block are the rows of one product: scores = Q · KV^T over [latent | rope key], then
// a causal softmax per row, then out = P · latent. Both products run on the f32-weight GEMM
// (matmul), which reads each cached row once per block of rows instead of once per pair.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "kernels/kernels.h"

namespace duet::kernels {
namespace {

constexpr int64_t kBlockRows = 256;  // (token, head) rows per product: enough for the GEMM's row tiles

// The latent part of the cached rows transposed: C rows of n_ctx floats (the second product's
// weight matrix, y = x W^T).
void transpose_latent(const float* kv, int64_t n_ctx, int64_t row, int64_t C, float* vt, ThreadPool& pool) {
    pool.parallel_for(C, 16, [&](int64_t b, int64_t e) {
        for (int64_t j = b; j < e; ++j)
            for (int64_t u = 0; u < n_ctx; ++u) vt[j * n_ctx + u] = kv[u * row + j];
    });
}

}  // namespace

void mla_attention(const MlaQuery& q, int64_t n_q, int64_t pos0, const float* kv, float scale, float* out,
                   int64_t out_stride, ThreadPool& pool) {
    const int64_t H = q.n_head, C = q.kv_lora_rank, R = q.rope_dim, row = C + R;
    if (H < 1 || C < 1 || R < 0 || n_q < 1 || pos0 < 0 || out_stride < H * C)
        fail("mla_attention: bad shape (n_head {}, kv_lora_rank {}, rope_dim {}, n_q {}, pos0 {}, out_stride {})", H, C,
             R, n_q, pos0, out_stride);
    const int64_t n_ctx = pos0 + n_q;
    const int64_t tq = std::clamp<int64_t>(kBlockRows / H, 1, n_q);  // query tokens per block
    std::vector<float> vt(size_t(C * n_ctx)), qc(size_t(tq * H * row)), s(size_t(tq * H * n_ctx)), o(size_t(tq * H * C));
    transpose_latent(kv, n_ctx, row, C, vt.data(), pool);
    for (int64_t i0 = 0; i0 < n_q; i0 += tq) {
        const int64_t nb = std::min(tq, n_q - i0), m = nb * H, ctx = pos0 + i0 + nb;  // causal: keys < ctx
        for (int64_t r = 0; r < m; ++r) {
            const int64_t i = i0 + r / H, h = r % H;
            const float* ql = q.lat + i * q.lat_stride + h * C;
            const float* qp = q.pe + i * q.pe_stride + h * q.pe_head_stride;
            std::copy(ql, ql + C, qc.data() + r * row);
            std::copy(qp, qp + R, qc.data() + r * row + C);
        }
        matmul(qc.data(), m, row, row, kv, DType::F32, size_t(row) * sizeof(float), ctx, s.data(), ctx, pool);
        pool.parallel_for(m, 8, [&](int64_t b, int64_t e) {
            for (int64_t r = b; r < e; ++r) {
                float* p = s.data() + r * ctx;
                const int64_t valid = pos0 + i0 + r / H + 1;  // token i0 + r / H sees positions 0 .. pos0 + i
                for (int64_t u = 0; u < valid; ++u) p[u] *= scale;
                softmax(p, valid);
                std::fill(p + valid, p + ctx, 0.0f);
            }
        });
        matmul(s.data(), m, ctx, ctx, vt.data(), DType::F32, size_t(n_ctx) * sizeof(float), C, o.data(), C, pool);
        for (int64_t r = 0; r < m; ++r) {
            const int64_t i = i0 + r / H, h = r % H;
            std::copy(o.data() + r * C, o.data() + (r + 1) * C, out + i * out_stride + h * C);
        }
    }
}

}  // namespace duet::kernels
