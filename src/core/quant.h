#pragma once
// Scalar (de)quantisation of rows between f32 and every storage dtype duet reads or writes
// (F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_K, Q6_K). The block layouts are ggml's (core/dtype.h) and
// the quantisers follow ggml's reference quantisers (`quantize_row_*_ref`) step by step, so a
// file written by duet decodes identically in llama.cpp and the other way round, and the same
// input gives the same bytes as ggml's reference (no importance matrix).
//
// Plain functions on caller-owned buffers; no state, thread safe. `n` is the number of
// elements of the row; for quantised types it must be a multiple of the block size.
#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace duet::quant {

// Activation block of 256 values for K-quant dot products (ggml's block_q8_K layout):
// value i = d * qs[i]; bsums[j] = sum of qs[16 j .. 16 j + 15] (used to apply per-sub-block
// minimums and offsets without touching the quants again).
struct BlockQ8_K {
    float d;
    int8_t qs[kQK_K];
    int16_t bsums[kQK_K / 16];
};
static_assert(sizeof(BlockQ8_K) == 292);

// quantize_row / dequantize_row accept the matmul weight dtypes (is_matmul_weight_dtype, core/dtype.h).
// Encodes n floats into `dst` (row_bytes(type, n) bytes). Throws duet::Error when the type is
// not supported or n is not a multiple of its block size (the message names both).
void quantize_row(const float* src, DType type, void* dst, int64_t n);

// Decodes row_bytes(type, n) bytes of `src` into n floats. Same errors as quantize_row.
void dequantize_row(const void* src, DType type, float* dst, int64_t n);

// Quantises n floats (multiple of 256) to n / 256 Q8_K blocks, as ggml's
// quantize_row_q8_K_ref: the element of largest magnitude maps to -127 exactly.
void quantize_row_q8_K(const float* src, BlockQ8_K* dst, int64_t n);

// Q4_K packs 8 six-bit sub-block scales and 8 six-bit minimums into 12 bytes; these read
// and write sub-block j (0..7) of that packing.
void q4k_get_scale_min(int j, const uint8_t* packed, uint8_t* scale, uint8_t* min);
void q4k_set_scale_min(int j, uint8_t scale, uint8_t min, uint8_t* packed);  // packed zeroed first

// Round half to even, the rounding ggml's quantisers use (its `nearest_int`).
int nearest_int(float v);

}  // namespace duet::quant
