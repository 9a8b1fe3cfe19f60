// The compute-peak probes (kernels/peak.h): a probe runs exactly when this CPU has its ISA and
// then reports a positive rate; otherwise it says "not available" with a zero rate, never an
// estimate. No timing thresholds (the machine may be shared): only availability and sign.
#include "kernels/peak.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/cpu_features.h"
#include "kernels/kernels.h"

namespace duet::kernels {
namespace {

bool cpu_has(PeakKind k) {
    const auto& f = cpu_features();
    switch (k) {
        case PeakKind::F32_FMA_AVX2: return f.avx2 && f.fma;
        case PeakKind::INT8_AVX2: return f.avx2 && f.fma;
        case PeakKind::F32_FMA_AVX512: return f.avx512f;
        case PeakKind::INT8_AVX512BW: return f.avx512f && f.avx512bw;
        case PeakKind::INT8_VNNI: return f.avx512f && f.avx512_vnni;
        case PeakKind::INT8_VNNI_Q8_MIX: return f.avx512f && f.avx512_vnni;
        case PeakKind::BF16_AVX512: return f.avx512f && f.avx512_bf16;
        case PeakKind::COUNT: break;
    }
    return false;
}

TEST(Peak, EveryProbeRunsExactlyWhenTheCpuHasItsIsa) {
    for (int i = 0; i < int(PeakKind::COUNT); ++i) {
        const auto kind = PeakKind(i);
        const PeakProbe p = measure_peak(kind, 0.002, 1);
        EXPECT_EQ(p.kind, kind);
        EXPECT_EQ(p.available, cpu_has(kind)) << p.name;
        if (p.available)
            EXPECT_GT(p.ops_per_s, 0.0) << p.name;
        else
            EXPECT_EQ(p.ops_per_s, 0.0) << p.name << " must not report a made-up number";
        EXPECT_TRUE(std::strcmp(p.unit, "GFLOP/s") == 0 || std::strcmp(p.unit, "GOP/s") == 0) << p.unit;
    }
}

TEST(Peak, GemmMixesFollowTheActiveTable) {
    const auto& f = cpu_features();
    const bool avx512 = std::strcmp(kernel_isa(), "avx512") == 0;
    EXPECT_EQ(float_peak_kind_for_active_table(), avx512 ? PeakKind::F32_FMA_AVX512 : PeakKind::F32_FMA_AVX2);
    const PeakKind want = !avx512                                 ? PeakKind::INT8_AVX2
                          : has_vnni_table_extensions(f) ? PeakKind::INT8_VNNI
                                                                  : PeakKind::INT8_AVX512BW;
    EXPECT_EQ(int8_peak_kind_for_active_table(), want);
}

}  // namespace
}  // namespace duet::kernels
