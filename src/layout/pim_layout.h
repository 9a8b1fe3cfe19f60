#pragma once
// The PIM weight layout `row_major_128bit` and its block index (docs/design.md: one weight base
// in the PIM layout, a small index lets the NPU gather its tiles from it).
//
// Contract (every step is exact and invertible; docs/npu-and-layout-model.md has figures):
//  0. Elements. f32/f16/bf16/i8 matrices are laid out element by element. A quantised matrix
//     (q8_0, q4_0, q5_0, q4_k, q6_k) is laid out as its ggml rows of bytes: k below then counts
//     bytes (row_bytes(dtype, k_dtype_elems)), and every k-block holds whole quantised blocks
//     (atoms of block_bytes), so a kernel runs the quantised dot product on each block in place.
//  1. Granules. A matrix W[n_rows][k] is cut along k into granules of
//     `alignment_bits` (128 by default, 256 allowed) = granule_bytes; each matrix row is
//     zero-padded at its tail to a whole number of granules (k_pad elements).
//  2. Blocks (block reorder). The padded matrix is tiled into blocks of rows_per_block rows x
//     kb_elems elements, where kb_elems = min(k_pad, min(row_bytes, block_bytes) / elem_bytes
//     rounded down to a multiple of lcm(granule_elems, atom_elems), at least one such multiple;
//     atom_elems = 1 for unquantised types, 32 for plan_pim_int8) and
//     rows_per_block = max(1, block_bytes / (kb_elems * elem)).
//     Blocks at the right (k tail) and bottom (row tail) edges are narrower / shorter.
//     Blocks are stored one after another in row-block-major order (b = rb * n_k_blocks + kb),
//     each block row-major and dense, so the base holds exactly n_rows * k_pad elements:
//     the only padding is the granule tail of each row.
//  3. Interleave. Base byte offset a lives in DRAM slot s = a / row_bytes (one DRAM row of one
//     bank): channel = s % channels, bank = (s / channels) % banks, row = s / (channels * banks),
//     column byte = a % row_bytes. Consecutive DRAM-row-sized pieces thus go to every channel
//     first, then every bank, so a block's rows are spread over many PIM units. A granule never
//     straddles two slots (row_bytes is a multiple of granule_bytes).
//  4. Block index. Per block a 24-byte descriptor {u64 base offset, u32 first row, u32 first
//     granule, u32 rows, u32 granules per row} plus one u32 anchor (byte offset inside the
//     block) per `index_granularity` granules, so a DMA gather can start anywhere in a block
//     without walking it. index_ratio = index_bytes / weight_bytes (unpadded weights).
//
// Thread safety: all functions are pure; plans and indexes are immutable values.
// Units: bytes unless the name says otherwise; element counts are `_elems` or plain n/k.
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace duet::layout {

// Knobs from config.toml ([pim] alignment, [reorder] block_size_kb / index_ratio_limit,
// [memory] index_granularity). Validated by plan_pim_layout with errors naming the key.
struct PimLayoutParams {
    int alignment_bits = 128;        // [pim] alignment: 128 or 256
    int block_size_kb = 16;          // [reorder] block_size_kb: 1..4096
    int index_granularity = 64;      // [memory] index_granularity: granules per index anchor, 1..65536
    double index_ratio_limit = 0.05; // [reorder] index_ratio_limit: (0, 1]
    int prefetch_depth = 4;          // [reorder] prefetch_depth: blocks converted ahead (L1 staging)
};

// The DRAM organisation the base is interleaved over (from the memory/PIM preset).
struct MemoryOrganisation {
    int channels = 16;          // channels (or pseudo-channels) holding the base
    int banks = 16;             // banks per channel (all bank groups together)
    int64_t row_bytes = 1024;   // DRAM row (page) size; multiple of the granule
    // Where the base starts in the PIM memory's address space (a multiple of row_bytes), so that
    // several matrices can share the channels one after another; offsets stay base-relative.
    uint64_t base_address_bytes = 0;
};

struct PimLayoutPlan {
    PimLayoutParams params;
    MemoryOrganisation org;
    DType dtype = DType::F16;
    int64_t n_rows = 0, k = 0;        // k: layout elements per row (bytes for quantised dtypes)
    int64_t k_dtype_elems = 0;        // k in elements of dtype (== k unless quantised)
    int64_t atom_elems = 1;           // k-blocks hold whole atoms: the quantised block's bytes, 32 for
                                      // plan_pim_int8 (one scale's quants), else 1
    int elem_bytes = 2;
    int granule_bytes = 16, granule_elems = 8;
    int64_t k_pad = 0;                // k rounded up to a granule
    int64_t granules_per_row = 0;     // k_pad / granule_elems
    int64_t kb_elems = 0;             // width of a full k-block (elements)
    int64_t rows_per_block = 0;       // height of a full row-block
    int64_t n_row_blocks = 0, n_k_blocks = 0, n_blocks = 0;
    uint64_t weight_bytes = 0;        // n_rows * k * elem_bytes (the useful bytes)
    uint64_t base_bytes = 0;          // n_rows * k_pad * elem_bytes (what to_pim returns)
    uint64_t padding_bytes = 0;       // base_bytes - weight_bytes
    uint64_t index_bytes = 0;         // serialised block index size
    double index_ratio = 0;           // index_bytes / weight_bytes
    int64_t dram_rows_per_bank = 0;   // DRAM rows any one bank spans (first to last row touched)

    // Geometry of block b: first row, rows, first element of k, elements of k, base offset.
    int64_t block_row0(int64_t rb) const { return rb * rows_per_block; }
    int64_t block_rows(int64_t rb) const;
    int64_t block_k0(int64_t kb) const { return kb * kb_elems; }
    int64_t block_kelems(int64_t kb) const;
    uint64_t block_offset(int64_t rb, int64_t kb) const;  // byte offset of block (rb, kb) in the base
};

// Plans the layout of W[n_rows][k] (k in elements of dtype: F32, F16, BF16, I8 or a quantised
// ggml type, laid out as bytes with whole blocks per k-block, rule 0). Throws duet::Error for bad
// parameters (naming the config key) and, when check_ratio is set, for an index above
// index_ratio_limit with a message naming the knobs to raise (see check_index_ratio).
PimLayoutPlan plan_pim_layout(int64_t n_rows, int64_t k, DType dtype, const PimLayoutParams& params,
                              const MemoryOrganisation& org, bool check_ratio = true);

// The quants of a Q8_0 matrix as an int8 PIM matrix ([pim] precision = int8): W_q[n_rows][k] int8
// laid out element by element (dtype I8) with every k-block a whole number of the 32-quant blocks
// that share one scale (atom_elems = kInt8ScaleBlock), so a k-block's scales are whole. The f16
// scales live beside the base, row-major [n_rows][k / 32] (layout/pim_int8.h). k must be a
// multiple of 32 (duet::Error otherwise).
constexpr int64_t kInt8ScaleBlock = 32;
PimLayoutPlan plan_pim_int8(int64_t n_rows, int64_t k, const PimLayoutParams& params, const MemoryOrganisation& org,
                            bool check_ratio = true);
// plan_pim_layout with k-blocks made of whole atoms of atom_elems elements for an unquantised
// dtype (0: one element; quantised dtypes always use their block bytes).
PimLayoutPlan plan_pim_layout_atoms(int64_t n_rows, int64_t k, DType dtype, int64_t atom_elems,
                                    const PimLayoutParams& params, const MemoryOrganisation& org, bool check_ratio);

// Throws when index_bytes / weight_bytes > params.index_ratio_limit, e.g.
// "block index is 7.8 % of the weights, above [reorder] index_ratio_limit = 0.05: raise
//  [memory] index_granularity (now 64) or [reorder] block_size_kb (now 16)".
// Use it on model-wide totals: a single tiny matrix may exceed the limit on its own.
void check_index_ratio(uint64_t index_bytes, uint64_t weight_bytes, const PimLayoutParams& params);

// Byte offset in the base of element (row, col), col < k_pad (padding included). Inside one
// k-block a matrix row is contiguous: elements [block_k0(kb), block_k0(kb) + block_kelems(kb)) of
// row r start at pim_offset(r, block_k0(kb)), so a kernel can walk a row segment by segment.
uint64_t pim_offset(const PimLayoutPlan& plan, int64_t row, int64_t col);

// Where a base byte offset lives in DRAM (absolute: org.base_address_bytes + offset).
struct DramSlot {
    int channel = 0;
    int bank = 0;
    int64_t row = 0;            // DRAM row inside the bank
    int64_t column_bytes = 0;   // byte offset inside the DRAM row
};
DramSlot slot_of_offset(const PimLayoutPlan& plan, uint64_t offset);
// Granule g (0 <= g < granules_per_row) of matrix row `row`.
DramSlot slot_of_granule(const PimLayoutPlan& plan, int64_t row, int64_t granule);
inline int channel_of(const PimLayoutPlan& p, int64_t row, int64_t granule) { return slot_of_granule(p, row, granule).channel; }
inline int bank_of(const PimLayoutPlan& p, int64_t row, int64_t granule) { return slot_of_granule(p, row, granule).bank; }

// Inverse maps, for a PIM unit that walks its own DRAM rows:
// the base offset where DRAM row `row` of (channel, bank) starts (that slot holds this matrix only
// when the offset is in [0, base_bytes); throws-by-check when the slot lies before the base), and
// which matrix element a base offset holds.
uint64_t slot_base_offset(const PimLayoutPlan& plan, int channel, int bank, int64_t row);
struct PimElement {
    int64_t row = 0;   // matrix row
    int64_t col = 0;   // element index along k (< k_pad)
    bool padding = false;  // col >= k: a zero the layout added
};
// offset < base_bytes and a multiple of elem_bytes (checked).
PimElement element_of_offset(const PimLayoutPlan& plan, uint64_t offset);

// ND (row-major [n_rows][k], contiguous) -> PIM base of plan.base_bytes, padding zeroed.
std::vector<uint8_t> to_pim(const void* nd, const PimLayoutPlan& plan);
void to_pim(const void* nd, const PimLayoutPlan& plan, uint8_t* base_out);  // base_out: base_bytes
// Exact inverse: PIM base -> ND [n_rows][k]. Throws if base_size != plan.base_bytes.
std::vector<uint8_t> from_pim(const uint8_t* base, uint64_t base_size, const PimLayoutPlan& plan);

// The block index as the NPU reads it (sizes as serialised: 24 B per descriptor, 4 B anchor).
struct PimBlockDescriptor {
    uint64_t offset = 0;       // base byte offset of the block
    uint32_t row0 = 0;         // first matrix row
    uint32_t granule0 = 0;     // first granule along k
    uint32_t rows = 0;
    uint32_t granules_per_row = 0;
};
struct PimBlockIndex {
    int64_t n_rows = 0, k = 0;
    int elem_bytes = 2, granule_bytes = 16, granule_elems = 8;
    int index_granularity = 64;
    int64_t rows_per_block = 0, kb_granules = 0, n_k_blocks = 0;
    std::vector<PimBlockDescriptor> blocks;  // [n_blocks], row-block-major
    std::vector<uint32_t> anchor_begin;      // [n_blocks + 1]: first anchor of each block
    std::vector<uint32_t> anchors;           // byte offset inside the block of granule a * granularity
    uint64_t bytes() const { return blocks.size() * 24 + anchors.size() * 4; }
};
constexpr uint64_t kDescriptorBytes = 24;
constexpr uint64_t kAnchorBytes = 4;

PimBlockIndex build_block_index(const PimLayoutPlan& plan);

// Gathers the tile rows [row0, row0 + rows) x cols [col0, col0 + cols) (elements, inside
// [0, n_rows) x [0, k)) from the base using only the index, writing it row-major
// ([rows][cols], contiguous) to out. Returns the number of contiguous base segments read
// (what a DMA would issue). Throws duet::Error for a tile outside the matrix.
int64_t read_tile_via_index(const uint8_t* base, uint64_t base_size, const PimBlockIndex& index, int64_t row0,
                            int64_t rows, int64_t col0, int64_t cols, void* out);

// Element bytes of a dtype the layout accepts (4 for F32, 2 for F16/BF16, 1 for I8 and the
// quantised types, whose layout elements are bytes); throws otherwise.
int pim_elem_bytes(DType dtype, const char* what);

}  // namespace duet::layout
