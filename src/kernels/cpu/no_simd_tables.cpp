// Builds without x86 SIMD kernels: only the scalar reference table exists.
#include "kernels/cpu/cpu_tables.h"

namespace duet::kernels::cpu {

const KernelTable* avx2_table() { return nullptr; }
const KernelTable* avx512_table() { return nullptr; }
const KernelTable* avx512bw_table() { return nullptr; }

}  // namespace duet::kernels::cpu
