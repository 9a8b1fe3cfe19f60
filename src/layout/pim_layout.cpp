#include "layout/pim_layout.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/error.h"

namespace duet::layout {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

void validate(const PimLayoutParams& p, const MemoryOrganisation& org) {
    if (p.alignment_bits != 128 && p.alignment_bits != 256)
        fail("[pim] alignment = {} is not allowed (allowed: 128, 256)", p.alignment_bits);
    if (p.block_size_kb < 1 || p.block_size_kb > 4096)
        fail("[reorder] block_size_kb = {} is out of range (allowed: 1..4096)", p.block_size_kb);
    if (p.index_granularity < 1 || p.index_granularity > 65536)
        fail("[memory] index_granularity = {} is out of range (allowed: 1..65536)", p.index_granularity);
    if (p.prefetch_depth < 0 || p.prefetch_depth > 64)
        fail("[reorder] prefetch_depth = {} is out of range (allowed: 0..64)", p.prefetch_depth);
    if (!(p.index_ratio_limit > 0 && p.index_ratio_limit <= 1))
        fail("[reorder] index_ratio_limit = {} is out of range (allowed: greater than 0, at most 1)",
             p.index_ratio_limit);
    if (org.channels < 1 || org.banks < 1)
        fail("memory organisation: channels = {}, banks = {} (allowed: at least 1 each)", org.channels, org.banks);
    if (org.row_bytes > 0 && org.base_address_bytes % uint64_t(org.row_bytes) != 0)
        fail("memory organisation: base_address_bytes = {} is not a multiple of row_bytes = {}",
             org.base_address_bytes, org.row_bytes);
    const int granule_bytes = p.alignment_bits / 8;
    if (org.row_bytes < granule_bytes || org.row_bytes % granule_bytes != 0)
        fail("memory organisation: row_bytes = {} is not a positive multiple of the {}-byte granule "
             "([pim] alignment = {})",
             org.row_bytes, granule_bytes, p.alignment_bits);
}

}  // namespace

int pim_elem_bytes(DType dtype, const char* what) {
    switch (dtype) {
        case DType::F32: return 4;
        case DType::F16:
        case DType::BF16: return 2;
        case DType::I8:
        case DType::Q8_0:
        case DType::Q4_0:
        case DType::Q5_0:
        case DType::Q4_K:
        case DType::Q6_K: return 1;  // quantised rows are laid out as bytes, blocks kept whole
        default:
            fail("{}: dtype {} is not supported by the PIM layout (allowed: f32, f16, bf16, i8, q8_0, q4_0, q5_0, q4_k, "
                 "q6_k)",
                 what, dtype_name(dtype));
    }
}

int64_t PimLayoutPlan::block_rows(int64_t rb) const {
    return std::min(rows_per_block, n_rows - rb * rows_per_block);
}

int64_t PimLayoutPlan::block_kelems(int64_t kb) const { return std::min(kb_elems, k_pad - kb * kb_elems); }

uint64_t PimLayoutPlan::block_offset(int64_t rb, int64_t kb) const {
    const uint64_t row_block_start = uint64_t(rb) * uint64_t(rows_per_block) * uint64_t(k_pad) * elem_bytes;
    return row_block_start + uint64_t(block_rows(rb)) * uint64_t(kb) * uint64_t(kb_elems) * elem_bytes;
}

void check_index_ratio(uint64_t index_bytes, uint64_t weight_bytes, const PimLayoutParams& params) {
    if (weight_bytes == 0) return;
    const double ratio = double(index_bytes) / double(weight_bytes);
    if (ratio > params.index_ratio_limit)
        fail("block index is {:.1f} % of the weights, above [reorder] index_ratio_limit = {}: raise [memory] "
             "index_granularity (now {}) or [reorder] block_size_kb (now {})",
             ratio * 100.0, params.index_ratio_limit, params.index_granularity, params.block_size_kb);
}

PimLayoutPlan plan_pim_layout(int64_t n_rows, int64_t k, DType dtype, const PimLayoutParams& params,
                              const MemoryOrganisation& org, bool check_ratio) {
    return plan_pim_layout_atoms(n_rows, k, dtype, 0, params, org, check_ratio);
}

PimLayoutPlan plan_pim_int8(int64_t n_rows, int64_t k, const PimLayoutParams& params, const MemoryOrganisation& org,
                            bool check_ratio) {
    if (k % kInt8ScaleBlock != 0)
        fail("PIM layout: k = {} is not a multiple of the {}-quant scale block of an int8 (q8_0) matrix", k,
             kInt8ScaleBlock);
    return plan_pim_layout_atoms(n_rows, k, DType::I8, kInt8ScaleBlock, params, org, check_ratio);
}

