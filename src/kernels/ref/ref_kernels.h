#pragma once
// Plain scalar reference of every kernel of kernels.h: obvious loops, double accumulation,
// no threading. The oracle the optimised kernels are tested against, and the "scalar" path
// (DUET_ISA=scalar). Same contracts as kernels.h.
#include "kernels/kernels.h"

namespace duet::kernels::ref {

// Dequantises one weight row at a time to f32 and accumulates x . w in double.
void matmul(const float* x, int64_t m, int64_t k, int64_t x_stride, const void* w, DType wtype,
            size_t w_row_stride_bytes, int64_t n, float* y, int64_t y_stride, ThreadPool& pool);
void rmsnorm(const float* x, const float* weight, float* y, int64_t n, float eps);
// The reference never quantises x: its "quantised" activations are the normed f32 rows
// (ActFormat::F32 for every weight type), so the fused path is rmsnorm() into rows + matmul().
ActFormat act_format(DType wtype);
void rmsnorm_quantize(const float* x, int64_t x_stride, const int64_t* rows, int64_t m, int64_t k,
                      const float* weight, float eps, ActFormat f, void* out, ThreadPool& pool);
void matmul_quantized(const void* xq, ActFormat f, int64_t m, int64_t k, const void* w, DType wtype,
                      size_t w_row_stride_bytes, int64_t n, float* y, int64_t y_stride, ThreadPool& pool);
void rope(float* x, int64_t n_head, int64_t head_dim, int64_t n_rot, int64_t pos, float freq_base, float freq_scale,
          const float* freq_factors, RopeOrder order);
void softmax(float* x, int64_t n);
void swiglu(const float* gate, const float* up, float* out, int64_t n);
void attention(const float* q, int64_t n_q, int64_t pos0, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
               const KvView& kv, float scale, float* out, ThreadPool& pool);
void dequantize_row(const void* src, DType type, float* dst, int64_t n);

// Row t of the K (is_k) or V cache as f32: [n_head_kv][head_dim] values into dst.
void kv_row(const KvView& kv, bool is_k, int64_t t, int64_t row_elems, float* dst);

}  // namespace duet::kernels::ref
