#include "runtime/dispatch.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/timer.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/weight_source.h"

namespace duet::runtime {

namespace {
// Rows per parallel chunk for the row-wise (memory-light) ops: below this, threads cost more
// than they save.
constexpr int64_t kRowGrain = 4;
}  // namespace

template <typename F>
void Dispatcher::run(F&& compute) {
    if (timer_) {
        const int64_t t0 = now_ns();
        compute();
        timer_(rec_, now_ns() - t0);
    } else {
        compute();
    }
    if (trace_) trace_->push_back(rec_);
    if (observer_) observer_(rec_);
}

void Dispatcher::embed(const int32_t* tokens, int64_t m, const void* table, DType type, size_t row_stride_bytes,
                       int64_t n, float* out) {
    run([&] {
        const auto* base = static_cast<const uint8_t*>(table);
        for (int64_t i = 0; i < m; ++i)
            kernels::dequantize_row(base + size_t(tokens[i]) * row_stride_bytes, type, out + i * n, n);
    });
}

void Dispatcher::rmsnorm(const float* x, const float* w, float* y, int64_t m, int64_t n, float eps) {
    run([&] {
        pool_.parallel_for(m, kRowGrain, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) kernels::rmsnorm(x + i * n, w, y + i * n, n, eps);
        });
    });
}

// The weight operand of a MATMUL record as the source holds it (the lowering's n * row_bytes
// for a plain source; a PIM layout's own bytes and dtype), with the fused RMSNorm's weights.
static void weight_operand(graph::OpRecord& r, const WeightInfo& wi) {
    r.weight_dtype = wi.dtype;
    r.weight_bytes = wi.bytes + (r.rmsnorm_fused ? uint64_t(wi.k) * 4 : 0);
}

void Dispatcher::matmul(graph::WeightRole role, const float* x, int64_t x_stride, int64_t m, float* y, int64_t y_stride,
                        const float* bias) {
    const int32_t layer = weight_layer(role);
    const WeightInfo wi = weights_->info(role, layer);
    weight_operand(rec_, wi);
    run([&] {
        weights_->matmul(role, layer, x, m, x_stride, y, y_stride, pool_);
        if (bias)
            for (int64_t i = 0; i < m; ++i)
                for (int64_t j = 0; j < wi.n; ++j) y[i * y_stride + j] += bias[j];
    });
}

void Dispatcher::rmsnorm_matmul(graph::WeightRole role, const float* x, int64_t x_stride, const int64_t* rows,
                                int64_t m, const float* norm_w, float eps, float* y, int64_t y_stride, const float* bias) {
    const int32_t layer = weight_layer(role);
    const WeightInfo wi = weights_->info(role, layer);
    weight_operand(rec_, wi);  // the matrix and the norm's weights; the normed rows never reach memory
    run([&] {
        const kernels::ActFormat f = weights_->act_format(role, layer);
        xq_.resize(std::max(xq_.size(), kernels::act_bytes(f, m, wi.k)));
        kernels::rmsnorm_quantize(x, x_stride, rows, m, wi.k, norm_w, eps, f, xq_.data(), pool_);
        weights_->matmul_quantized(role, layer, xq_.data(), f, m, y, y_stride, pool_);
        if (bias)
            for (int64_t i = 0; i < m; ++i)
                for (int64_t j = 0; j < wi.n; ++j) y[i * y_stride + j] += bias[j];
    });
}

void Dispatcher::add(float* y, const float* x, int64_t m, int64_t n) {
    run([&] {
        for (int64_t i = 0; i < m * n; ++i) y[i] += x[i];
    });
}

