#include "sim/memory_accounting.h"

#include <algorithm>

#include "core/error.h"
#include "graph/memory_plan.h"

namespace duet::sim {

MemoryBreakdown account_memory(const ModelShape& s, const Plan& plan, int64_t context, int32_t batch,
                               const Placer& placer, const RunOptions& opts, const SimHardware& hw) {
    MemoryBreakdown mb;
    const std::shared_ptr<const graph::Graph> g =
        plan.graph ? plan.graph : std::make_shared<const graph::Graph>(graph::build_graph(s));
    const LayoutModel& lay = *hw.layout;
    uint64_t layer0_nz = 0, largest_nz = 0;
    for (const graph::MatrixUse& m : graph::matrices(*g)) {
        const uint64_t nz = lay.nz_bytes(m.n, m.k, s.weight_dtype);
        largest_nz = std::max(largest_nz, nz);
        if (placer.pim_layout(m.layer)) {
            PimMatrixInfo p = lay.pim(m.n, m.k, s.weight_dtype);
            mb.weights_bytes += p.base_bytes;
            mb.weights_pim_base_bytes += p.base_bytes;
            mb.block_index_bytes += p.index_bytes;
            if (m.layer == 0) layer0_nz += nz;
        } else {
            mb.weights_bytes += nz;
        }
    }
    for (const graph::Node& n : g->nodes) {
        // the table is the lm-head's matrix when tied (counted above)
        if (n.kind == OpKind::EMBED && !s.tied_output) mb.weights_bytes += uint64_t(s.n_vocab) * row_bytes(n.dtype, n.n);
        if (n.kind == OpKind::RMSNORM) mb.weights_bytes += 4 * uint64_t(n.n);  // RMSNorm weights, f32
        if (n.kind == OpKind::MATMUL && n.norm != graph::WeightRole::NONE)
            mb.weights_bytes += 4 * uint64_t(n.k);  // an RMSNorm fused into the matmul: its weights
    }

    const int64_t blocks_per_seq = (context + hw.kv_block_tokens - 1) / hw.kv_block_tokens;
    mb.kv_cache_bytes = uint64_t(batch) * uint64_t(blocks_per_seq) * uint64_t(hw.kv_block_tokens) * 2 *
                        uint64_t(s.n_layer) * uint64_t(row_bytes(s.kv_dtype, s.n_head_kv * s.head_dim));  // int8: 34 B / 32

    const graph::MemoryPlan mp = graph::plan_memory(*g);
    int64_t prev_n_tok = -1;
    for (const ForwardSpan& f : plan.forwards) {
        const int64_t n_tok = f.n_new * batch;
        if (n_tok == prev_n_tok) continue;  // every decode step has the same sizes
        prev_n_tok = n_tok;
        mb.activations_bytes = std::max(mb.activations_bytes, graph::peak_live_bytes(*g, mp, n_tok, batch, 2, opts.multi_stream_memory_reuse == 0));
        for (const graph::Node& n : g->nodes) {
            if (n.kind != OpKind::MATMUL) continue;
            const int64_t rows = g->tensors[size_t(n.out[0])].rows == graph::Rows::TOKENS ? n_tok : batch;
            mb.workspace_bytes = std::max(mb.workspace_bytes, uint64_t(rows * n.n) * 4);
        }
    }

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
