#include "core/cpu_features.h"

#include <cstdlib>
#include <cstring>

#include "core/error.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace duet {
namespace {

CpuFeatures detect() {
    CpuFeatures f;
#if defined(__x86_64__)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    const bool osxsave = c & (1u << 27);
    f.fma = c & (1u << 12);
    f.f16c = c & (1u << 29);
    uint64_t xcr0 = 0;
    if (osxsave) {
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        xcr0 = (uint64_t(hi) << 32) | lo;
    }
    const bool ymm_ok = (xcr0 & 0x6) == 0x6;
    const bool zmm_ok = (xcr0 & 0xe6) == 0xe6;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        f.avx2 = ymm_ok && (b & (1u << 5));
        f.avx512f = zmm_ok && (b & (1u << 16));
        f.avx512dq = zmm_ok && (b & (1u << 17));
        f.avx512bw = zmm_ok && (b & (1u << 30));
        f.avx512vl = zmm_ok && (b & (1u << 31));
        f.avx512_vnni = zmm_ok && (c & (1u << 11));
        f.gfni = ymm_ok && (c & (1u << 8));
        f.amx_tile = d & (1u << 24);
    }
    if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx512_bf16 = zmm_ok && (a & (1u << 5));
    f.fma = f.fma && ymm_ok;
    f.f16c = f.f16c && ymm_ok;
#endif
    return f;
}

IsaLevel detect_level() {
    const auto& f = cpu_features();
    IsaLevel level = IsaLevel::SCALAR;
    if (f.avx2 && f.fma && f.f16c) level = IsaLevel::AVX2;
    // VNNI and BF16 are optional at this level: the kernels have a table with and one without them
    if (level == IsaLevel::AVX2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq) level = IsaLevel::AVX512;
    if (const char* cap = std::getenv("DUET_ISA"); cap && *cap) {
        IsaLevel want;
        if (!std::strcmp(cap, "scalar")) want = IsaLevel::SCALAR;
        else if (!std::strcmp(cap, "avx2")) want = IsaLevel::AVX2;
        else if (!std::strcmp(cap, "avx512")) want = IsaLevel::AVX512;
        else fail("environment variable DUET_ISA='{}' is not allowed (allowed: scalar, avx2, avx512)", cap);
        if (want < level) level = want;
    }
    return level;
}

}  // namespace

bool has_vnni_table_extensions(const CpuFeatures& f) { return f.avx512_vnni && f.avx512_bf16 && f.gfni; }

const CpuFeatures& cpu_features() {
    static const CpuFeatures f = detect();
    return f;
}

IsaLevel isa_level() {
    static const IsaLevel level = detect_level();
    return level;
}

const char* isa_name(IsaLevel level) {
    switch (level) {
        case IsaLevel::SCALAR: return "scalar";
        case IsaLevel::AVX2: return "avx2";
        case IsaLevel::AVX512: return "avx512";
    }
    return "?";
}

std::string cpu_feature_string() {
    const auto& f = cpu_features();
    std::string s;
    auto add = [&](bool on, const char* name) {
        if (!on) return;
        if (!s.empty()) s += ' ';
        s += name;
    };
    add(f.avx2, "avx2");
    add(f.fma, "fma");
    add(f.f16c, "f16c");
    add(f.avx512f, "avx512f");
    add(f.avx512bw, "avx512bw");
    add(f.avx512vl, "avx512vl");
    add(f.avx512dq, "avx512dq");
    add(f.avx512_vnni, "avx512_vnni");
    add(f.avx512_bf16, "avx512_bf16");
    add(f.gfni, "gfni");
    add(f.amx_tile, "amx_tile");
    return s.empty() ? "none" : s;
}

}  // namespace duet
