#include <cmath>
#include <vector>

#include "core/quant.h"
#include "kernels/kernel_table.h"
#include "kernels/ref/ref_kernels.h"

namespace duet::kernels::ref {

void kv_row(const KvView& kv, bool is_k, int64_t t, int64_t row_elems, float* dst) {
    // Pick the table first, then index it: GCC 12 with -fsanitize=undefined miscompiles
    // `(is_k ? k_blocks : v_blocks)[t / block_tokens]` (the V arm reads an unevaluated
    // temporary as its index; docs/kernels.md "GCC 12 + UBSan"). Do not fold this back.
    const void* const* blocks = is_k ? kv.k_blocks : kv.v_blocks;
    const int64_t b = t / kv.block_tokens;
    const void* block = blocks[b];
    const int64_t off = (t % kv.block_tokens) * row_elems;
    if (kv.kv_type == DType::Q8_0) {  // int8 KV: blocks of 32 values with one f16 scale (ggml's Q8_0)
        const size_t rb = row_bytes(DType::Q8_0, row_elems);
        quant::dequantize_row(static_cast<const uint8_t*>(block) + size_t(t % kv.block_tokens) * rb, DType::Q8_0, dst,
                              row_elems);
    } else if (kv.kv_type == DType::F32) {
        const float* src = static_cast<const float*>(block) + off;
        for (int64_t i = 0; i < row_elems; ++i) dst[i] = src[i];
    } else {
        const uint16_t* src = static_cast<const uint16_t*>(block) + off;
        for (int64_t i = 0; i < row_elems; ++i) dst[i] = fp16_to_fp32(src[i]);
    }
}

void attention(const float* q, int64_t n_q, int64_t pos0, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
               const KvView& kv, float scale, float* out, ThreadPool&) {
    check_attention_args(n_q, pos0, n_head, n_head_kv, head_dim, kv);
    const int64_t n_kv = pos0 + n_q;
    const int64_t row = n_head_kv * head_dim;
    std::vector<float> K(static_cast<size_t>(n_kv * row)), V(static_cast<size_t>(n_kv * row));
    for (int64_t t = 0; t < n_kv; ++t) {
        kv_row(kv, true, t, row, &K[size_t(t * row)]);
        kv_row(kv, false, t, row, &V[size_t(t * row)]);
    }
    const int64_t group = n_head / n_head_kv;
    std::vector<double> p(static_cast<size_t>(n_kv));
    for (int64_t t = 0; t < n_q; ++t) {
        const int64_t n_ctx = pos0 + t + 1;  // causal: keys 0 .. own position
        for (int64_t h = 0; h < n_head; ++h) {
            const float* qh = q + (t * n_head + h) * head_dim;
            const int64_t kvh = h / group;
            double mx = -INFINITY;
            for (int64_t s = 0; s < n_ctx; ++s) {
                const float* ks = &K[size_t(s * row + kvh * head_dim)];
                double d = 0;
                for (int64_t i = 0; i < head_dim; ++i) d += double(qh[i]) * double(ks[i]);
                p[size_t(s)] = d * double(scale);
                mx = std::max(mx, p[size_t(s)]);
            }
            double sum = 0;
            for (int64_t s = 0; s < n_ctx; ++s) sum += (p[size_t(s)] = std::exp(p[size_t(s)] - mx));
            float* o = out + (t * n_head + h) * head_dim;
            for (int64_t i = 0; i < head_dim; ++i) {
                double acc = 0;
                for (int64_t s = 0; s < n_ctx; ++s)
                    acc += p[size_t(s)] * double(V[size_t(s * row + kvh * head_dim + i)]);
                o[i] = float(acc / sum);
            }
        }
    }
}

}  // namespace duet::kernels::ref
