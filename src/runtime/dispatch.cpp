#include "runtime/dispatch.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/weight_source.h"

namespace duet::runtime {

using sim::OpKind;
using sim::OpRecord;

namespace {
constexpr uint64_t kF32 = 4;
// Rows per parallel chunk for the row-wise (memory-light) ops: below this, threads cost more
// than they save.
constexpr int64_t kRowGrain = 4;
}  // namespace

template <typename F>
void Dispatcher::run(OpRecord& rec, F&& compute) {
    rec.phase = phase_;
    rec.layer = rec.role == sim::WeightRole::LM_HEAD ? -1 : layer_;
    rec.n_seq = n_seq_;
    rec.sibling_of_prev = sibling_;
    compute();
    if (trace_) trace_->push_back(rec);
    if (observer_) observer_(rec);
}

void Dispatcher::embed(const int32_t* tokens, int64_t m, const void* table, DType type, size_t row_stride_bytes,
                       int64_t n, float* out) {
    OpRecord r;
    r.kind = OpKind::EMBED;
    r.m = m;
    r.n = n;
    r.weight_dtype = type;
    r.weight_bytes = uint64_t(m) * row_stride_bytes;
    r.in_bytes = uint64_t(m) * 4;  // token ids
    r.out_bytes = uint64_t(m * n) * kF32;
    run(r, [&] {
        const auto* base = static_cast<const uint8_t*>(table);
        for (int64_t i = 0; i < m; ++i)
            kernels::dequantize_row(base + size_t(tokens[i]) * row_stride_bytes, type, out + i * n, n);
    });
}

void Dispatcher::rmsnorm(const float* x, const float* w, float* y, int64_t m, int64_t n, float eps) {
    OpRecord r;
    r.kind = OpKind::RMSNORM;
    r.m = m;
    r.n = n;
    r.weight_bytes = uint64_t(n) * kF32;
    r.in_bytes = r.out_bytes = uint64_t(m * n) * kF32;
    r.flops = 4.0 * double(m) * double(n);
    run(r, [&] {
        pool_.parallel_for(m, kRowGrain, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) kernels::rmsnorm(x + i * n, w, y + i * n, n, eps);
        });
    });
}

namespace {
// The record of y = x W^T with W the role's matrix: x and y in f32.
OpRecord matmul_record(sim::WeightRole role, const WeightInfo& wi, int64_t m) {
    OpRecord r;
    r.kind = OpKind::MATMUL;
    r.role = role;
    r.m = m;
    r.n = wi.n;
    r.k = wi.k;
    r.weight_dtype = wi.dtype;
    r.weight_bytes = wi.bytes;
    r.in_bytes = uint64_t(m * wi.k) * kF32;
    r.out_bytes = uint64_t(m * wi.n) * kF32;
    r.flops = 2.0 * double(m) * double(wi.n) * double(wi.k);
    return r;
}
}  // namespace

void Dispatcher::matmul(sim::WeightRole role, const float* x, int64_t x_stride, int64_t m, float* y, int64_t y_stride,
                        const float* bias) {
    const int32_t layer = role == sim::WeightRole::LM_HEAD ? -1 : layer_;
    const WeightInfo wi = weights_->info(role, layer);
    OpRecord r = matmul_record(role, wi, m);
    run(r, [&] {
        weights_->matmul(role, layer, x, m, x_stride, y, y_stride, pool_);
        if (bias)
            for (int64_t i = 0; i < m; ++i)
                for (int64_t j = 0; j < wi.n; ++j) y[i * y_stride + j] += bias[j];
    });
}

