#pragma once
// Q8_0 as an int8 PIM matrix with its block scales (config.toml [pim] precision = int8). A Q8_0
// row is blocks of {f16 scale d, 32 int8 quants q}, value = d * q. An int8 PIM unit multiplies
// the quants in its lanes; the scales do not belong in the lanes: AMD GeniePIM's blocked-format
// configuration (AMDResearch/AMDGeniePIM Inputs/Configs/sf_config.in: OPERAND_SIZE 8, BLOCK_SIZE
// 32, SCALE_FACTOR_OPERAND_SIZE 16, ACCUMULATION_OPERAND_SIZE 32, scale factors held in a
// register and applied by the unit, ASSUME_MATRIX_SCALE_FACTORS_SMART_PACKING: "scale factors in
// same or adjacent DRAM rows") keeps them next to the matrix elements, not interleaved with them.
// So the quants become an int8 matrix in the PIM layout (plan_pim_int8: element by element,
// every k-block whole 32-quant blocks) and the scales a separate row-major [n][k / 32] f16 array
// held beside it. split_q8_0 / join_q8_0 are exact inverses.
// Thread safety: pure functions.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace duet::layout {

struct Int8Split {
    std::vector<int8_t> quants;    // [n][k], row-major (the ND matrix to_pim lays out)
    std::vector<uint16_t> scales;  // [n][k / 32] f16 bits
};

// rows: n Q8_0 rows of k elements (k a multiple of 32), row_stride_bytes apart.
Int8Split split_q8_0(const void* rows, size_t row_stride_bytes, int64_t n, int64_t k);
// The Q8_0 rows again, contiguous [n][k / 32 blocks of 34 bytes].
std::vector<uint8_t> join_q8_0(const int8_t* quants, const uint16_t* scales, int64_t n, int64_t k);

}  // namespace duet::layout
