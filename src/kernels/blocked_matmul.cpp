// matmul_blocked: the row-major micro-kernels run on each block of a blocked (PIM layout)
// weight matrix in place. Threads take whole row ranges (every weight byte is read by one
// thread, as in matmul) and run the kernel serially on each block of a range in turn; the
// activations' slice of each k-block is quantised once per chunk (act_reuse_token).
#include <algorithm>
#include <atomic>
#include <vector>

#include "core/error.h"
#include "kernels/kernel_table.h"
#include "kernels/kernels.h"

namespace duet::kernels {

int64_t check_blocked_weights(const BlockedWeights& w, int64_t k) {
    if (w.k != k) fail("matmul_blocked: the blocked matrix has k = {}, the call k = {}", w.k, k);
    if (w.n_blocks < 1 || w.blocks == nullptr) fail("matmul_blocked: the blocked matrix has no blocks");
    const int be = dtype_info(w.wtype).block_elems;
    int64_t ranges = 0, row = 0, col = 0, rows = 0;
    for (int64_t b = 0; b < w.n_blocks; ++b) {
        const WeightBlock& blk = w.blocks[b];
        if (col == 0) {  // a new row range starts
            rows = blk.rows;
            ++ranges;
        }
        if (blk.row0 != row || blk.rows != rows || blk.rows < 1 || blk.k0 != col || blk.kelems < 1 ||
            blk.k0 % be != 0 || blk.kelems % be != 0 || blk.k0 + blk.kelems > k || blk.data == nullptr ||
            blk.row_stride_bytes < row_bytes(w.wtype, blk.kelems))
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