PimLayoutPlan plan_pim_layout_atoms(int64_t n_rows, int64_t k, DType dtype, int64_t atom_elems,
                                    const PimLayoutParams& params, const MemoryOrganisation& org, bool check_ratio) {
    validate(params, org);
    if (n_rows < 1 || k < 1 || n_rows > INT32_MAX || k > INT32_MAX)
        fail("PIM layout: matrix shape [{}][{}] is not allowed (allowed: 1..2^31-1 in each dimension)", n_rows, k);
    PimLayoutPlan p;
    p.params = params;
    p.org = org;
    p.dtype = dtype;
    p.n_rows = n_rows;
    p.elem_bytes = pim_elem_bytes(dtype, "PIM layout");
    p.k_dtype_elems = k;
    if (dtype_is_quantized(dtype)) {
        const DTypeInfo& q = dtype_info(dtype);
        if (k % q.block_elems != 0)
            fail("PIM layout: k = {} is not a multiple of the {} block of {} elements", k, dtype_name(dtype),
                 q.block_elems);
        k = int64_t(row_bytes(dtype, k));  // the layout's elements are the row's bytes
        p.atom_elems = q.block_bytes;
    } else if (atom_elems > 0) {
        p.atom_elems = atom_elems;
    }
    p.k = k;
    p.granule_bytes = params.alignment_bits / 8;
    p.granule_elems = p.granule_bytes / p.elem_bytes;
    p.k_pad = ceil_div(k, p.granule_elems) * p.granule_elems;
    p.granules_per_row = p.k_pad / p.granule_elems;
    const int64_t block_bytes = int64_t(params.block_size_kb) * 1024;
    // A k-block is whole granules and whole quantised blocks (atoms): a multiple of their lcm.
    const int64_t step = std::lcm(int64_t(p.granule_elems), p.atom_elems);
    p.kb_elems = std::min(p.k_pad, std::max(step, std::min(org.row_bytes, block_bytes) / p.elem_bytes / step * step));
    p.rows_per_block = std::max<int64_t>(1, block_bytes / (p.kb_elems * p.elem_bytes));
    p.n_row_blocks = ceil_div(n_rows, p.rows_per_block);
    p.n_k_blocks = ceil_div(p.k_pad, p.kb_elems);
    p.n_blocks = p.n_row_blocks * p.n_k_blocks;
    p.weight_bytes = uint64_t(n_rows) * uint64_t(k) * p.elem_bytes;
    p.base_bytes = uint64_t(n_rows) * uint64_t(p.k_pad) * p.elem_bytes;
    p.padding_bytes = p.base_bytes - p.weight_bytes;

    // Blocks come in at most four shapes (full or tail along rows and along k): count each once.
    uint64_t index_bytes = 0;
    const int64_t rbs[2] = {0, p.n_row_blocks - 1}, kbs[2] = {0, p.n_k_blocks - 1};
    const int64_t rb_count[2] = {p.n_row_blocks - 1, 1}, kb_count[2] = {p.n_k_blocks - 1, 1};
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) {
            const int64_t count = rb_count[i] * kb_count[j];
            if (count == 0) continue;
            const int64_t granules = p.block_rows(rbs[i]) * (p.block_kelems(kbs[j]) / p.granule_elems);
            index_bytes += uint64_t(count) *
                           (kDescriptorBytes + kAnchorBytes * uint64_t(ceil_div(granules, params.index_granularity)));
        }
    p.index_bytes = index_bytes;
    p.index_ratio = double(index_bytes) / double(p.weight_bytes);
    const uint64_t units = uint64_t(org.channels) * uint64_t(org.banks);
    const uint64_t first_slot = org.base_address_bytes / uint64_t(org.row_bytes);
    const uint64_t last_slot = (org.base_address_bytes + p.base_bytes - 1) / uint64_t(org.row_bytes);
    p.dram_rows_per_bank = int64_t(last_slot / units - first_slot / units + 1);
    if (check_ratio) {
        // A matrix smaller than one descriptor and one anchor can never meet the limit on its
        // own; no knob helps, so say that instead of naming knobs.
        const double floor_ratio = double(kDescriptorBytes + kAnchorBytes) / double(p.weight_bytes);
        if (p.index_ratio > params.index_ratio_limit && floor_ratio > params.index_ratio_limit)
            fail("PIM layout: matrix [{}][{}] {} ({} bytes) is too small for its own block index (at least {} bytes, "
                 "above [reorder] index_ratio_limit = {}); check the limit on the model's totals instead",
                 n_rows, k, dtype_name(dtype), p.weight_bytes, kDescriptorBytes + kAnchorBytes,
                 params.index_ratio_limit);
        check_index_ratio(p.index_bytes, p.weight_bytes, params);
    }
    return p;
}

