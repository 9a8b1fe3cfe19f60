// AVX-512 kernels (F, BW, VL, DQ, VNNI, BF16 as required by cpu_features' AVX512 level).
// Float paths use 16-lane zmm vectors; integer dot products use VNNI vpdpbusd on 32-byte
// blocks (one ggml block of 32 quants per instruction). Shared code: matmul_impl.inc, ops_impl.inc.
// GCC 12's avx512fintrin.h seeds "undefined" vectors from uninitialised locals, which -Wall
// reports at every use of _mm512_reduce_* / cvtph; the values are never read.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/quant.h"
#include "kernels/cpu/cpu_tables.h"
#include "kernels/ref/ref_kernels.h"

namespace duet::kernels::cpu {
namespace avx512 {

constexpr const char* kIsaName = "avx512";

using VF = __m512;
constexpr int kW = 16;
inline VF vzero() { return _mm512_setzero_ps(); }
inline VF vset1(float v) { return _mm512_set1_ps(v); }
inline VF vload(const float* p) { return _mm512_loadu_ps(p); }
inline void vstore(float* p, VF v) { _mm512_storeu_ps(p, v); }
inline VF vload_f16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline VF vload_bf16(const uint16_t* p) {
    const __m512i u = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(u, 16));
}
inline VF vfma(VF a, VF b, VF c) { return _mm512_fmadd_ps(a, b, c); }
inline VF vadd(VF a, VF b) { return _mm512_add_ps(a, b); }
inline VF vsub(VF a, VF b) { return _mm512_sub_ps(a, b); }
inline VF vmul(VF a, VF b) { return _mm512_mul_ps(a, b); }
inline VF vdiv(VF a, VF b) { return _mm512_div_ps(a, b); }
inline VF vmax(VF a, VF b) { return _mm512_max_ps(a, b); }
inline VF vmin(VF a, VF b) { return _mm512_min_ps(a, b); }
inline VF vkeep_ge(VF x, float lo, VF v) {
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(lo), _CMP_GE_OQ), v);
}
inline VF vround(VF a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
inline VF vpow2i(VF n) {
    const __m512i e = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
    return _mm512_castsi512_ps(_mm512_slli_epi32(e, 23));
}
inline float vhsum(VF v) { return _mm512_reduce_add_ps(v); }
inline float vhmax(VF v) { return _mm512_reduce_max_ps(v); }

inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// VNNI: vpdpbusd multiplies unsigned by signed bytes and adds groups of 4 into i32 lanes.
inline __m256i dot_us(__m256i u, __m256i s) { return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s); }
inline __m256i dot_us_acc(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_epi32(acc, u, s); }
// vpdpwssd fuses the 16-bit scale multiply and the accumulation of maddubs' pair sums.
inline __m256i dot_us_scaled_acc(__m256i acc, __m256i u, __m256i s, __m256i sc16) {
    return _mm256_dpwssd_epi32(acc, _mm256_maddubs_epi16(u, s), sc16);
}
inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

// 32 vector registers: 4 x 6 accumulators + 6 weights + 1 x for the float paths.
constexpr int kMR = 4;
constexpr int kNRF = 6;
constexpr int kNRQ = 4;
constexpr int kNRQ6 = 2;  // q6_k: 2 rows measured faster (fewer streams for its 210-byte blocks)

#include "kernels/cpu/matmul_impl.inc"
#include "kernels/cpu/ops_impl.inc"

}  // namespace avx512

const KernelTable* avx512_table() { return &avx512::kTable; }

}  // namespace duet::kernels::cpu