void Dispatcher::rmsnorm_matmul(sim::WeightRole role, const float* x, int64_t x_stride, const int64_t* rows, int64_t m,
                                const float* norm_w, float eps, float* y, int64_t y_stride, const float* bias) {
    const int32_t layer = role == sim::WeightRole::LM_HEAD ? -1 : layer_;
    const WeightInfo wi = weights_->info(role, layer);
    OpRecord r = matmul_record(role, wi, m);  // in_bytes: x; the normed rows never reach memory
    r.weight_bytes += uint64_t(wi.k) * kF32;  // the matrix and the norm's weights
    r.flops += 4.0 * double(m) * double(wi.k);
    r.rmsnorm_fused = true;
    run(r, [&] {
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
    OpRecord r;
    r.kind = OpKind::ADD;
    r.m = m;
    r.n = n;
    r.in_bytes = 2 * uint64_t(m * n) * kF32;
    r.out_bytes = uint64_t(m * n) * kF32;
    r.flops = double(m) * double(n);
    run(r, [&] {
        for (int64_t i = 0; i < m * n; ++i) y[i] += x[i];
    });
}

// The ROPE record of m rows of q and k (shape, f32 bytes in and out, flops); the fused
// ROPE_KV_WRITE starts from it.
static OpRecord rope_record(int64_t m, const Dispatcher::RopeParams& p) {
    OpRecord r;
    r.kind = OpKind::ROPE;
    r.m = m;
    r.n = (p.n_head + p.n_head_kv) * p.head_dim;
    r.k = p.head_dim;
    r.n_head = p.n_head;
    r.n_head_kv = p.n_head_kv;
    r.in_bytes = r.out_bytes = uint64_t(m * r.n) * kF32;
    r.flops = 3.0 * double(m) * double(r.n);
    return r;
}

void Dispatcher::rope(const float* q, int64_t q_stride, float* q_out, const float* k, int64_t k_stride, float* k_out,
                      int64_t m, const int64_t* pos, const RopeParams& p) {
    const int64_t nq = p.n_head * p.head_dim, nk = p.n_head_kv * p.head_dim;
    OpRecord r = rope_record(m, p);
    run(r, [&] {
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
    OpRecord r = rope_record(m, p);
    r.kind = OpKind::ROPE_KV_WRITE;
    r.weight_dtype = kv_type;
    // reads q, k, v; writes q_out and the cache rows (no k_rope activation: sim/planner.cpp)
    r.in_bytes = uint64_t(m * (nq + 2 * nk)) * kF32;
    r.out_bytes = uint64_t(m * nq) * kF32 + uint64_t(m) * 2 * row_bytes(kv_type, nk);
    run(r, [&] {
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
    OpRecord r;
    r.kind = OpKind::SWIGLU;
    r.m = m;
    r.n = n;
    r.in_bytes = 2 * uint64_t(m * n) * kF32;
    r.out_bytes = uint64_t(m * n) * kF32;
    r.flops = 4.0 * double(m) * double(n);
    run(r, [&] {
        pool_.parallel_for(m, kRowGrain, [&](int64_t b, int64_t e) {
            if (gate_stride == n && up_stride == n) return kernels::swiglu(gate + b * n, up + b * n, out + b * n, (e - b) * n);
            for (int64_t i = b; i < e; ++i) kernels::swiglu(gate + i * gate_stride, up + i * up_stride, out + i * n, n);
        });
    });
}

void Dispatcher::kv_write(int64_t m, int64_t n_embd_kv, DType kv_type, const std::function<void()>& write) {
    OpRecord r;
    r.kind = OpKind::KV_WRITE;
    r.m = m;
    r.n = 2 * n_embd_kv;
    r.weight_dtype = kv_type;
    r.in_bytes = uint64_t(m * r.n) * kF32;
    r.out_bytes = uint64_t(m) * 2 * row_bytes(kv_type, n_embd_kv);
    run(r, write);
}

void Dispatcher::attention(const std::vector<AttentionSeq>& seqs, int64_t n_head, int64_t n_head_kv,
                           int64_t head_dim, float scale) {
    DUET_CHECK(!seqs.empty());
    const DType kv_type = seqs[0].kv.kv_type;
    const size_t kv_row = row_bytes(kv_type, n_head_kv * head_dim);
    OpRecord r;
    r.kind = OpKind::ATTENTION;
    r.k = head_dim;
    r.n_head = n_head;
    r.n_head_kv = n_head_kv;
    r.weight_dtype = kv_type;
    double pairs = 0;
    for (const AttentionSeq& s : seqs) {
        const int64_t ctx = s.pos0 + s.n_q;
        r.m += s.n_q;
        r.n = std::max(r.n, ctx);
        r.weight_bytes += 2 * uint64_t(ctx) * kv_row;
        pairs += double(s.n_q) * double(s.pos0) + double(s.n_q) * double(s.n_q + 1) / 2.0;
    }
    r.in_bytes = r.out_bytes = uint64_t(r.m * n_head * head_dim) * kF32;
    r.flops = 4.0 * double(n_head) * double(head_dim) * pairs;
    run(r, [&] {
        for (const AttentionSeq& s : seqs)
            (reference_attention_ ? kernels::ref::attention : kernels::attention)(s.q, s.n_q, s.pos0, n_head, n_head_kv,
                                                                                   head_dim, s.kv, scale, s.out, pool_);
    });
}

void Dispatcher::output(int64_t n_seq, int64_t n_vocab) {
    OpRecord r;
    r.kind = OpKind::OUTPUT;
    r.m = n_seq;
    r.n = n_vocab;
    r.in_bytes = uint64_t(n_seq * n_vocab) * kF32;
    r.out_bytes = uint64_t(n_seq) * kF32;
    r.flops = double(n_seq) * double(n_vocab);
    run(r, [] {});  // sampling itself runs in the caller (Generator, server) on these logits
}

}  // namespace duet::runtime
