// AVX2 + FMA + F16C kernels. Compiled with -mavx2 -mfma -mf16c (duet_isa_source); only reached
// through kernels::table_for(), which checks the CPU first. The ISA-specific primitives are
// defined here; matmul_impl.inc and ops_impl.inc hold the code shared with the AVX-512 file.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
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
// The sums of 4 vectors in one: lanes paired within each 128-bit lane, then the 2 lanes added.
inline __m128 vhsum4(VF a, VF b, VF c, VF d) {
    const VF ab = _mm256_add_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b));  // a0+a2 b0+b2 a1+a3 b1+b3
    const VF cd = _mm256_add_ps(_mm256_unpacklo_ps(c, d), _mm256_unpackhi_ps(c, d));
    const VF s = _mm256_add_ps(_mm256_shuffle_ps(ab, cd, _MM_SHUFFLE(1, 0, 1, 0)),
                               _mm256_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 2, 3, 2)));  // a b c d per lane
    return _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
}
inline float vhmax(VF v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// ---- activation quantisation (matmul_impl.inc's quantize_block32 / quantize_block_q8k) ----
// The largest |v| of 16 values; a NaN is skipped, as std::max(amax, std::fabs(v)) skips it.
inline float absmax16(const float* v) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256 m = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(v)), _mm256_setzero_ps());
    return vhmax(_mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(v + 8)), m));
}
// The index of the first of 16 values with |v| == a, or -1.
inline int find_abs16(const float* v, float a) {
    const __m256 sign = _mm256_set1_ps(-0.0f), va = _mm256_set1_ps(a);
    const unsigned lo =
        unsigned(_mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(v)), va, _CMP_EQ_OQ)));
    const unsigned hi =
        unsigned(_mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(v + 8)), va, _CMP_EQ_OQ)));
    const unsigned k = lo | hi << 8;
    return k ? __builtin_ctz(k) : -1;
}
// q[l] = min(127, nearbyint(v[l] * s)) for 16 values (the current rounding mode, as nearbyint);
// returns their sum.
inline int32_t quant16(const float* v, float s, int8_t* q) {
    const __m256 vs = _mm256_set1_ps(s);
    const __m256i c127 = _mm256_set1_epi32(127);
    const __m256i r0 = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(v), vs)), c127);
    const __m256i r1 = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(v + 8), vs)), c127);
    // words [r0 0-3, r1 0-3 | r0 4-7, r1 4-7] -> bytes, dwords 0, 1 | 4, 5 -> in value order
    const __m256i w = _mm256_packs_epi32(r0, r1);
    const __m256i b = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(w, w), _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm256_castsi256_si128(b));
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(_mm256_add_epi32(r0, r1)),
                              _mm256_extracti128_si256(_mm256_add_epi32(r0, r1), 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
    return _mm_cvtsi128_si32(t);
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
