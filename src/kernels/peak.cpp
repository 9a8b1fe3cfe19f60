#include "kernels/peak.h"

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/cpu_features.h"
#include "kernels/kernels.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define DUET_PEAK_X86 1
#endif

namespace duet::kernels {
namespace {

double thread_cpu_s() {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

// volatile sink: keeps the accumulators observable so no chain is optimised away
volatile double g_sink = 0;  // a double: lane values may be any 64-bit integers, no overflow

constexpr int kChains = 12;

#ifdef DUET_PEAK_X86
// Each function runs `iters` (>= 1) rounds of kChains independent instructions (or sequences)
// and returns the ops done (2 per multiply-add). The whole loop is one inline-asm statement
// with the accumulators as in-out register operands. Written as intrinsics over an array, GCC
// copied every accumulator to another register and back each round (24 vmovdqa per 12
// vpdpbusd), and whether the core eliminated those copies at rename moved the VNNI probe by
// x1.9 between runs (330 vs 630 GOP/s on the session-10 Xeon guest, where a loop without the
// copies measured 600-630 throughout); an asm round inside a C++ loop had GCC store the array to
// the stack every round. The sources are asm operands too, so nothing is hoisted or folded.
// Rounds are AT&T: sources, then the destination.

// clang-format off
// kChains accumulators as asm operands %[c0] .. %[c11] ("+" in-out, register constraint K)
#define DUET_PEAK_OPS(acc, K)                                                                            \
    [c0] "+" K(acc[0]), [c1] "+" K(acc[1]), [c2] "+" K(acc[2]), [c3] "+" K(acc[3]), [c4] "+" K(acc[4]),  \
    [c5] "+" K(acc[5]), [c6] "+" K(acc[6]), [c7] "+" K(acc[7]), [c8] "+" K(acc[8]), [c9] "+" K(acc[9]),  \
    [c10] "+" K(acc[10]), [c11] "+" K(acc[11])
// the asm loop: ROUND(n) for every chain n, n_rounds times (the operand [n] counts down to 0)
#define DUET_PEAK_LOOP(ROUND)                                                                            \
    "1:\n\t" ROUND("0") ROUND("1") ROUND("2") ROUND("3") ROUND("4") ROUND("5") ROUND("6") ROUND("7")      \
    ROUND("8") ROUND("9") ROUND("10") ROUND("11") "dec %[n]\n\tjnz 1b\n\t"
// clang-format on

// lane 0 of every chain into the sink (GCC's vector subscript: the array is never addressed,
// so the accumulators stay in registers)
#define DUET_PEAK_SINK(acc)                                        \
    do {                                                           \
        double t_ = 0;                                             \
        for (int c = 0; c < kChains; ++c) t_ += double(acc[c][0]); \
        g_sink = g_sink + t_;                                      \
    } while (0)

// the rounds of the two widths' probes: acc += a * b; acc += pairs of (u8 acc x s8 s) widened by ones
#define DUET_PEAK_FMA_ROUND(n) "vfmadd231ps %[b], %[a], %[c" n "]\n\t"
#define DUET_PEAK_MADDUBS_ROUND(n) \
    "vpmaddubsw %[s], %[c" n "], %[t]\n\tvpmaddwd %[o], %[t], %[t]\n\tvpaddd %[t], %[c" n "], %[c" n "]\n\t"

__attribute__((target("avx2,fma"))) double run_f32_avx2(int64_t iters) {
    __m256 acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(float(c) * 1e-3f);
    const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-4f);
    iters = std::max<int64_t>(1, iters);
    int64_t n = iters;
    __asm__(DUET_PEAK_LOOP(DUET_PEAK_FMA_ROUND) : [n] "+r"(n), DUET_PEAK_OPS(acc, "x") : [a] "x"(a), [b] "x"(b));
    DUET_PEAK_SINK(acc);
    return double(iters) * kChains * 8 * 2;
}

__attribute__((target("avx512f"))) double run_f32_avx512(int64_t iters) {
    __m512 acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(float(c) * 1e-3f);
    const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-4f);
    iters = std::max<int64_t>(1, iters);
    int64_t n = iters;
    __asm__(DUET_PEAK_LOOP(DUET_PEAK_FMA_ROUND) : [n] "+r"(n), DUET_PEAK_OPS(acc, "v") : [a] "v"(a), [b] "v"(b));
    DUET_PEAK_SINK(acc);
    return double(iters) * kChains * 16 * 2;
}

// int8 without VNNI: u8 x s8 pairs to i16 (vpmaddubsw), pairs of i16 to i32 (vpmaddwd by
// ones), accumulate (vpaddd): 32 multiply-adds per ymm sequence. The accumulator is also the
// unsigned operand of the next round, so the three instructions form one dependency chain;
// every chain reuses one temporary register, which renaming makes independent (16 ymm
// registers hold 12 accumulators, the two sources and it).
__attribute__((target("avx2"))) double run_int8_avx2(int64_t iters) {
    __m256i acc[kChains], t;
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_epi32(c);
    const __m256i s = _mm256_set1_epi8(3), ones = _mm256_set1_epi16(1);
    iters = std::max<int64_t>(1, iters);
    int64_t n = iters;
    __asm__(DUET_PEAK_LOOP(DUET_PEAK_MADDUBS_ROUND)
            : [n] "+r"(n), DUET_PEAK_OPS(acc, "x"), [t] "=&x"(t)
            : [s] "x"(s), [o] "x"(ones));
    DUET_PEAK_SINK(acc);
    return double(iters) * kChains * 32 * 2;
}

__attribute__((target("avx512f,avx512bw"))) double run_int8_avx512bw(int64_t iters) {
    __m512i acc[kChains], t;
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_epi32(c);
    const __m512i s = _mm512_set1_epi8(3), ones = _mm512_set1_epi16(1);
    iters = std::max<int64_t>(1, iters);
    int64_t n = iters;
    __asm__(DUET_PEAK_LOOP(DUET_PEAK_MADDUBS_ROUND)
            : [n] "+r"(n), DUET_PEAK_OPS(acc, "v"), [t] "=&v"(t)
            : [s] "v"(s), [o] "v"(ones));
    DUET_PEAK_SINK(acc);
    return double(iters) * kChains * 64 * 2;
}

// acc += u8 a . s8 b, 4 byte pairs per i32 lane
__attribute__((target("avx512f,avx512vnni"))) double run_int8_vnni(int64_t iters) {
    __m512i acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_epi32(c);
    const __m512i a = _mm512_set1_epi8(5), b = _mm512_set1_epi8(3);
#define ROUND(n) "vpdpbusd %[b], %[a], %[c" n "]\n\t"
    iters = std::max<int64_t>(1, iters);
    int64_t n = iters;
    __asm__(DUET_PEAK_LOOP(ROUND) : [n] "+r"(n), DUET_PEAK_OPS(acc, "v") : [a] "v"(a), [b] "v"(b));
#undef ROUND
    DUET_PEAK_SINK(acc);
    return double(iters) * kChains * 64 * 2;
}

// The q8_0 tile's mix (gemm_vnni.inc, 4 x 3 accumulators) with its registers: each round is one
// 32-block; the 12 i32 sums (zmm0-11) restart from a load, take 8 vpdpbusd each (sources zmm24,
// zmm25) and are folded into 12 f32 sums (zmm12-23): vcvtdq2ps, vmulps of the two scales (zmm26,
// zmm27), FMA. The tile's weight and x loads are left out (register sources), so this is its
// register-only ceiling. Fixed registers: 24 accumulators as operands would pass asm's 30.
__attribute__((target("avx512f,avx512vnni"))) double run_int8_vnni_q8_mix(int64_t iters) {
    alignas(64) int32_t start[16];
    alignas(64) float scales[2][16], sums[16];
    for (int l = 0; l < 16; ++l) {
        start[l] = l;
        scales[0][l] = 1e-3f;  // normal products and sums: no microcode assists
        scales[1][l] = 1e-6f;
    }
    const __m512i a = _mm512_set1_epi8(5), b = _mm512_set1_epi8(3);
// clang-format off
#define DOT(n) "vpdpbusd %%zmm25, %%zmm24, %%zmm" n "\n\t"
#define CHAIN(n) "vmovdqa32 %[start], %%zmm" n "\n\t" DOT(n) DOT(n) DOT(n) DOT(n) DOT(n) DOT(n) DOT(n) DOT(n)
#define FOLD(n, s)                                  \
    "vcvtdq2ps %%zmm" n ", %%zmm" n "\n\t"           \
    "vmulps %%zmm26, %%zmm27, %%zmm28\n\t"           \
    "vfmadd231ps %%zmm28, %%zmm" n ", %%zmm" s "\n\t"
    iters = std::max<int64_t>(1, iters);
    int64_t n = iters;
    __asm__ volatile(
        "vmovdqa64 %[a], %%zmm24\n\tvmovdqa64 %[b], %%zmm25\n\t"
        "vmovaps %[dw], %%zmm26\n\tvmovaps %[dx], %%zmm27\n\t"
        "vxorps %%zmm12, %%zmm12, %%zmm12\n\tvxorps %%zmm13, %%zmm13, %%zmm13\n\tvxorps %%zmm14, %%zmm14, %%zmm14\n\t"
        "vxorps %%zmm15, %%zmm15, %%zmm15\n\tvxorps %%zmm16, %%zmm16, %%zmm16\n\tvxorps %%zmm17, %%zmm17, %%zmm17\n\t"
        "vxorps %%zmm18, %%zmm18, %%zmm18\n\tvxorps %%zmm19, %%zmm19, %%zmm19\n\tvxorps %%zmm20, %%zmm20, %%zmm20\n\t"
        "vxorps %%zmm21, %%zmm21, %%zmm21\n\tvxorps %%zmm22, %%zmm22, %%zmm22\n\tvxorps %%zmm23, %%zmm23, %%zmm23\n\t"
        "1:\n\t" CHAIN("0") CHAIN("1") CHAIN("2") CHAIN("3") CHAIN("4") CHAIN("5") CHAIN("6") CHAIN("7") CHAIN("8")
        CHAIN("9") CHAIN("10") CHAIN("11")
        FOLD("0", "12") FOLD("1", "13") FOLD("2", "14") FOLD("3", "15") FOLD("4", "16") FOLD("5", "17")
        FOLD("6", "18") FOLD("7", "19") FOLD("8", "20") FOLD("9", "21") FOLD("10", "22") FOLD("11", "23")
        "dec %[n]\n\tjnz 1b\n\t"
        "vaddps %%zmm12, %%zmm23, %%zmm12\n\tvmovups %%zmm12, %[sums]\n\t"
        : [n] "+r"(n), [sums] "=m"(sums)
        : [a] "v"(a), [b] "v"(b), [dw] "m"(scales[0]), [dx] "m"(scales[1]), [start] "m"(start)
        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
          "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24",
          "xmm25", "xmm26", "xmm27", "xmm28");
// clang-format on
#undef FOLD
#undef CHAIN
#undef DOT
    g_sink = g_sink + double(sums[0]);
    return double(iters) * kChains * 8 * 64 * 2;
}

__attribute__((target("avx512f,avx512bf16"))) double run_bf16(int64_t iters) {
    __m512 acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(float(c) * 1e-3f);
    const __m512i a = _mm512_set1_epi16(0x3f80), b = _mm512_set1_epi16(0x3a80);  // bf16 1.0 and ~0.001
#define ROUND(n) "vdpbf16ps %[b], %[a], %[c" n "]\n\t"
    iters = std::max<int64_t>(1, iters);
    int64_t n = iters;
    __asm__(DUET_PEAK_LOOP(ROUND) : [n] "+r"(n), DUET_PEAK_OPS(acc, "v") : [a] "v"(a), [b] "v"(b));
#undef ROUND
    DUET_PEAK_SINK(acc);
    return double(iters) * kChains * 32 * 2;
}
#undef DUET_PEAK_MADDUBS_ROUND
#undef DUET_PEAK_FMA_ROUND
#undef DUET_PEAK_SINK
#undef DUET_PEAK_LOOP
#undef DUET_PEAK_OPS
#endif

struct Spec {
    const char* name;
    const char* instruction;
    const char* unit;
    bool (*available)();
    double (*run)(int64_t);
};

bool has_avx2() { return cpu_features().avx2 && cpu_features().fma; }
bool has_avx512() { return cpu_features().avx512f; }
bool has_avx512bw() { return cpu_features().avx512f && cpu_features().avx512bw; }
bool has_vnni() { return cpu_features().avx512f && cpu_features().avx512_vnni; }
bool has_bf16() { return cpu_features().avx512f && cpu_features().avx512_bf16; }

Spec spec(PeakKind kind) {
#ifdef DUET_PEAK_X86
    switch (kind) {
        case PeakKind::F32_FMA_AVX2:
            return {"f32 fma avx2", "vfmadd231ps ymm", "GFLOP/s", has_avx2, run_f32_avx2};
        case PeakKind::F32_FMA_AVX512:
            return {"f32 fma avx512", "vfmadd231ps zmm", "GFLOP/s", has_avx512, run_f32_avx512};
        case PeakKind::INT8_AVX2:
            return {"int8 avx2", "vpmaddubsw+vpmaddwd+vpaddd ymm", "GOP/s", has_avx2, run_int8_avx2};
        case PeakKind::INT8_AVX512BW:
            return {"int8 avx512bw", "vpmaddubsw+vpmaddwd+vpaddd zmm", "GOP/s", has_avx512bw, run_int8_avx512bw};
        case PeakKind::INT8_VNNI:
            return {"int8 vnni", "vpdpbusd zmm", "GOP/s", has_vnni, run_int8_vnni};
        case PeakKind::BF16_AVX512:
            return {"bf16 avx512", "vdpbf16ps zmm", "GFLOP/s", has_bf16, run_bf16};
        case PeakKind::INT8_VNNI_Q8_MIX:
            return {"int8 vnni q8_0 mix", "8 vpdpbusd+cvt+mul+fma zmm", "GOP/s", has_vnni, run_int8_vnni_q8_mix};
        case PeakKind::COUNT:
            break;
    }
#endif
    (void)kind;
    return {"?", "?", "?", [] { return false; }, nullptr};
}

}  // namespace

