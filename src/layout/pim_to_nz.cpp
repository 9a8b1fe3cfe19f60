#include "layout/pim_to_nz.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace duet::layout {

std::vector<uint8_t> pim_tile_to_nz(const uint8_t* base, uint64_t base_size, const PimBlockIndex& idx, DType dtype,
                                    int64_t row0, int64_t rows, int64_t col0, int64_t cols) {
    if (pim_elem_bytes(dtype, "pim_tile_to_nz") != idx.elem_bytes)
        fail("pim_tile_to_nz: dtype {} has {}-byte elements but the index was built for {}-byte elements",
             dtype_name(dtype), pim_elem_bytes(dtype, "pim_tile_to_nz"), idx.elem_bytes);
    if (row0 < 0 || rows < 1 || col0 < 0 || cols < 1 || row0 + rows > idx.n_rows || col0 + cols > idx.k)
        fail("pim_tile_to_nz: tile rows [{}, {}) x cols [{}, {}) is outside the matrix [{}][{}]", row0, row0 + rows,
             col0, col0 + cols, idx.n_rows, idx.k);
    const NzShape s = nz_shape(rows, cols, dtype);
    std::vector<uint8_t> nz(s.nz_bytes(), 0);
    const int64_t ge = idx.granule_elems, e = idx.elem_bytes, kb_elems = idx.kb_granules * ge;
    for (int64_t i = 0; i < rows; ++i) {
        const int64_t r = row0 + i, rb = r / idx.rows_per_block;
        // Walk the row in pieces that stay inside one PIM block and one NZ fractal row.
        for (int64_t c = col0; c < col0 + cols;) {
            const int64_t b = rb * idx.n_k_blocks + c / kb_elems;
            const PimBlockDescriptor& d = idx.blocks[size_t(b)];
            const int64_t gib = (r - int64_t(d.row0)) * int64_t(d.granules_per_row) + (c / ge - int64_t(d.granule0));
            const int64_t a = gib / idx.index_granularity;
            const uint64_t src = d.offset + idx.anchors[idx.anchor_begin[size_t(b)] + size_t(a)] +
                                 uint64_t(gib - a * idx.index_granularity) * uint64_t(idx.granule_bytes) +
                                 uint64_t(c % ge) * uint64_t(e);
            const int64_t j = c - col0;  // column inside the tile
            const int64_t block_end = (int64_t(d.granule0) + int64_t(d.granules_per_row)) * ge;
            const int64_t fractal_end = col0 + (j / s.n0 + 1) * s.n0;
            const int64_t run = std::min({col0 + cols, block_end, fractal_end}) - c;
            if (src + uint64_t(run * e) > base_size)
                fail("pim_tile_to_nz: base of {} bytes is too small for the index (needs {})", base_size,
                     src + uint64_t(run * e));
            std::memcpy(nz.data() + nz_index(s, i, j) * uint64_t(e), base + src, size_t(run * e));
            c += run;
        }
    }
    return nz;
}

}  // namespace duet::layout
