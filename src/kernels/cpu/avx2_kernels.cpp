// AVX2 + FMA + F16C kernels. Compiled with -mavx2 -mfma -mf16c (duet_isa_source); only reached
// through kernels::table_for(), which checks the CPU first. The ISA-specific primitives are
// defined here; matmul_impl.inc and ops_impl.inc hold the code shared with the AVX-512 file.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/quant.h"
#include "kernels/cpu/cpu_tables.h"
#include "kernels/ref/ref_kernels.h"

namespace duet::kernels::cpu {
namespace avx2 {

constexpr const char* kIsaName = "avx2";

#include "kernels/cpu/ymm_convert.inc"

// ---- float vectors: 8 lanes ----
using VF = __m256;
constexpr int kW = 8;
inline VF vzero() { return _mm256_setzero_ps(); }
inline VF vset1(float v) { return _mm256_set1_ps(v); }
inline VF vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, VF v) { _mm256_storeu_ps(p, v); }
inline VF vload_f16(const uint16_t* p) { return ymm_load_f16(p); }
inline VF vload_bf16(const uint16_t* p) { return ymm_load_bf16(p); }
inline VF vfma(VF a, VF b, VF c) { return _mm256_fmadd_ps(a, b, c); }
inline VF vadd(VF a, VF b) { return _mm256_add_ps(a, b); }
inline VF vsub(VF a, VF b) { return _mm256_sub_ps(a, b); }
inline VF vmul(VF a, VF b) { return _mm256_mul_ps(a, b); }
inline VF vdiv(VF a, VF b) { return _mm256_div_ps(a, b); }
inline VF vmax(VF a, VF b) { return _mm256_max_ps(a, b); }
inline VF vmin(VF a, VF b) { return _mm256_min_ps(a, b); }
// v where x >= lo, else 0
inline VF vkeep_ge(VF x, float lo, VF v) { return _mm256_and_ps(_mm256_cmp_ps(x, _mm256_set1_ps(lo), _CMP_GE_OQ), v); }
inline VF vround(VF a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
// 2^n for integral n in [-126, 127] given as floats
inline VF vpow2i(VF n) {
    const __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
}
inline float vhsum(VF v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
inline float vhmax(VF v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// ---- 8-lane f32 helpers for the integer paths (shared width with AVX-512) ----
inline float hsum8(__m256 v) { return vhsum(v); }

// ---- int8 dot products on 32 bytes ----
#include "kernels/cpu/dot_maddubs.inc"
inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

// Register blocking: x rows per tile; weight rows per tile for float and integer paths
// (16 ymm registers: 4 x 3 accumulators + 3 weights + 1 x).
constexpr int kMR = 4;
constexpr int kNRF = 3;
constexpr int kNRQ = 2;
constexpr int kNRQ6 = 2;

#include "kernels/cpu/matmul_impl.inc"
#include "kernels/cpu/ops_impl.inc"

}  // namespace avx2

const KernelTable* avx2_table() { return &avx2::kTable; }

}  // namespace duet::kernels::cpu
