#include "kernels/kernels.h"

#include "core/error.h"
#include "core/quant.h"
#include "kernels/cpu/cpu_tables.h"
#include "kernels/kernel_table.h"
#include "kernels/ref/ref_kernels.h"

namespace duet::kernels {

const KernelTable& ref_table() {
    static const KernelTable t{"scalar",        ref::matmul,           ref::rmsnorm,   ref::rope,
                               ref::softmax,    ref::swiglu,           ref::attention, ref::dequantize_row,
                               nullptr,         ref::act_format,       ref::rmsnorm_quantize,
                               ref::matmul_quantized};
    return t;
}

const KernelTable* table_for(IsaLevel level) {
    const auto& f = cpu_features();
    switch (level) {
        case IsaLevel::SCALAR:
            return &ref_table();
        case IsaLevel::AVX2:
            return f.avx2 && f.fma && f.f16c ? cpu::avx2_table() : nullptr;
        case IsaLevel::AVX512:
            if (!(f.avx2 && f.fma && f.f16c && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq)) return nullptr;
            return has_vnni_table_extensions(f) ? cpu::avx512_table() : cpu::avx512bw_table();
    }
    return nullptr;
}

const KernelTable* optimised_table(int index) {
    const auto& f = cpu_features();
    const KernelTable* runnable[3] = {};
    int n = 0;
    if (const KernelTable* t = table_for(IsaLevel::AVX2)) runnable[n++] = t;
    if (table_for(IsaLevel::AVX512)) {
        if (const KernelTable* t = cpu::avx512bw_table()) runnable[n++] = t;
        if (has_vnni_table_extensions(f)) runnable[n++] = cpu::avx512_table();
    }
    return index >= 0 && index < n ? runnable[index] : nullptr;
}

const KernelTable& active_table() {
    static const KernelTable* t = [] {
        for (int l = int(isa_level()); l >= 0; --l)
            if (const KernelTable* tab = table_for(IsaLevel(l))) return tab;
        return &ref_table();
    }();
    return *t;
}

void check_matmul_args(int64_t m, int64_t k, int64_t x_stride, DType wtype, size_t w_row_stride_bytes, int64_t n,
                       int64_t y_stride) {
    if (!is_matmul_weight_dtype(wtype))
        fail("matmul: weight dtype '{}' is not supported (allowed: {})", dtype_name(wtype), matmul_weight_dtype_names());
    const int be = dtype_info(wtype).block_elems;
    if (k <= 0 || k % be != 0)
        fail("matmul: k = {} must be a positive multiple of the {} block size {}", k, dtype_name(wtype), be);
    if (m < 0 || n < 0) fail("matmul: m = {} and n = {} must not be negative", m, n);
    if (x_stride < k) fail("matmul: x_stride = {} is smaller than k = {}", x_stride, k);
    if (y_stride < n) fail("matmul: y_stride = {} is smaller than n = {}", y_stride, n);
    if (w_row_stride_bytes < row_bytes(wtype, k))
        fail("matmul: w_row_stride_bytes = {} is smaller than a {} row of {} elements ({} bytes)", w_row_stride_bytes,
             dtype_name(wtype), k, row_bytes(wtype, k));
}

const char* act_format_name(ActFormat f) {
    switch (f) {
        case ActFormat::F32: return "f32";
        case ActFormat::Q8_32: return "q8_32";
        case ActFormat::Q8_K: return "q8_k";
    }
    return "?";
}

int64_t act_block(ActFormat f) { return f == ActFormat::Q8_32 ? 32 : f == ActFormat::Q8_K ? kQK_K : 1; }

size_t act_bytes(ActFormat f, int64_t m, int64_t k) {
    switch (f) {
        case ActFormat::F32: return size_t(m * k) * sizeof(float);
        case ActFormat::Q8_32: return size_t(m * k) + size_t(m * (k / 32)) * (sizeof(float) + sizeof(int32_t));
        case ActFormat::Q8_K: return size_t(m * (k / kQK_K)) * sizeof(quant::BlockQ8_K);
    }
    return 0;
}

void check_rmsnorm_quantize_args(const char* name, ActFormatFn act_format, ActFormat f, int64_t m, int64_t k,
                                 int64_t x_stride) {
    bool used = false;  // does this table's matmul feed any weight type with f?
    for (DType w : matmul_weight_dtypes())
        used = used || act_format(w) == f;
    if (!used)
        fail("rmsnorm_quantize: the {} kernels' matmul takes no activations in {} (it takes {} for q8_0, {} for q4_k)",
             name, act_format_name(f), act_format_name(act_format(DType::Q8_0)),
             act_format_name(act_format(DType::Q4_K)));
    if (m < 0) fail("rmsnorm_quantize: m = {} must not be negative", m);
    if (k <= 0 || k % act_block(f) != 0)
        fail("rmsnorm_quantize: k = {} must be a positive multiple of the {} block size {}", k, act_format_name(f),
             act_block(f));
    if (x_stride < k) fail("rmsnorm_quantize: x_stride = {} is smaller than k = {}", x_stride, k);
}

void check_matmul_quantized_args(const char* name, ActFormatFn act_format, ActFormat f, DType wtype) {
    if (!is_matmul_weight_dtype(wtype)) return;  // check_matmul_args names it
    if (act_format(wtype) != f)
        fail("matmul_quantized: activations in {} do not feed {} weights on the {} kernels (they take {})",
             act_format_name(f), dtype_name(wtype), name, act_format_name(act_format(wtype)));
}

void check_attention_args(int64_t n_q, int64_t pos0, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                          const KvView& kv) {
    if (n_head_kv <= 0 || n_head <= 0 || n_head % n_head_kv != 0)
        fail("attention: n_head = {} must be a positive multiple of n_head_kv = {}", n_head, n_head_kv);
    if (head_dim <= 0) fail("attention: head_dim = {} must be positive", head_dim);
    if (n_q < 0 || pos0 < 0) fail("attention: n_q = {} and pos0 = {} must not be negative", n_q, pos0);
    if (kv.block_tokens <= 0) fail("attention: KV block_tokens = {} must be positive", kv.block_tokens);
    if (kv.kv_type != DType::F32 && kv.kv_type != DType::F16 && kv.kv_type != DType::Q8_0)
        fail("attention: KV dtype '{}' is not supported (allowed: f32, f16, q8_0)", dtype_name(kv.kv_type));
    if (kv.kv_type == DType::Q8_0 && head_dim % 32 != 0)
        fail("attention: an int8 (q8_0) KV cache needs head_dim a multiple of 32 (head_dim = {})", head_dim);
}

void matmul(const float* x, int64_t m, int64_t k, int64_t x_stride, const void* w, DType wtype,
            size_t w_row_stride_bytes, int64_t n, float* y, int64_t y_stride, ThreadPool& pool) {
    active_table().matmul(x, m, k, x_stride, w, wtype, w_row_stride_bytes, n, y, y_stride, pool);
}

void matmul_grouped(const MatmulGroup* groups, int64_t n_groups, int64_t k, DType wtype, int64_t n, int64_t n_block,
                    ThreadPool& pool) {
    matmul_grouped_with(active_table(), groups, n_groups, k, wtype, n, n_block, pool);
}

void rmsnorm(const float* x, const float* weight, float* y, int64_t n, float eps) {
    active_table().rmsnorm(x, weight, y, n, eps);
}

void rope(float* x, int64_t n_head, int64_t head_dim, int64_t n_rot, int64_t pos, float freq_base, float freq_scale,
          const float* freq_factors, RopeOrder order) {
    active_table().rope(x, n_head, head_dim, n_rot, pos, freq_base, freq_scale, freq_factors, order);
}

void softmax(float* x, int64_t n) { active_table().softmax(x, n); }

void swiglu(const float* gate, const float* up, float* out, int64_t n) { active_table().swiglu(gate, up, out, n); }

void attention(const float* q, int64_t n_q, int64_t pos0, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
               const KvView& kv, float scale, float* out, ThreadPool& pool) {
    active_table().attention(q, n_q, pos0, n_head, n_head_kv, head_dim, kv, scale, out, pool);
}

void dequantize_row(const void* src, DType type, float* dst, int64_t n) {
    active_table().dequantize_row(src, type, dst, n);
}

ActFormat act_format(DType wtype) { return active_table().act_format(wtype); }

void rmsnorm_quantize(const float* x, int64_t x_stride, const int64_t* rows, int64_t m, int64_t k,
                      const float* weight, float eps, ActFormat f, void* out, ThreadPool& pool) {
    active_table().rmsnorm_quantize(x, x_stride, rows, m, k, weight, eps, f, out, pool);
}

void matmul_quantized(const void* xq, ActFormat f, int64_t m, int64_t k, const void* w, DType wtype,
                      size_t w_row_stride_bytes, int64_t n, float* y, int64_t y_stride, ThreadPool& pool) {
    active_table().matmul_quantized(xq, f, m, k, w, wtype, w_row_stride_bytes, n, y, y_stride, pool);
}

const char* kernel_isa() { return active_table().name; }

}  // namespace duet::kernels
