#include "runtime/dispatch.h"

#include "core/error.h"
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

void Dispatcher::matmul(sim::WeightRole role, const float* x, int64_t m, float* y) {
    const int32_t layer = role == sim::WeightRole::LM_HEAD ? -1 : layer_;
    const WeightInfo wi = weights_->info(role, layer);
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
    run(r, [&] { weights_->matmul(role, layer, x, m, wi.k, y, wi.n, pool_); });
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

void Dispatcher::add_bias(float* y, const float* bias, int64_t m, int64_t n, sim::WeightRole role) {
    OpRecord r;
    r.kind = OpKind::ADD;
    r.role = role;
    r.m = m;
    r.n = n;
    r.weight_bytes = uint64_t(n) * kF32;
    r.in_bytes = uint64_t(m * n) * kF32;
    r.out_bytes = uint64_t(m * n) * kF32;
    r.flops = double(m) * double(n);
    run(r, [&] {
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) y[i * n + j] += bias[j];
    });
}

void Dispatcher::rope(float* x, int64_t m, const int64_t* pos, int64_t n_head, int64_t head_dim, int64_t n_rot,
                      float freq_base, float freq_scale, const float* freq_factors, kernels::RopeOrder order) {
    OpRecord r;
    r.kind = OpKind::ROPE;
    r.m = m;
    r.n = n_head * head_dim;
    r.k = head_dim;
    r.n_head = n_head;
    r.in_bytes = r.out_bytes = uint64_t(m * n_head * head_dim) * kF32;
    r.flops = 3.0 * double(m) * double(n_head) * double(n_rot);
    run(r, [&] {
        pool_.parallel_for(m, kRowGrain, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i)
                kernels::rope(x + i * n_head * head_dim, n_head, head_dim, n_rot, pos[i], freq_base, freq_scale,
                              freq_factors, order);
        });
    });
}

void Dispatcher::swiglu(const float* gate, const float* up, float* out, int64_t m, int64_t n) {
    OpRecord r;
    r.kind = OpKind::SWIGLU;
    r.m = m;
    r.n = n;
    r.in_bytes = 2 * uint64_t(m * n) * kF32;
    r.out_bytes = uint64_t(m * n) * kF32;
    r.flops = 5.0 * double(m) * double(n);
    run(r, [&] {
        pool_.parallel_for(m, kRowGrain, [&](int64_t b, int64_t e) {
            kernels::swiglu(gate + b * n, up + b * n, out + b * n, (e - b) * n);
        });
    });
}

void Dispatcher::kv_write(int64_t m, int64_t n_embd_kv, DType kv_type, const std::function<void()>& write) {
    OpRecord r;
    r.kind = OpKind::KV_WRITE;
    r.m = m;
    r.n = n_embd_kv;
    r.weight_dtype = kv_type;
    r.in_bytes = 2 * uint64_t(m * n_embd_kv) * kF32;
    r.out_bytes = 2 * uint64_t(m) * row_bytes(kv_type, n_embd_kv);
    run(r, write);
}

void Dispatcher::attention(const float* q, int64_t n_q, int64_t pos0, int64_t n_head, int64_t n_head_kv,
                           int64_t head_dim, const kernels::KvView& kv, float scale, float* out) {
    const int64_t n_ctx = pos0 + n_q;
    const double pairs = double(n_q) * double(pos0) + double(n_q) * double(n_q + 1) / 2.0;
    OpRecord r;
    r.kind = OpKind::ATTENTION;
    r.m = n_q;
    r.n = n_ctx;
    r.k = head_dim;
    r.n_head = n_head;
    r.n_head_kv = n_head_kv;
    r.weight_dtype = kv.kv_type;
    r.weight_bytes = 2 * uint64_t(n_ctx) * row_bytes(kv.kv_type, n_head_kv * head_dim);
    r.in_bytes = r.out_bytes = uint64_t(n_q * n_head * head_dim) * kF32;
    r.flops = 4.0 * double(n_head) * double(head_dim) * pairs;
    const int32_t saved = n_seq_;
    n_seq_ = 1;  // attention runs per sequence
    const sim::Phase saved_phase = phase_;
    phase_ = n_q > 1 ? sim::Phase::PREFILL : sim::Phase::DECODE;
    run(r, [&] { kernels::attention(q, n_q, pos0, n_head, n_head_kv, head_dim, kv, scale, out, pool_); });
    n_seq_ = saved;
    phase_ = saved_phase;
}

}  // namespace duet::runtime
