#include <vector>

#include "core/quant.h"
#include "kernels/kernel_table.h"
#include "kernels/ref/ref_kernels.h"

namespace duet::kernels::ref {

void matmul(const float* x, int64_t m, int64_t k, int64_t x_stride, const void* w, DType wtype,
            size_t w_row_stride_bytes, int64_t n, float* y, int64_t y_stride, ThreadPool&) {
    check_matmul_args(m, k, x_stride, wtype, w_row_stride_bytes, n, y_stride);
    std::vector<float> row(static_cast<size_t>(k));
    for (int64_t j = 0; j < n; ++j) {
        quant::dequantize_row(static_cast<const uint8_t*>(w) + size_t(j) * w_row_stride_bytes, wtype, row.data(), k);
        for (int64_t i = 0; i < m; ++i) {
            const float* xi = x + i * x_stride;
            double s = 0;
            for (int64_t l = 0; l < k; ++l) s += double(xi[l]) * double(row[size_t(l)]);
            y[i * y_stride + j] = float(s);
        }
    }
}

ActFormat act_format(DType) { return ActFormat::F32; }

void rmsnorm_quantize(const float* x, int64_t x_stride, const int64_t* rows, int64_t m, int64_t k,
                      const float* weight, float eps, ActFormat f, void* out, ThreadPool&) {
    check_rmsnorm_quantize_args("scalar", act_format, f, m, k, x_stride);
    auto* y = static_cast<float*>(out);
    for (int64_t i = 0; i < m; ++i) rmsnorm(x + (rows ? rows[i] : i) * x_stride, weight, y + i * k, k, eps);
}

void matmul_quantized(const void* xq, ActFormat f, int64_t m, int64_t k, const void* w, DType wtype,
                      size_t w_row_stride_bytes, int64_t n, float* y, int64_t y_stride, ThreadPool& pool) {
    check_matmul_quantized_args("scalar", act_format, f, wtype);
    matmul(static_cast<const float*>(xq), m, k, k, w, wtype, w_row_stride_bytes, n, y, y_stride, pool);
}

void dequantize_row(const void* src, DType type, float* dst, int64_t n) { quant::dequantize_row(src, type, dst, n); }

}  // namespace duet::kernels::ref
