#pragma once
// What the host CPU can run, read once with cpuid. Kernels pick their code path from this at
// start-up. DUET_ISA=scalar|avx2|avx512 in the environment caps the choice (for tests and
// for comparing paths on one machine); it can lower the level, never raise it.
#include <string>

namespace duet {

enum class IsaLevel { SCALAR = 0, AVX2 = 1, AVX512 = 2 };

struct CpuFeatures {
    bool avx2 = false, fma = false, f16c = false;
    bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
    bool avx512_vnni = false, avx512_bf16 = false, gfni = false, amx_tile = false;
};

// Whether the CPU has what the AVX-512 VNNI kernel table needs beyond AVX-512 F/BW/VL/DQ: VNNI
// (the int8 GEMM), BF16 (vdpbf16ps) and GFNI (the 4-bit decode tiles' nibble splits). Sapphire Rapids
// and Zen 4 have all three; Cascade and Cooper Lake lack GFNI and take the AVX-512BW table.
bool has_vnni_table_extensions(const CpuFeatures& f);

const CpuFeatures& cpu_features();  // what the hardware reports (and the OS enables)
IsaLevel isa_level();               // best level supported, capped by DUET_ISA
const char* isa_name(IsaLevel level);
std::string cpu_feature_string();   // "avx2 fma f16c avx512f ..." for logs and `duet doctor`

}  // namespace duet
