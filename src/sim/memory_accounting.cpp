#include "sim/memory_accounting.h"

#include <algorithm>

#include "core/error.h"

namespace duet::sim {
namespace {

struct Matrix {
    int layer;
    int64_t n, k;
};

std::vector<Matrix> matrices(const ModelShape& s) {
    std::vector<Matrix> m;
    const int64_t q = s.n_head * s.head_dim, kv = s.n_head_kv * s.head_dim;
    for (int l = 0; l < int(s.n_layer); ++l) {
        for (auto [n, k] : {std::pair{q, s.n_embd}, {kv, s.n_embd}, {kv, s.n_embd}, {s.n_embd, q}, {s.n_ff, s.n_embd},
                            {s.n_ff, s.n_embd}, {s.n_embd, s.n_ff}})
            m.push_back({l, n, k});
    }
    m.push_back({-1, s.n_vocab, s.n_embd});  // lm-head (the embedding table too when tied)
    return m;
}

}  // namespace

MemoryBreakdown account_memory(const ModelShape& s, const Plan& plan, int64_t context, int32_t batch,
                               const Placer& placer, const RunOptions& opts, const SimHardware& hw) {
    MemoryBreakdown mb;
    const LayoutModel& lay = *hw.layout;
    uint64_t layer0_nz = 0, largest_nz = 0;
    for (const Matrix& m : matrices(s)) {
        const uint64_t nz = lay.nz_bytes(m.n, m.k, s.weight_dtype);
        largest_nz = std::max(largest_nz, nz);
        if (placer.pim_layout(m.layer)) {
            PimMatrixInfo p = lay.pim(m.n, m.k, s.weight_dtype);
            mb.weights_bytes += p.base_bytes;
            mb.block_index_bytes += p.index_bytes;
            if (m.layer == 0) layer0_nz += nz;
        } else {
            mb.weights_bytes += nz;
        }
    }
    if (!s.tied_output) mb.weights_bytes += uint64_t(s.n_vocab) * row_bytes(s.weight_dtype, s.n_embd);
    mb.weights_bytes += 4 * uint64_t(s.n_embd) * uint64_t(2 * s.n_layer + 1);  // RMSNorm weights, f32

    const int64_t blocks_per_seq = (context + hw.kv_block_tokens - 1) / hw.kv_block_tokens;
    mb.kv_cache_bytes = uint64_t(batch) * uint64_t(blocks_per_seq) * uint64_t(hw.kv_block_tokens) * 2 *
                        uint64_t(s.n_layer) * uint64_t(s.n_head_kv * s.head_dim) *
                        uint64_t(dtype_info(s.kv_dtype).block_bytes);

    uint64_t peak_op = 0, largest_out = 0;
    for (const OpRecord& r : plan.ops) {
        if (r.kind == OpKind::EMBED) continue;
        const uint64_t io = (r.in_bytes + (r.kind == OpKind::KV_WRITE ? 0 : r.out_bytes)) / 2;  // f32 -> f16
        peak_op = std::max(peak_op, io);
        if (r.kind == OpKind::MATMUL) largest_out = std::max(largest_out, uint64_t(r.m * r.n) * 4);
    }
    const uint64_t residual = plan.forwards.empty() ? 0 : uint64_t(plan.forwards[0].n_new) * batch * s.n_embd * 2;
    mb.activations_bytes = peak_op + residual;
    mb.workspace_bytes = largest_out;

    if (opts.placement.policy != Policy::NPU_ONLY) {
        // with zero_copy_switch off prefill reads NZ weights directly: nothing to pre-convert
        uint64_t preconv = opts.preconvert_first_token && opts.zero_copy_switch ? layer0_nz : 0;
        uint64_t buffers = uint64_t(opts.prefetch_depth + 1) * uint64_t(opts.block_size_kb) * 1024;
        uint64_t staging = opts.zero_copy_switch ? 0 : largest_nz;
        mb.conversion_bytes = preconv + buffers + staging;
        const uint64_t limit = uint64_t(opts.cache_limit_mb) << 20;
        if (mb.conversion_bytes > limit)
            fail("config.toml: memory.cache_limit_mb = {} is too small for the conversion cache of {} MiB (layer 0 "
                 "pre-converted to NZ {} MiB [scheduling.preconvert_first_token], {} prefetch buffers of {} KiB "
                 "[reorder.prefetch_depth + 1], switch staging {} MiB [scheduling.zero_copy_switch = false]); raise "
                 "cache_limit_mb or reduce what fills the cache",
                 opts.cache_limit_mb, (mb.conversion_bytes + (1 << 20) - 1) >> 20, (preconv + (1 << 20) - 1) >> 20,
                 opts.prefetch_depth + 1, opts.block_size_kb, (staging + (1 << 20) - 1) >> 20);
    }
    return mb;
}

}  // namespace duet::sim
