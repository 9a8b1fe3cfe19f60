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
    bool avx512_vnni = false, avx512_bf16 = false, amx_tile = false;
};

const CpuFeatures& cpu_features();  // what the hardware reports (and the OS enables)
IsaLevel isa_level();               // best level supported, capped by DUET_ISA
const char* isa_name(IsaLevel level);
std::string cpu_feature_string();   // "avx2 fma f16c avx512f ..." for logs and `duet doctor`

}  // namespace duet
