// matmul_grouped: the matmuls of many small groups (a MoE layer's experts, a few routed rows
// each) as one parallel section. Called once per group, matmul() paid a parallel section (or two:
// the activation quantisation and the GEMM) for ~8 rows of work, and split a group's columns
// over the threads in halves, so a thread woken late held the other at every group's end. Here
// the threads take (group, column block) items from one counter; each item runs the table's
// matmul on a one-thread pool. Per thread the activation-reuse token (kernel_table.h) stays set
// for the whole section, so a thread quantises a group's x once, however many of its column
// blocks it takes (x stays fixed during the call: the key is its pointer and shape). A table may
// run groups of a few rows as 4-row calls (KernelTable::grouped_gemv_rows).
#include <algorithm>
#include <atomic>
#include <vector>

#include "core/error.h"
#include "kernels/kernel_table.h"
#include "kernels/kernels.h"

namespace duet::kernels {

namespace {

constexpr int64_t kGemvRows = 4;  // the optimised tables' decode GEMV rows (kMR)

// Column blocks: 256 keeps a block's weights (256 rows) long enough for the GEMM's panels and
// prefetch; halved (down to 32) while there are fewer than 8 items a thread.
int64_t pick_block(int64_t n_live, int64_t n, int threads) {
    int64_t nb = 256;
    while (nb > 32 && n_live * ((n + nb - 1) / nb) < 8 * int64_t(threads)) nb /= 2;
    return std::min(nb, n);
}

}  // namespace

void matmul_grouped_with(const KernelTable& t, const MatmulGroup* groups, int64_t n_groups, int64_t k, DType wtype,
                         int64_t n, int64_t n_block, ThreadPool& pool) {
    if (n_groups < 0) fail("matmul_grouped: n_groups = {} (allowed: >= 0)", n_groups);
    int64_t n_live = 0;
    for (int64_t g = 0; g < n_groups; ++g) {
        const MatmulGroup& G = groups[g];
        check_matmul_args(G.m, k, G.x_stride, wtype, G.w_row_stride_bytes, n, G.y_stride);
        n_live += G.m > 0 ? 1 : 0;
    }
    if (n_live == 0 || n == 0) return;
    // the groups with rows, in order (items are (live group, block), group-major)
    thread_local std::vector<int64_t> live_of_thread;
    std::vector<int64_t>& live = live_of_thread;  // the caller's; the workers read it through this reference
    live.clear();
    for (int64_t g = 0; g < n_groups; ++g)
        if (groups[g].m > 0) live.push_back(g);
    const int64_t nb = n_block > 0 ? std::min(n_block, n) : pick_block(n_live, n, pool.size());
    const int64_t blocks = (n + nb - 1) / nb, items = n_live * blocks;
    const int64_t gemv_rows = t.grouped_gemv_rows ? t.grouped_gemv_rows(wtype) : 0;
    static std::atomic<uint64_t> tokens{0};
    std::atomic<int64_t> next{0};
    pool.run([&](int, int) {
        thread_local ThreadPool serial(1);
        struct Reset {  // the token must not outlive the section, even when a kernel throws
            ~Reset() { act_reuse_token() = 0; }
        } reset;
        act_reuse_token() = ++tokens;
        for (int64_t it; (it = next.fetch_add(1, std::memory_order_relaxed)) < items;) {
            const MatmulGroup& G = groups[live[size_t(it / blocks)]];
            const int64_t j0 = it % blocks * nb, cols = std::min(nb, n - j0);
            const uint8_t* w = static_cast<const uint8_t*>(G.w) + size_t(j0) * G.w_row_stride_bytes;
            const int64_t step = G.m > kGemvRows && G.m <= gemv_rows ? kGemvRows : G.m;
            for (int64_t i = 0; i < G.m; i += step) {
                act_reuse_slot() = int(i / step);  // each 4-row slice quantised once per thread
                t.matmul(G.x + i * G.x_stride, std::min(step, G.m - i), k, G.x_stride, w, wtype, G.w_row_stride_bytes,
                         cols, G.y + i * G.y_stride + j0, G.y_stride, serial);
            }
        }
    });
}

}  // namespace duet::kernels
