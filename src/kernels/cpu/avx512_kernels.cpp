// AVX-512 kernels with VNNI and BF16 (Ice Lake server, Sapphire Rapids, Zen 4); kernels.cpp
// picks this table at the AVX512 level when the CPU has both, else avx512bw_kernels.cpp.
// Float paths use 16-lane zmm vectors; integer dot products use VNNI vpdpbusd on 32-byte
// blocks (one ggml block of 32 quants per instruction). Shared code: matmul_impl.inc, ops_impl.inc.
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
#include <type_traits>

#include "core/quant.h"
#include "kernels/cpu/cpu_tables.h"
#include "kernels/ref/ref_kernels.h"

namespace duet::kernels::cpu {
namespace avx512 {

constexpr const char* kIsaName = "avx512";

#include "kernels/cpu/avx512_common.inc"

// VNNI: vpdpbusd multiplies unsigned by signed bytes and adds groups of 4 into i32 lanes.
inline __m256i dot_us(__m256i u, __m256i s) { return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s); }
inline __m256i dot_us_acc(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_epi32(acc, u, s); }
// vpdpwssd fuses the 16-bit scale multiply and the accumulation of maddubs' pair sums.
inline __m256i dot_us_scaled_acc(__m256i acc, __m256i u, __m256i s, __m256i sc16) {
    return _mm256_dpwssd_epi32(acc, _mm256_maddubs_epi16(u, s), sc16);
}
inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

// 64-byte dot product for the packed prefill GEMM (gemm_q8_packed.inc): 16 i32 lanes.
inline __m512i dot64_us(__m512i u, __m512i s) { return _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, s); }
// dot_us_scaled_acc on 64 bytes (the q4_k tile, kquant_impl.inc): 16 i32 lanes.
inline __m512i dot64_us_scaled_acc(__m512i acc, __m512i u, __m512i s, __m512i sc16) {
    return _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(u, s), sc16);
}

// Nibbles by GFNI affine transforms: the 8x8 bit matrix is one per 64-bit lane, its byte 7 - i
// selecting output bit i; kLowNibble keeps input bits 0-3, kHighNibble moves bits 4-7 to 0-3.
// One op where shift + mask take two: q4_0's and q5_0's decode quads 1.07-1.16x per step, q4_k's
// tile ~1.04x (same-process A/B in L1 on the Xeon guest, docs/performance.md).
constexpr long long kLowNibble = 0x0102040800000000LL, kHighNibble = 0x1020408000000000LL;
// Each byte's high nibble, moved down (the q4_0 / q5_0 quads, gemv_quad_zmm.inc).
inline __m512i high_nibbles(__m512i q) { return _mm512_gf2p8affine_epi64_epi8(q, _mm512_set1_epi64(kHighNibble), 0); }
// The q4_k tile's quants (kquant_impl.inc): the low 256 bits' bytes -> their low nibbles, the
// high 256 bits' -> their high nibbles.
inline __m512i split_nibbles(__m512i raw) {
    const long long lo = kLowNibble, hi = kHighNibble;
    return _mm512_gf2p8affine_epi64_epi8(raw, _mm512_setr_epi64(lo, lo, lo, lo, hi, hi, hi, hi), 0);
}

// 32 vector registers: 4 x 6 accumulators + 6 weights + 1 x for the float paths.
constexpr int kMR = 4;
constexpr int kNRF = 6;
constexpr int kNRQ = 4;
constexpr int kNRQ6 = 2;  // q6_k: 2 rows measured faster (fewer streams for its 210-byte blocks)

#define DUET_KERNELS_ZMM 1
#define DUET_KERNELS_VNNI 1  // the vpdpbusd prefill GEMM (gemm_vnni.inc)
#include "kernels/cpu/matmul_impl.inc"
#undef DUET_KERNELS_VNNI
#undef DUET_KERNELS_ZMM
#include "kernels/cpu/ops_impl.inc"

}  // namespace avx512

const KernelTable* avx512_table() { return &avx512::kTable; }

}  // namespace duet::kernels::cpu
