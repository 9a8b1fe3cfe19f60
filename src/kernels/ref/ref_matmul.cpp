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

void dequantize_row(const void* src, DType type, float* dst, int64_t n) { quant::dequantize_row(src, type, dst, n); }

}  // namespace duet::kernels::ref
