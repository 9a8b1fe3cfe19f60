#pragma once
// The NPU's prefill path over the shared weight base (docs/design.md): a tile of W[n_rows][k] is
// gathered from the PIM base through the block index and lands in L1 as FRACTAL_NZ, without an
// ND copy in between (what the GM->L1 DMA does; conversion_cost.h prices it). The result is the
// NZ form of the [rows][cols] tile as W stores it (the cube consumes it with transpose_b).
// Thread safety: pure function.
#include <cstdint>
#include <vector>

#include "layout/nz_format.h"
#include "layout/pim_layout.h"

namespace duet::layout {

// Throws duet::Error for a tile outside the matrix or a dtype the index was not built for.
std::vector<uint8_t> pim_tile_to_nz(const uint8_t* base, uint64_t base_size, const PimBlockIndex& index, DType dtype,
                                    int64_t row0, int64_t rows, int64_t col0, int64_t cols);

}  // namespace duet::layout
