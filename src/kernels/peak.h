#pragma once
// Per-core compute peaks of the instruction mixes the matmul kernels use, measured on this
// machine (issue 13): f32 FMA (ymm, zmm), int8 dot products (AVX2 and AVX-512BW
// vpmaddubsw + vpmaddwd + vpaddd, AVX-512 VNNI vpdpbusd, and the VNNI q8_0 tile's whole mix) and
// bf16 pairs (AVX-512 BF16 vdpbf16ps). Each probe runs 12 independent accumulator chains (more
// than latency x ports of every current core, so the chains never wait on each other) on one
// thread, register operands only (the q8_0 mix restarts its chains from a load, as its tile
// does), and times them by the thread's CPU time (so a probe preempted on a shared machine is not
// under-reported). A probe whose ISA this CPU lacks (cpu_features()) reports available = false
// and ops_per_s = 0: never an estimate.
// Thread safety: the functions may be called from any thread; each call runs on the caller's.

namespace duet::kernels {

// INT8_VNNI_Q8_MIX: the q8_0 / q4_0 / q5_0 VNNI tile's mix (gemm_vnni.inc): per accumulator and
// 32-block, 8 vpdpbusd and the fold's vcvtdq2ps, vmulps and FMA (ops counted: the vpdpbusd's
// only, as the GEMM counts 2 m n k); what is left of INT8_VNNI once a scale per 32 values is paid.
enum class PeakKind {
    F32_FMA_AVX2,
    F32_FMA_AVX512,
    INT8_AVX2,
    INT8_AVX512BW,
    INT8_VNNI,
    BF16_AVX512,
    INT8_VNNI_Q8_MIX,
    COUNT
};

struct PeakProbe {
    PeakKind kind;
    const char* name;         // "f32 fma avx512", "int8 vnni", ...
    const char* instruction;  // the measured sequence, e.g. "vpdpbusd zmm"
    const char* unit;         // "GFLOP/s" (f32, bf16) or "GOP/s" (int8: 2 ops per multiply-add)
    bool available = false;   // this CPU (and OS) runs the instructions
    double ops_per_s = 0;     // per core: FLOPs or int8 ops per CPU-second of one thread; 0 if unavailable
};

// Runs one probe for about `seconds` of CPU time, best of `repetitions` (>= 1) timed runs.
PeakProbe measure_peak(PeakKind kind, double seconds = 0.05, int repetitions = 3);

// The probe whose instruction mix the active kernel table uses for `int8` (q8_0 ... q6_k) or
// float (f32/f16/bf16) GEMM tiles: VNNI on the avx512 table when the CPU has it, else
// AVX-512BW or AVX2 maddubs; f32 FMA of the table's vector width.
PeakKind int8_peak_kind_for_active_table();
PeakKind float_peak_kind_for_active_table();

}  // namespace duet::kernels
