#pragma once
// Per-ISA kernel tables, defined in avx2_kernels.cpp / avx512_kernels.cpp (compiled with
// those ISAs' flags). On builds without them (non-x86) these return nullptr. Call only
// through kernels::table_for(), which first checks the CPU.
#include "kernels/kernel_table.h"

namespace duet::kernels::cpu {

const KernelTable* avx2_table();
const KernelTable* avx512_table();    // AVX-512 F/BW/VL/DQ + VNNI + BF16 + GFNI
const KernelTable* avx512bw_table();  // AVX-512 F/BW/VL/DQ without VNNI/BF16/GFNI

}  // namespace duet::kernels::cpu
