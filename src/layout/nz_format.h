#pragma once
// Ascend's FRACTAL_NZ format (ACL format id 29), the layout the cube unit's operands take in
// L1/L0: a 2-D matrix ND [m][n] is cut into fractals of m0 = 16 rows x n0 columns, where one
// fractal row is 32 bytes (n0 = 16 for f16/bf16, 32 for i8, 8 for f32; a f16 fractal is 16x16
// = 512 B). Fractals are stored column-of-fractals first: NZ [n1][m1 * 16][n0] with
// m1 = ceil(m / 16), n1 = ceil(n / n0); element (i, j) sits at
//     ((j / n0) * m1 * 16 + i) * n0 + j % n0,
// and the padding (i >= m or j >= n) is zero. nd_to_nz and nz_to_nd are exact inverses.
// Batched tensors are converted one 2-D matrix at a time by the caller.
// Thread safety: pure functions. Units: elements unless `_bytes`.
#include <cstdint>
#include <vector>

#include "core/dtype.h"

namespace duet::layout {

constexpr int kNzFractalRows = 16;   // m0
constexpr int kNzFractalRowBytes = 32;

struct NzShape {
    int64_t m = 0, n = 0;      // the ND matrix
    int elem_bytes = 2;
    int64_t m0 = 16, n0 = 16;  // fractal
    int64_t m1 = 0, n1 = 0;    // fractals along m and n
    uint64_t nz_bytes() const { return uint64_t(n1) * uint64_t(m1 * m0) * uint64_t(n0) * uint64_t(elem_bytes); }
    uint64_t nd_bytes() const { return uint64_t(m) * uint64_t(n) * uint64_t(elem_bytes); }
    uint64_t padding_bytes() const { return nz_bytes() - nd_bytes(); }
};

// The fractal a matrix of `dtype` is held in: quantised ggml rows as int8 fractals of their bytes
// (block scales included; k counted in bytes, as the PIM layout's rule 0), others as themselves.
// An assumption without a public source: Ascend has no fractal for ggml's blocks.
inline DType nz_storage_dtype(DType dtype) { return dtype_is_quantized(dtype) ? DType::I8 : dtype; }
// Throws duet::Error for a dtype without a fractal (allowed: f16, bf16, i8, f32) or m, n < 1.
NzShape nz_shape(int64_t m, int64_t n, DType dtype);
// Index (in elements) of ND element (i, j) inside the NZ buffer.
inline uint64_t nz_index(const NzShape& s, int64_t i, int64_t j) {
    return (uint64_t(j / s.n0) * uint64_t(s.m1 * s.m0) + uint64_t(i)) * uint64_t(s.n0) + uint64_t(j % s.n0);
}

// nd: [m][n] contiguous; returns nz_bytes() bytes.
std::vector<uint8_t> nd_to_nz(const void* nd, const NzShape& s);
// nz: nz_bytes() bytes (checked); returns [m][n].
std::vector<uint8_t> nz_to_nd(const uint8_t* nz, uint64_t nz_size, const NzShape& s);

}  // namespace duet::layout