uint64_t pim_offset(const PimLayoutPlan& p, int64_t row, int64_t col) {
    DUET_CHECK(row >= 0 && row < p.n_rows && col >= 0 && col < p.k_pad, "element ({}, {}) outside [{}][{}]", row,
               col, p.n_rows, p.k_pad);
    const int64_t rb = row / p.rows_per_block, kb = col / p.kb_elems;
    const int64_t q = row - rb * p.rows_per_block, c = col - kb * p.kb_elems;
    return p.block_offset(rb, kb) + uint64_t(q * p.block_kelems(kb) + c) * p.elem_bytes;
}

DramSlot slot_of_offset(const PimLayoutPlan& p, uint64_t offset) {
    const uint64_t s = (p.org.base_address_bytes + offset) / uint64_t(p.org.row_bytes);
    DramSlot d;
    d.channel = int(s % uint64_t(p.org.channels));
    d.bank = int((s / uint64_t(p.org.channels)) % uint64_t(p.org.banks));
    d.row = int64_t(s / (uint64_t(p.org.channels) * uint64_t(p.org.banks)));
    d.column_bytes = int64_t(offset % uint64_t(p.org.row_bytes));
    return d;
}

DramSlot slot_of_granule(const PimLayoutPlan& p, int64_t row, int64_t granule) {
    return slot_of_offset(p, pim_offset(p, row, granule * p.granule_elems));
}

uint64_t slot_base_offset(const PimLayoutPlan& p, int channel, int bank, int64_t row) {
    DUET_CHECK(channel >= 0 && channel < p.org.channels && bank >= 0 && bank < p.org.banks && row >= 0,
               "slot ({}, {}, {}) outside {} channels x {} banks", channel, bank, row, p.org.channels, p.org.banks);
    const uint64_t slot = (uint64_t(row) * uint64_t(p.org.banks) + uint64_t(bank)) * uint64_t(p.org.channels) +
                          uint64_t(channel);
    DUET_CHECK(slot * uint64_t(p.org.row_bytes) >= p.org.base_address_bytes, "slot ({}, {}, {}) lies before the base",
               channel, bank, row);
    return slot * uint64_t(p.org.row_bytes) - p.org.base_address_bytes;
}

PimElement element_of_offset(const PimLayoutPlan& p, uint64_t offset) {
    DUET_CHECK(offset < p.base_bytes && offset % uint64_t(p.elem_bytes) == 0, "offset {} outside base of {} bytes",
               offset, p.base_bytes);
    const uint64_t e = uint64_t(p.elem_bytes);
    const uint64_t row_block_bytes = uint64_t(p.rows_per_block) * uint64_t(p.k_pad) * e;
    const int64_t rb = int64_t(offset / row_block_bytes);
    const uint64_t in_rb = offset - uint64_t(rb) * row_block_bytes;
    const int64_t rows = p.block_rows(rb);
    // Every k-block but the last is kb_elems wide, so the division finds the block.
    const int64_t kb = std::min<int64_t>(int64_t(in_rb / (uint64_t(rows) * uint64_t(p.kb_elems) * e)), p.n_k_blocks - 1);
    const uint64_t in_block = in_rb - uint64_t(rows) * uint64_t(kb) * uint64_t(p.kb_elems) * e;
    const int64_t width = p.block_kelems(kb);
    PimElement el;
    el.row = p.block_row0(rb) + int64_t(in_block / (uint64_t(width) * e));
    el.col = p.block_k0(kb) + int64_t((in_block / e) % uint64_t(width));
    el.padding = el.col >= p.k;
    return el;
}

void to_pim(const void* nd, const PimLayoutPlan& p, uint8_t* base) {
    const auto* src = static_cast<const uint8_t*>(nd);
    std::memset(base, 0, p.base_bytes);
    const size_t e = size_t(p.elem_bytes);
    for (int64_t r = 0; r < p.n_rows; ++r)
        for (int64_t kb = 0; kb < p.n_k_blocks; ++kb) {
            const int64_t c0 = p.block_k0(kb);
            const int64_t valid = std::min(p.block_kelems(kb), p.k - c0);
            if (valid <= 0) continue;
            std::memcpy(base + pim_offset(p, r, c0), src + (size_t(r) * size_t(p.k) + size_t(c0)) * e, size_t(valid) * e);
        }
}

std::vector<uint8_t> to_pim(const void* nd, const PimLayoutPlan& p) {
    std::vector<uint8_t> base(p.base_bytes);
    to_pim(nd, p, base.data());
    return base;
}

