// AVX-512 F/BW/VL/DQ kernels without VNNI or BF16 (Skylake-SP / Cascade Lake without VNNI):
// the same code as avx512_kernels.cpp (16-lane float paths) with integer dot products through
// vpmaddubsw + vpmaddwd as on AVX2. kernels.cpp picks this table at the AVX512 level when the
// CPU lacks VNNI or BF16. Shared code: matmul_impl.inc, ops_impl.inc.
// GCC 12's avx512fintrin.h seeds "undefined" vectors from uninitialised locals, which -Wall
// reports at every use of _mm512_reduce_* / cvtph; the values are never read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
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
namespace avx512bw {

// Same name as the VNNI table: both are the AVX512 level (kernel_isa() == isa_name(isa_level())).
constexpr const char* kIsaName = "avx512";

#include "kernels/cpu/avx512_common.inc"

#include "kernels/cpu/dot_maddubs.inc"
inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

// 64-byte dot product for the packed prefill GEMM (gemm_q8_packed.inc): 16 i32 lanes.
inline __m512i dot64_us(__m512i u, __m512i s) {
    return _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1));
}
// dot_us_scaled_acc on 64 bytes (the q4_k tile, kquant_impl.inc): 16 i32 lanes.
inline __m512i dot64_us_scaled_acc(__m512i acc, __m512i u, __m512i s, __m512i sc16) {
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), sc16));
}

// Each byte's high nibble, moved down (the q4_0 / q5_0 quads, gemv_quad_zmm.inc; no GFNI on
// Skylake-SP: a shift and a mask).
inline __m512i high_nibbles(__m512i q) { return _mm512_and_si512(_mm512_srli_epi16(q, 4), _mm512_set1_epi8(0x0F)); }
// The q4_k tile's quants (kquant_impl.inc): the low 256 bits' bytes -> their low nibbles, the
// high 256 bits' -> their high nibbles (a shift per 64-bit lane, a mask).
inline __m512i split_nibbles(__m512i raw) {
    return _mm512_and_si512(_mm512_srlv_epi64(raw, _mm512_setr_epi64(0, 0, 0, 0, 4, 4, 4, 4)), _mm512_set1_epi8(0x0F));
}

// 32 vector registers: 4 x 6 accumulators + 6 weights + 1 x for the float paths.
constexpr int kMR = 4;
constexpr int kNRF = 6;
constexpr int kNRQ = 4;
constexpr int kNRQ6 = 2;  // q6_k: 2 rows measured faster (fewer streams for its 210-byte blocks)

#define DUET_KERNELS_ZMM 1
#include "kernels/cpu/matmul_impl.inc"
#undef DUET_KERNELS_ZMM
#include "kernels/cpu/ops_impl.inc"

}  // namespace avx512bw

const KernelTable* avx512bw_table() { return &avx512bw::kTable; }

}  // namespace duet::kernels::cpu
