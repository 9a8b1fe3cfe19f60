// matmul_blocked: a blocked (PIM layout) weight matrix read in place. Threads take whole row
// ranges (every weight byte is read by one thread, as in matmul). Three paths, picked per call:
//  - tiles over whole row ranges (KernelTable::matmul_blocked_carry, cpu/blocked_impl.inc) for
//    decode (m <= kCarryMaxRows): the row-major kernels run over all k-blocks of
//    a range, switching pointers at block edges or carrying their sums from block to block —
//    bit-identical to matmul, near row-major speed (docs/performance.md);
//  - split Q8_0 at prefill: joined back into Q8_0 rows for the table's matmul (the conversion the
//    NPU's GEMM needs anyway); on the scalar table: ref::matmul's arithmetic on the dequantised rows;
//  - otherwise the row-major micro-kernel on each block, the k-blocks' partial sums added in
//    order; the activations' slice of each k-block is quantised once per chunk (act_reuse_token).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/kernel_table.h"
#include "kernels/kernels.h"

namespace duet::kernels {

namespace {

// Largest m of the carried-accumulator path for unsplit weights: the decode GEMVs (the register
// tiles hold up to 4 x rows). Larger m (prefill) keeps the per-block calls, which reach the
// packed GEMM kernels of matmul.
constexpr int64_t kCarryMaxRows = 4;

// Whether every row range has the first one's k partition and each k-block but the last is a
// whole number of 16-lane vectors (the widest float vector: no scalar tail inside a row).
bool carry_fits(const BlockedWeights& w, const std::vector<int64_t>& first) {
    const int64_t nseg = first[1] - first[0];
    for (int64_t s = 0; s + 1 < nseg; ++s)
        if (w.blocks[s].kelems % 16 != 0) return false;
    for (size_t r = 1; r + 1 < first.size(); ++r) {
        if (first[r + 1] - first[r] != nseg) return false;
        for (int64_t s = 0; s < nseg; ++s) {
            const WeightBlock &a = w.blocks[first[r] + s], &b = w.blocks[s];
            if (a.k0 != b.k0 || a.kelems != b.kelems) return false;
        }
    }
    return true;
}

// Split Q8_0 at prefill (m > kCarryMaxRows on a SIMD table): the quants and their scales joined
// back into Q8_0 rows once per call, as the modelled system's PIM -> NZ conversion re-lays the
// base out before the NPU's GEMM, then the table's own matmul. So the same bits as the row-major
// file whatever GEMM the table runs: the VNNI GEMM sums a block in i32 per column where the tiles
// sum 8 lanes, so no tile over the split layout matches it. Decode (m <= kCarryMaxRows) reads the
// split layout in place (matmul_blocked_carry).
void matmul_split_joined(const KernelTable& t, const float* x, int64_t m, int64_t k, int64_t x_stride,
                         const BlockedWeights& w, float* y, int64_t y_stride, ThreadPool& pool) {
    const int64_t nb = k / 32;
    thread_local std::vector<BlockQ8_0> rows;
    rows.resize(static_cast<size_t>(w.n * nb));
    for (int64_t bi = 0; bi < w.n_blocks; ++bi) {
        const WeightBlock& b = w.blocks[bi];
        for (int64_t r = 0; r < b.rows; ++r) {
            const auto* src = static_cast<const uint8_t*>(b.data) + size_t(r) * b.row_stride_bytes;
            for (int64_t l = 0; l < b.kelems; l += 32) {
                const int64_t q = (b.k0 + l) / 32, row = b.row0 + r;
                BlockQ8_0& dst = rows[static_cast<size_t>(row * nb + q)];
                dst.d = w.scales[row * w.scale_stride + q];
                std::memcpy(dst.qs, src + l, sizeof dst.qs);
            }
        }
    }
    t.matmul(x, m, k, x_stride, rows.data(), DType::Q8_0, size_t(nb) * sizeof(BlockQ8_0), w.n, y, y_stride, pool);
}

// Split Q8_0 on the scalar table: each row dequantised as quant::dequantize_row dequantises a
// Q8_0 row (f16 scale times quant, in f32) and dotted with x in f64, as ref::matmul does.
void matmul_split_ref(const float* x, int64_t m, int64_t k, int64_t x_stride, const BlockedWeights& w,
                      const std::vector<int64_t>& first, float* y, int64_t y_stride) {
    std::vector<float> row(static_cast<size_t>(k));
    for (size_t r = 0; r + 1 < first.size(); ++r) {
        const WeightBlock& lead = w.blocks[first[r]];
        for (int64_t j = 0; j < lead.rows; ++j) {
            const int64_t wr = lead.row0 + j;
            const uint16_t* sc = w.scales + wr * w.scale_stride;
            for (int64_t b = first[r]; b < first[r + 1]; ++b) {
                const WeightBlock& blk = w.blocks[b];
                const auto* q = static_cast<const int8_t*>(blk.data) + size_t(j) * blk.row_stride_bytes;
                for (int64_t l = 0; l < blk.kelems; ++l)
                    row[size_t(blk.k0 + l)] = fp16_to_fp32(sc[(blk.k0 + l) / 32]) * float(q[l]);
            }
            for (int64_t i = 0; i < m; ++i) {
                const float* xi = x + i * x_stride;
                double s = 0;
                for (int64_t l = 0; l < k; ++l) s += double(xi[l]) * double(row[size_t(l)]);
                y[i * y_stride + wr] = float(s);
            }
        }
    }
}

}  // namespace

int64_t check_blocked_weights(const BlockedWeights& w, int64_t k) {
    if (w.k != k) fail("matmul_blocked: the blocked matrix has k = {}, the call k = {}", w.k, k);
    if (w.n_blocks < 1 || w.blocks == nullptr) fail("matmul_blocked: the blocked matrix has no blocks");
    const bool split = w.scales != nullptr;
    if (split && w.wtype != DType::Q8_0)
        fail("matmul_blocked: block scales are given with {} weights (allowed: q8_0 split into int8 quants and "
             "scales)", dtype_name(w.wtype));
    if (split && w.scale_stride < k / 32)
        fail("matmul_blocked: scale_stride = {} is smaller than the {} scales of a row", w.scale_stride, k / 32);
    const int be = dtype_info(w.wtype).block_elems;
    // bytes of a row segment of kel elements: int8 quants when split, else the dtype's row
    auto stored = [&](int64_t kel) { return split ? size_t(kel) : row_bytes(w.wtype, kel); };
    int64_t ranges = 0, row = 0, col = 0, rows = 0;
    for (int64_t b = 0; b < w.n_blocks; ++b) {
        const WeightBlock& blk = w.blocks[b];
        if (col == 0) {  // a new row range starts
            rows = blk.rows;
            ++ranges;
        }
        if (blk.row0 != row || blk.rows != rows || blk.rows < 1 || blk.k0 != col || blk.kelems < 1 ||
            blk.k0 % be != 0 || blk.kelems % be != 0 || blk.k0 + blk.kelems > k || blk.data == nullptr ||
            blk.row_stride_bytes < stored(blk.kelems))
            fail("matmul_blocked: block {} (rows [{}, {}) x k [{}, {})) does not continue the tiling at row {}, k {} "
                 "of [{}][{}] {} (k-blocks in order, whole {}-element blocks, rows fitting their stride)",
                 b, blk.row0, blk.row0 + blk.rows, blk.k0, blk.k0 + blk.kelems, row, col, w.n, k, dtype_name(w.wtype),
                 be);
        col += blk.kelems;
        if (col == k) {
            col = 0;
            row += rows;
        }
    }
    if (row != w.n || col != 0)
        fail("matmul_blocked: the blocks cover {} of the {} rows of the matrix", row, w.n);
    return ranges;
}

void matmul_blocked_with(const KernelTable& t, const float* x, int64_t m, int64_t k, int64_t x_stride,
                         const BlockedWeights& w, float* y, int64_t y_stride, ThreadPool& pool) {
    const int64_t n_ranges = check_blocked_weights(w, k);
    check_matmul_args(m, k, x_stride, w.wtype, row_bytes(w.wtype, k), w.n, y_stride);
    if (m == 0) return;
    // First block of each row range (the blocks of a range are consecutive).
    thread_local std::vector<int64_t> first_of_thread;
    std::vector<int64_t>& first = first_of_thread;  // the caller's; the workers read it through this reference
    first.clear();
    for (int64_t b = 0; b < w.n_blocks; ++b)
        if (w.blocks[b].k0 == 0) first.push_back(b);
    first.push_back(w.n_blocks);
    const bool split = w.scales != nullptr;
    if (split && t.matmul_blocked_carry && m > kCarryMaxRows)
        return matmul_split_joined(t, x, m, k, x_stride, w, y, y_stride, pool);
    if (t.matmul_blocked_carry && m <= kCarryMaxRows && carry_fits(w, first))
        return t.matmul_blocked_carry(x, m, x_stride, w, first.data(), n_ranges, y, y_stride, pool);
    if (split) return matmul_split_ref(x, m, k, x_stride, w, first, y, y_stride);
    if (t.matmul_blocked_f32 && w.wtype == DType::F32) {
        bool whole_vectors = true;  // every k-block but a range's last is whole 16-element vectors
        for (int64_t b = 0; b + 1 < w.n_blocks; ++b)
            whole_vectors = whole_vectors && (w.blocks[b + 1].k0 == 0 || w.blocks[b].kelems % 16 == 0);
        if (whole_vectors)
            return t.matmul_blocked_f32(x, m, x_stride, w, first.data(), n_ranges, y, y_stride, pool);
    }
    // As matmul: at least ~64K multiply-adds per chunk so tiny matrices do not wake threads.
    const int64_t macs_per_range = std::max<int64_t>(1, m * k * w.blocks[0].rows);
    const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / macs_per_range);
    pool.parallel_for(n_ranges, grain, [&](int64_t r0, int64_t r1) {
        thread_local ThreadPool serial(1);
        thread_local std::vector<float> part;
        static std::atomic<uint64_t> tokens{0};
        struct Reset {  // the token must not outlive the chunk, even when a kernel throws
            ~Reset() { act_reuse_token() = 0; }
        } reset;
        act_reuse_token() = ++tokens;  // x is fixed for this chunk: quantise each slice once
        // Row range by row range, each k-block in order: the base is read front to back, as the
        // row-major kernel reads its matrix (its prefetch 16 KiB ahead lands on the next block).
        for (int64_t r = r0; r < r1; ++r)
            for (int64_t b = first[size_t(r)]; b < first[size_t(r) + 1]; ++b) {
                const WeightBlock& blk = w.blocks[b];
                float* yb = y + blk.row0;
                act_reuse_slot() = int(b - first[size_t(r)]);
                if (blk.k0 == 0) {  // the first k-block writes y, the others add their partial sums
                    t.matmul(x, m, blk.kelems, x_stride, blk.data, w.wtype, blk.row_stride_bytes, blk.rows, yb,
                             y_stride, serial);
                    continue;
                }
                part.resize(size_t(m * blk.rows));
                t.matmul(x + blk.k0, m, blk.kelems, x_stride, blk.data, w.wtype, blk.row_stride_bytes, blk.rows,
                         part.data(), blk.rows, serial);
                for (int64_t i = 0; i < m; ++i)
                    for (int64_t q = 0; q < blk.rows; ++q) yb[i * y_stride + q] += part[size_t(i * blk.rows + q)];
            }
    });
}

uint64_t& act_reuse_token() {
    thread_local uint64_t token = 0;
    return token;
}

int& act_reuse_slot() {
    thread_local int slot = 0;
    return slot;
}

void matmul_blocked(const float* x, int64_t m, int64_t k, int64_t x_stride, const BlockedWeights& w, float* y,
                    int64_t y_stride, ThreadPool& pool) {
    matmul_blocked_with(active_table(), x, m, k, x_stride, w, y, y_stride, pool);
}

}  // namespace duet::kernels