std::vector<uint8_t> from_pim(const uint8_t* base, uint64_t base_size, const PimLayoutPlan& p) {
    if (base_size != p.base_bytes)
        fail("from_pim: base of {} bytes does not match the plan's {} bytes for [{}][{}] {}", base_size, p.base_bytes,
             p.n_rows, p.k, dtype_name(p.dtype));
    const size_t e = size_t(p.elem_bytes);
    std::vector<uint8_t> nd(p.weight_bytes);
    for (int64_t r = 0; r < p.n_rows; ++r)
        for (int64_t kb = 0; kb < p.n_k_blocks; ++kb) {
            const int64_t c0 = p.block_k0(kb);
            const int64_t valid = std::min(p.block_kelems(kb), p.k - c0);
            if (valid <= 0) continue;
            std::memcpy(nd.data() + (size_t(r) * size_t(p.k) + size_t(c0)) * e, base + pim_offset(p, r, c0), size_t(valid) * e);
        }
    return nd;
}

PimBlockIndex build_block_index(const PimLayoutPlan& p) {
    PimBlockIndex idx;
    idx.n_rows = p.n_rows;
    idx.k = p.k;
    idx.elem_bytes = p.elem_bytes;
    idx.granule_bytes = p.granule_bytes;
    idx.granule_elems = p.granule_elems;
    idx.index_granularity = p.params.index_granularity;
    idx.rows_per_block = p.rows_per_block;
    idx.kb_granules = p.kb_elems / p.granule_elems;
    idx.n_k_blocks = p.n_k_blocks;
    idx.blocks.reserve(size_t(p.n_blocks));
    idx.anchor_begin.reserve(size_t(p.n_blocks) + 1);
    for (int64_t rb = 0; rb < p.n_row_blocks; ++rb)
        for (int64_t kb = 0; kb < p.n_k_blocks; ++kb) {
            PimBlockDescriptor d;
            d.offset = p.block_offset(rb, kb);
            d.row0 = uint32_t(p.block_row0(rb));
            d.granule0 = uint32_t(p.block_k0(kb) / p.granule_elems);
            d.rows = uint32_t(p.block_rows(rb));
            d.granules_per_row = uint32_t(p.block_kelems(kb) / p.granule_elems);
            idx.blocks.push_back(d);
            idx.anchor_begin.push_back(uint32_t(idx.anchors.size()));
            const uint64_t granules = uint64_t(d.rows) * d.granules_per_row;
            for (uint64_t g = 0; g < granules; g += uint64_t(idx.index_granularity))
                idx.anchors.push_back(uint32_t(g * uint64_t(p.granule_bytes)));
        }
    idx.anchor_begin.push_back(uint32_t(idx.anchors.size()));
    DUET_CHECK(idx.bytes() == p.index_bytes, "index bytes {} != planned {}", idx.bytes(), p.index_bytes);
    return idx;
}

int64_t read_tile_via_index(const uint8_t* base, uint64_t base_size, const PimBlockIndex& idx, int64_t row0,
                            int64_t rows, int64_t col0, int64_t cols, void* out) {
    if (row0 < 0 || rows < 1 || col0 < 0 || cols < 1 || row0 + rows > idx.n_rows || col0 + cols > idx.k)
        fail("read_tile_via_index: tile rows [{}, {}) x cols [{}, {}) is outside the matrix [{}][{}]", row0,
             row0 + rows, col0, col0 + cols, idx.n_rows, idx.k);
    auto* dst = static_cast<uint8_t*>(out);
    const int64_t ge = idx.granule_elems, e = idx.elem_bytes;
    const int64_t kb_elems = idx.kb_granules * ge;
    int64_t segments = 0;
    for (int64_t r = row0; r < row0 + rows; ++r) {
        const int64_t rb = r / idx.rows_per_block;
        int64_t c = col0;
        while (c < col0 + cols) {
            const int64_t b = rb * idx.n_k_blocks + c / kb_elems;
            const PimBlockDescriptor& d = idx.blocks[size_t(b)];
            const int64_t q = r - int64_t(d.row0);
            const int64_t gib = q * int64_t(d.granules_per_row) + (c / ge - int64_t(d.granule0));
            const int64_t a = gib / idx.index_granularity;
            const uint64_t off = d.offset + idx.anchors[idx.anchor_begin[size_t(b)] + size_t(a)] +
                                 uint64_t(gib - a * idx.index_granularity) * uint64_t(idx.granule_bytes) +
                                 uint64_t(c % ge) * uint64_t(e);
            const int64_t block_end = (int64_t(d.granule0) + int64_t(d.granules_per_row)) * ge;
            const int64_t run = std::min(col0 + cols, block_end) - c;
            if (off + uint64_t(run * e) > base_size)
                fail("read_tile_via_index: base of {} bytes is too small for the index (needs {})", base_size,
                     off + uint64_t(run * e));
            std::memcpy(dst + ((r - row0) * cols + (c - col0)) * e, base + off, size_t(run * e));
            ++segments;
            c += run;
        }
    }
    return segments;
}

}  // namespace duet::layout