PeakProbe measure_peak(PeakKind kind, double seconds, int repetitions) {
    const Spec s = spec(kind);
    PeakProbe p{kind, s.name, s.instruction, s.unit};
    if (!s.run || !s.available()) return p;
    p.available = true;
    // calibrate the iteration count to about `seconds` of CPU time
    int64_t iters = 1 << 14;
    for (;;) {
        const double t0 = thread_cpu_s();
        s.run(iters);
        const double dt = thread_cpu_s() - t0;
        if (dt > seconds * 0.25 || iters > (int64_t(1) << 40)) {
            iters = std::max<int64_t>(1, int64_t(double(iters) * seconds / std::max(dt, 1e-6)));
            break;
        }
        iters *= 4;
    }
    for (int r = 0; r < std::max(1, repetitions); ++r) {
        const double t0 = thread_cpu_s();
        const double ops = s.run(iters);
        const double dt = thread_cpu_s() - t0;
        if (dt > 0) p.ops_per_s = std::max(p.ops_per_s, ops / dt);
    }
    return p;
}

PeakKind int8_peak_kind_for_active_table() {
    // the same condition as kernels.cpp table_for()
    if (std::strcmp(kernel_isa(), "avx512") == 0)
        return has_vnni_table_extensions(cpu_features()) ? PeakKind::INT8_VNNI : PeakKind::INT8_AVX512BW;
    return PeakKind::INT8_AVX2;
}

PeakKind float_peak_kind_for_active_table() {
    return std::strcmp(kernel_isa(), "avx512") == 0 ? PeakKind::F32_FMA_AVX512 : PeakKind::F32_FMA_AVX2;
}

}  // namespace duet::kernels