void Dispatcher::rope(const float* q, int64_t q_stride, float* q_out, const float* k, int64_t k_stride, float* k_out,
                      int64_t m, const int64_t* pos, const RopeParams& p) {
    const int64_t nq = p.n_head * p.head_dim, nk = p.n_head_kv * p.head_dim;
    run([&] {
        pool_.parallel_for(m, kRowGrain, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) {
                // out of place (a fused q/k view into contiguous rows): copy, then rotate
                if (q_out != q) std::memcpy(q_out + i * nq, q + i * q_stride, size_t(nq) * sizeof(float));
                if (k_out != k) std::memcpy(k_out + i * nk, k + i * k_stride, size_t(nk) * sizeof(float));
                kernels::rope(q_out + i * nq, p.n_head, p.head_dim, p.n_rot, pos[i], p.freq_base, p.freq_scale,
                              p.freq_factors, p.order);
                kernels::rope(k_out + i * nk, p.n_head_kv, p.head_dim, p.n_rot, pos[i], p.freq_base, p.freq_scale,
                              p.freq_factors, p.order);
            }
        });
    });
}

void Dispatcher::rope_kv_write(const float* q, int64_t q_stride, float* q_out, const float* k, int64_t k_stride,
                               const float* v, int64_t v_stride, int64_t m, const int64_t* pos, const RopeParams& p,
                               DType kv_type, uint8_t* const* k_dst, uint8_t* const* v_dst, StoreRow store) {
    const int64_t nq = p.n_head * p.head_dim, nk = p.n_head_kv * p.head_dim;
    run([&] {
        pool_.parallel_for(m, kRowGrain, [&](int64_t b, int64_t e) {
            // the rotated k row, stored straight into the cache; one buffer per pool thread, reused
            // across layers and steps (no allocation on the decode path)
            thread_local std::vector<float> krow;
            krow.resize(static_cast<size_t>(nk));
            for (int64_t i = b; i < e; ++i) {
                if (q_out != q) std::memcpy(q_out + i * nq, q + i * q_stride, size_t(nq) * sizeof(float));
                std::memcpy(krow.data(), k + i * k_stride, size_t(nk) * sizeof(float));
                kernels::rope(q_out + i * nq, p.n_head, p.head_dim, p.n_rot, pos[i], p.freq_base, p.freq_scale,
                              p.freq_factors, p.order);
                kernels::rope(krow.data(), p.n_head_kv, p.head_dim, p.n_rot, pos[i], p.freq_base, p.freq_scale,
                              p.freq_factors, p.order);
                store(krow.data(), k_dst[i], nk, kv_type);
                store(v + i * v_stride, v_dst[i], nk, kv_type);
            }
        });
    });
}

void Dispatcher::swiglu(const float* gate, int64_t gate_stride, const float* up, int64_t up_stride, float* out,
                        int64_t m, int64_t n) {
    run([&] {
        pool_.parallel_for(m, kRowGrain, [&](int64_t b, int64_t e) {
            if (gate_stride == n && up_stride == n) return kernels::swiglu(gate + b * n, up + b * n, out + b * n, (e - b) * n);
            for (int64_t i = b; i < e; ++i) kernels::swiglu(gate + i * gate_stride, up + i * up_stride, out + i * n, n);
        });
    });
}

void Dispatcher::kv_write(const std::function<void()>& write) { run(write); }

void Dispatcher::moe(const std::function<void()>& compute) { run(compute); }

void Dispatcher::mla(const std::function<void()>& compute) { run(compute); }

void Dispatcher::attention(const std::vector<AttentionSeq>& seqs, int64_t n_head, int64_t n_head_kv,
                           int64_t head_dim, float scale) {
    DUET_CHECK(!seqs.empty());
    run([&] {
        for (const AttentionSeq& s : seqs)
            (reference_attention_ ? kernels::ref::attention : kernels::attention)(s.q, s.n_q, s.pos0, n_head, n_head_kv,
                                                                                   head_dim, s.kv, scale, s.out, pool_);
    });
}

void Dispatcher::output() {
    run([] {});  // sampling itself runs in the caller (Generator, server) on these logits
}

}  // namespace duet::runtime
