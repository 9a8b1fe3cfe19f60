// Absorbed multi-head latent attention (kernels.h mla_attention): plain loops over (query token,
// head) pairs, the pool taking whole pairs. Every head reads the one cached latent row per
// position, so the context is read from the caller's f32 copy once per pair, not per head group.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "kernels/kernels.h"

namespace duet::kernels {
namespace {

// 16 running sums, not one: a single sum is one dependency chain the compiler may not reorder
// (strict float order), so it ran scalar at one add per latency; 16 independent lanes vectorise.
// As one chain it took 31 % of a DeepSeek-V3-shape prefill (docs/performance.md, "MoE against llama.cpp").
float dot(const float* a, const float* b, int64_t n) {
    constexpr int64_t kLanes = 16;
    float acc[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int64_t k = 0; k < kLanes; ++k) acc[k] += a[i + k] * b[i + k];
    float s = 0.0f;
    for (; i < n; ++i) s += a[i] * b[i];
    for (int64_t k = 0; k < kLanes; ++k) s += acc[k];
    return s;
}

}  // namespace

void mla_attention(const MlaQuery& q, int64_t n_q, int64_t pos0, const float* kv, float scale, float* out,
                   int64_t out_stride, ThreadPool& pool) {
    const int64_t H = q.n_head, C = q.kv_lora_rank, R = q.rope_dim, row = C + R;
    if (H < 1 || C < 1 || R < 0 || n_q < 1 || pos0 < 0 || out_stride < H * C)
        fail("mla_attention: bad shape (n_head {}, kv_lora_rank {}, rope_dim {}, n_q {}, pos0 {}, out_stride {})", H, C,
             R, n_q, pos0, out_stride);
    pool.parallel_for(n_q * H, 1, [&](int64_t b, int64_t e) {
        std::vector<float> p(static_cast<size_t>(pos0 + n_q));
        for (int64_t ih = b; ih < e; ++ih) {
            const int64_t i = ih / H, h = ih % H, n_ctx = pos0 + i + 1;  // causal: positions 0 .. pos0 + i
            const float* ql = q.lat + i * q.lat_stride + h * C;
            const float* qp = q.pe + i * q.pe_stride + h * q.pe_head_stride;
            float mx = -INFINITY;
            for (int64_t u = 0; u < n_ctx; ++u) {
                const float* kr = kv + u * row;
                p[size_t(u)] = (dot(ql, kr, C) + dot(qp, kr + C, R)) * scale;
                mx = std::max(mx, p[size_t(u)]);
            }
            float sum = 0.0f;
            for (int64_t u = 0; u < n_ctx; ++u) sum += p[size_t(u)] = std::exp(p[size_t(u)] - mx);
            float* o = out + i * out_stride + h * C;
            std::fill(o, o + C, 0.0f);
            for (int64_t u = 0; u < n_ctx; ++u) {
                const float w = p[size_t(u)] / sum;
                const float* c = kv + u * row;
                for (int64_t j = 0; j < C; ++j) o[j] += w * c[j];
            }
        }
    });
}

}  // namespace duet::kernels
