#include "sim/memory_accounting.h"

#include <algorithm>

#include "core/error.h"
#include "graph/memory_plan.h"
#include "graph/tensor_catalogue.h"

namespace duet::sim {

MemoryBreakdown account_memory(const ModelShape& s, const Plan& plan, int64_t context, int32_t batch,
                               const Placer& placer, const RunOptions& opts, const SimHardware& hw) {
    MemoryBreakdown mb;
    const std::shared_ptr<const graph::Graph> g =
        plan.graph ? plan.graph : std::make_shared<const graph::Graph>(graph::build_graph(s));
    const LayoutModel& lay = *hw.layout;
    uint64_t layer0_nz = 0, largest_nz = 0;
    for (const graph::MatrixUse& m : graph::matrices(*g)) {
        // `count` matrices of n x k (experts, heads), each in its own layout
        const uint64_t cnt = uint64_t(m.count), nz = lay.nz_bytes(m.n, m.k, s.weight_dtype);
        largest_nz = std::max(largest_nz, nz);
        uint64_t bytes = 0;
        if (placer.pim_layout(m.layer)) {
            PimMatrixInfo p = lay.pim(m.n, m.k, s.weight_dtype);
            bytes = cnt * p.base_bytes;
            mb.weights_pim_base_bytes += cnt * p.base_bytes;
            mb.block_index_bytes += cnt * p.index_bytes;
            if (m.layer == 0) layer0_nz += cnt * nz;
        } else {
            bytes = cnt * nz;
        }
        mb.weights_bytes += bytes;
        const bool expert = graph::weight_spec(m.role).expert == graph::Expert::ROUTED;
        if (expert) mb.weights_experts_bytes += bytes;
    }
    for (const graph::Node& n : g->nodes) {
        // the table is the lm-head's matrix when tied (counted above)
        if (n.kind == OpKind::EMBED && !s.tied_output) mb.weights_bytes += uint64_t(s.n_vocab) * row_bytes(n.dtype, n.n);
        if (n.kind == OpKind::RMSNORM) mb.weights_bytes += 4 * uint64_t(n.k > 0 ? n.k : n.n);  // RMSNorm weights, f32
        if (n.kind == OpKind::MATMUL && n.norm != graph::WeightRole::NONE)
            mb.weights_bytes += 4 * uint64_t(n.k);  // an RMSNorm fused into the matmul: its weights
    }

    const int64_t blocks_per_seq = (context + hw.kv_block_tokens - 1) / hw.kv_block_tokens;
    // K and V rows of the graph's KV heads (a tensor-parallel rank's own) of head_dim each, or one
    // latent row, whole on every rank (int8: 34 B / 32 values)
    const uint64_t token_layer_bytes = s.is_mla() ? row_bytes(s.kv_dtype, s.kv_values_per_token_layer())
                                                  : 2 * row_bytes(s.kv_dtype, g->shape.n_head_kv * s.head_dim);
    mb.kv_cache_latent = s.is_mla();
    // the graph's layers: a pipeline stage's own (graph/parallel.h PpStage), else every layer
    const int64_t layers = g->pp.pp > 1 ? g->pp.layers.count : s.n_layer;
    mb.kv_cache_bytes = uint64_t(batch) * uint64_t(blocks_per_seq) * uint64_t(hw.kv_block_tokens) *
                        uint64_t(layers) * token_layer_bytes;

    const graph::MemoryPlan mp = graph::plan_memory(*g);
    int64_t prev_n_tok = -1;
    for (const ForwardSpan& f : plan.forwards) {
        const int64_t n_tok = f.n_new * batch;
        if (n_tok == prev_n_tok) continue;  // every decode step has the same sizes
        prev_n_tok = n_tok;
        mb.activations_bytes = std::max(mb.activations_bytes, graph::peak_live_bytes(*g, mp, n_tok, batch, 2, opts.multi_stream_memory_reuse == 0));
        for (const graph::Node& n : g->nodes) {
            if (!is_matmul_kind(n.kind)) continue;
            const int64_t rows = g->tensors[size_t(n.out[0])].rows == graph::Rows::TOKENS ? n_tok : batch;
            const int64_t width = g->tensors[size_t(n.out[0])].width;  // routed / per-head outputs: every part
            mb.workspace_bytes = std::max(mb.workspace_bytes, uint64_t(rows * width) * 4);
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
